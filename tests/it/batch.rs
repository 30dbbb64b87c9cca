//! `batch` / `batch_stream`: many runs, each with its own config and thread, at
//! most `max_concurrency` at a time (LangGraph's `batch(max_concurrency=..)`
//! and `batch_as_completed`).
//!
//! The graph is LangGraph's `work` node (`n * 10`, failing on `n == 3`) run on
//! threads `t0`..`t4`; each test's comment records what LangGraph 1.2.22
//! printed for it.

use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::{async_node_fn, BatchOptions, StreamExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Barrier;

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct S {
    n: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("three")]
struct Three;

fn tenfold(s: &S) -> Result<SUpdate, Three> {
    if s.n == 3 {
        return Err(Three);
    }
    Ok(S::update().n(s.n * 10))
}

fn app() -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(node_fn("work", tenfold))
        .add_edge(START, "work")
        .compile_with(InMemorySaver::new())
        .unwrap()
}

fn runs(ns: &[u32]) -> Vec<(SUpdate, RunConfig)> {
    ns.iter()
        .enumerate()
        .map(|(i, &n)| (S::update().n(n), RunConfig::thread(format!("t{i}"))))
        .collect()
}

/// Counts the nodes running at once, keeping the highest count seen.
#[derive(Default)]
struct HighWater {
    running: AtomicUsize,
    high: AtomicUsize,
}

impl HighWater {
    fn enter(&self) {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.high.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A graph whose one node enters the high-water mark, waits at `barrier`
/// until `barrier`'s size of runs are in it together, then leaves: with a
/// limit equal to the barrier's size, the runs go through in groups, and a
/// limit below it would never fill the barrier (the test's timeout catches
/// that as a failure rather than hanging).
fn gated(marks: Arc<HighWater>, barrier: Arc<Barrier>) -> CompiledGraph<S> {
    StateGraph::<S>::new()
        .add_node(async_node_fn("gate", move |s: Arc<S>, _ctx: Context| {
            let (marks, barrier) = (Arc::clone(&marks), Arc::clone(&barrier));
            async move {
                marks.enter();
                barrier.wait().await;
                // Still running while the batch could start another run: one
                // started beyond the limit would be counted.
                tokio::task::yield_now().await;
                marks.leave();
                S::update().n(s.n * 10)
            }
        }))
        .add_edge(START, "gate")
        .compile()
        .unwrap()
}

/// A deadlock guard, not a timing assertion: the runs only wait for each other.
async fn within<T>(run: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the batch deadlocked: fewer runs went at once than the barrier needs")
}

/// ```python
/// cfgs = [{"configurable": {"thread_id": f"t{i}"}, "max_concurrency": 2} for i in range(5)]
/// app.batch([{"n": i} for i in [0, 1, 2, 4, 5]], cfgs)
/// # [{'n': 0}, {'n': 10}, {'n': 20}, {'n': 40}, {'n': 50}]  high water: 2
/// ```
#[tokio::test]
async fn results_come_in_input_order() {
    let results = app()
        .batch(
            runs(&[0, 1, 2, 4, 5]),
            BatchOptions::new().max_concurrency(2),
        )
        .await;
    let totals: Vec<u32> = results.into_iter().map(|r| r.unwrap().n).collect();
    assert_eq!(totals, [0, 10, 20, 40, 50]);
}

/// ```python
/// app.batch([{"n": i} for i in range(5)], cfgs)
/// # ValueError('three')
/// app.batch([{"n": i} for i in range(5)], cfgs, return_exceptions=True)
/// # [{'n': 0}, {'n': 10}, {'n': 20}, ValueError('three'), {'n': 40}]
/// app.get_state({"configurable": {"thread_id": "t1"}}).values
/// # {'n': 10}
/// ```
///
/// Each result stands alone (`return_exceptions=True`); collecting into one
/// `Result` gives LangGraph's default, the first error.
#[tokio::test]
async fn a_failed_run_is_its_own_result_and_the_others_are_kept() {
    let app = app();
    let results = app
        .batch(
            runs(&[0, 1, 2, 3, 4]),
            BatchOptions::new().max_concurrency(2),
        )
        .await;
    assert_eq!(results.len(), 5);
    for (i, want) in [(0, 0), (1, 10), (2, 20), (4, 40)] {
        assert_eq!(results[i].as_ref().unwrap().n, want);
    }
    assert!(
        matches!(&results[3], Err(GraphError::NodeFailed { node, source, .. }) if node == "work" && source.is::<Three>()),
        "{:?}",
        results[3]
    );
    let first_error = results.into_iter().collect::<Result<Vec<_>, _>>();
    assert!(matches!(first_error, Err(GraphError::NodeFailed { .. })));

    let t1 = app.get_state(&RunConfig::thread("t1")).await.unwrap();
    assert_eq!(t1.values.n, 10);
}

/// ```python
/// sorted(app.batch_as_completed([{"n": i} for i in range(5)], cfgs, return_exceptions=True))
/// # [(0, {'n': 0}), (1, {'n': 10}), (2, {'n': 20}), (3, ValueError('three')), (4, {'n': 40})]
/// ```
#[tokio::test]
async fn batch_stream_yields_every_index_once() {
    let mut done = app().batch_stream(
        runs(&[0, 1, 2, 3, 4]),
        BatchOptions::new().max_concurrency(2),
    );
    let mut seen = Vec::new();
    while let Some((i, result)) = done.next().await {
        seen.push((i, result.map(|out| out.n).map_err(|e| e.to_string())));
    }
    seen.sort_by_key(|(i, _)| *i);
    let indices: Vec<usize> = seen.iter().map(|(i, _)| *i).collect();
    assert_eq!(indices, [0, 1, 2, 3, 4]);
    assert_eq!(seen[1].1, Ok(10));
    assert!(seen[3].1.is_err());
}

/// ```python
/// app.batch([{"n": 7}, {"n": 8}], cfgs[:2])  # [{'n': 70}, {'n': 80}]
/// ```
///
/// Each run continues its own thread: a second batch on `t0`, `t1` adds one
/// checkpoint chain to each, and no thread sees another's state.
#[tokio::test]
async fn each_run_keeps_to_its_own_thread() {
    let app = app();
    let first = app.batch(runs(&[1, 2]), BatchOptions::new()).await;
    assert!(first.iter().all(Result::is_ok));
    let again = app.batch(runs(&[7, 8]), BatchOptions::new()).await;
    let totals: Vec<u32> = again.into_iter().map(|r| r.unwrap().n).collect();
    assert_eq!(totals, [70, 80]);
    for (thread, mine, other) in [
        ("t0", [1, 10, 7, 70], [2, 20, 8, 80]),
        ("t1", [2, 20, 8, 80], [1, 10, 7, 70]),
    ] {
        let history = app
            .get_state_history(&RunConfig::thread(thread), &Default::default())
            .await
            .unwrap();
        let ns: Vec<u32> = history.iter().map(|s| s.values.n).collect();
        assert_eq!(ns[0], mine[3], "{thread}: {ns:?}");
        assert!(mine.iter().all(|n| ns.contains(n)), "{thread}: {ns:?}");
        assert!(!other.iter().any(|n| ns.contains(n)), "{thread}: {ns:?}");
    }
}

/// `max_concurrency(2)` with six runs: exactly two nodes run at once.
#[tokio::test]
async fn max_concurrency_bounds_the_runs_in_flight() {
    let marks = Arc::new(HighWater::default());
    let app = gated(Arc::clone(&marks), Arc::new(Barrier::new(2)));
    let results = within(app.batch(
        (0..6).map(|n| (S::update().n(n), RunConfig::new())),
        BatchOptions::new().max_concurrency(2),
    ))
    .await;
    let totals: Vec<u32> = results.into_iter().map(|r| r.unwrap().n).collect();
    assert_eq!(totals, [0, 10, 20, 30, 40, 50]);
    assert_eq!(marks.high.load(Ordering::SeqCst), 2);
}

/// The same bound holds for the stream.
#[tokio::test]
async fn max_concurrency_bounds_the_stream_too() {
    let marks = Arc::new(HighWater::default());
    let app = gated(Arc::clone(&marks), Arc::new(Barrier::new(3)));
    let done = app.batch_stream(
        (0..6).map(|n| (S::update().n(n), RunConfig::new())),
        BatchOptions::new().max_concurrency(3),
    );
    let items: Vec<_> = within(done.collect::<Vec<_>>()).await;
    assert_eq!(items.len(), 6);
    assert_eq!(marks.high.load(Ordering::SeqCst), 3);
}

/// Without a limit every run starts at once.
#[tokio::test]
async fn without_a_limit_every_run_starts_at_once() {
    let marks = Arc::new(HighWater::default());
    let app = gated(Arc::clone(&marks), Arc::new(Barrier::new(5)));
    let results = within(app.batch(
        (0..5).map(|n| (S::update().n(n), RunConfig::new())),
        BatchOptions::new(),
    ))
    .await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(marks.high.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn an_empty_batch_is_empty() {
    let results = app()
        .batch(Vec::<(SUpdate, RunConfig)>::new(), BatchOptions::new())
        .await;
    assert!(results.is_empty());
    assert_eq!(
        BatchOptions::new().max_concurrency(0).concurrency_limit(),
        Some(1)
    );
}
