//! The engine takes a thread's advisory lock itself (`Checkpointer::begin_run`):
//! two savers on one database — two pools, as two processes would have — never
//! run one thread at once. The second run fails at once with
//! `GraphError::ThreadBusy`; once the first has returned, the thread is free.

mod common;

use graph_postgres::PostgresSaver;
use stategraph::prelude::*;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Count {
    #[reducer(std::ops::Add::add)]
    n: u32,
}

/// A graph whose node reports that it started, then waits for a permit.
fn gated(
    saver: PostgresSaver,
    started: mpsc::UnboundedSender<()>,
    gate: Arc<Semaphore>,
) -> CompiledGraph<Count> {
    StateGraph::<Count>::new()
        .add_node(async_node_fn(
            "work",
            move |_: Arc<Count>, _ctx: Context| {
                let (started, gate) = (started.clone(), Arc::clone(&gate));
                async move {
                    started.send(()).ok();
                    gate.acquire().await.map(|permit| permit.forget()).ok();
                    Count::update().n(1)
                }
            },
        ))
        .add_edge(START, "work")
        .compile_with(saver)
        .expect("compile")
}

/// Two savers connected to the same schema (each with its own pools).
async fn two_savers(name: &str) -> (PostgresSaver, PostgresSaver) {
    let (config, _schema) = common::fresh_config(name).await;
    let first = PostgresSaver::builder_from_config(config.clone())
        .connect()
        .await
        .expect("connect");
    let second = PostgresSaver::builder_from_config(config)
        .connect()
        .await
        .expect("connect");
    (first, second)
}

fn is_busy(result: &Result<Count, GraphError>, thread: &str) -> bool {
    matches!(result, Err(GraphError::ThreadBusy { thread_id, checkpoint_ns })
        if thread_id == thread && checkpoint_ns.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_running_in_another_process_is_busy_until_that_run_ends() {
    let (saver_a, saver_b) = two_savers("guard").await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = gated(saver_a, started_tx.clone(), Arc::clone(&gate));
    let b = gated(saver_b, started_tx, Arc::clone(&gate));
    let thread = RunConfig::thread("shared");

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Count::update(), &thread).await }
    });
    started.recv().await.expect("the first run started");

    // The other "process" cannot run the thread, nor update its state...
    let second = b
        .invoke(Count::update(), &thread)
        .await
        .map(|s| s.into_state());
    assert!(is_busy(&second, "shared"), "{second:?}");
    let update = b.update_state(&thread, Count::update().n(5), None).await;
    assert!(
        matches!(update, Err(GraphError::ThreadBusy { .. })),
        "{update:?}"
    );
    // ...while other threads are free (one permit for that run, one for the
    // first run, which waits).
    gate.add_permits(2);
    let other = b
        .invoke(Count::update(), &RunConfig::thread("other"))
        .await
        .expect("another thread runs");
    assert_eq!(other.n, 1);

    // Once the first run has returned, the thread is free at once.
    let done = first.await.expect("join").expect("the first run");
    assert_eq!(done.n, 1);
    gate.add_permits(1);
    let after = b
        .invoke(Count::update(), &thread)
        .await
        .expect("the thread is free after the first run");
    assert_eq!(after.n, 2, "the second run continued the first's state");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_under_lock_thread_takes_no_second_lock_and_excludes_others() {
    let (saver_a, saver_b) = two_savers("guard_locked").await;
    let (started_tx, _started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(10));
    let a = gated(saver_a.clone(), started_tx.clone(), Arc::clone(&gate));
    let b = gated(saver_b, started_tx, gate);
    let thread = RunConfig::thread("locked");

    // A worker holding the thread's lock runs it (the run does not lock again).
    let lock = saver_a.lock_thread("locked").await.expect("lock");
    let out = a
        .invoke(Count::update(), &thread)
        .await
        .expect("run under the lock");
    assert_eq!(out.n, 1);
    // Another process cannot while the worker holds the lock.
    let other = b
        .invoke(Count::update(), &thread)
        .await
        .map(|s| s.into_state());
    assert!(is_busy(&other, "locked"), "{other:?}");
    lock.unlock().await.expect("unlock");
    let out = b
        .invoke(Count::update(), &thread)
        .await
        .expect("free again");
    assert_eq!(out.n, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_frees_its_thread() {
    let (saver_a, saver_b) = two_savers("guard_cancel").await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = gated(saver_a, started_tx.clone(), Arc::clone(&gate));
    let b = gated(saver_b, started_tx, Arc::clone(&gate));
    let thread = RunConfig::thread("cancelled");

    let run = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Count::update(), &thread).await }
    });
    started.recv().await.expect("the run started");
    run.abort();
    assert!(run.await.expect_err("aborted").is_cancelled());

    // The dropped guard closed its connection; the server ends that session
    // (and its lock) shortly after.
    gate.add_permits(100);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match b.invoke(Count::update(), &thread).await {
            Ok(out) => {
                assert_eq!(out.n, 1, "the cancelled run stored no step");
                break;
            }
            Err(GraphError::ThreadBusy { .. }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the thread was not freed: {e}"),
        }
    }
}
