//! A task's cache policy, the store an entrypoint and its tasks reach, and a
//! sync task's timeout, checked against Python LangGraph 1.2.22 where it has
//! the feature (recorded in each test's comment).

use futures::StreamExt;
use stategraph::cache::{CachePolicy, InMemoryCache};
use stategraph::func::{entrypoint, task, Entrypoint};
use stategraph::prelude::*;
use stategraph::store::{InMemoryStore, Namespace, SearchOp, Store};
use std::sync::Mutex;

/// The graph event an entrypoint streamed in a mode other than `values`.
fn graph_event<F: stategraph::func::EntrypointFn>(
    event: stategraph::func::EntryEvent<F>,
) -> StreamEvent<stategraph::func::StateOf<F>> {
    match event {
        stategraph::func::EntryEvent::Graph(event) => event,
        other => panic!("a values event: {:?}", other.mode()),
    }
}

static SLOW_CALLS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

#[task(cache_policy = CachePolicy::new())]
fn slow(n: u32) -> u32 {
    SLOW_CALLS.lock().unwrap().push(n);
    n * 10
}

#[entrypoint]
async fn cached_sum(ns: Vec<u32>) -> Result<u32, NodeError> {
    let mut sum = 0;
    for n in ns {
        sum += slow(n).await?;
    }
    Ok(sum)
}

/// Python (`@task(cache_policy=CachePolicy())`, `@entrypoint(cache=InMemoryCache())`):
/// ```text
/// wf.invoke([1, 2, 1]) -> 40, calls [1, 2]
/// wf.invoke([2, 3])    -> 50, calls [1, 2, 3]
/// stream([3, 4], "updates"): {'slow': 30, '__metadata__': {'cached': True}}, {'slow': 40}, {'wf': 70}
/// stream([3], "tasks"): start wf, start slow, result wf (a cached call reports no result)
/// ```
#[tokio::test]
async fn a_task_with_a_cache_policy_returns_its_cached_result_for_arguments_seen_before() {
    let app = Entrypoint::new(cached_sum)
        .compile_with(CompileOptions::new().cache(InMemoryCache::new()))
        .unwrap();
    let config = RunConfig::new();
    let out = app.invoke(vec![1, 2, 1], &config).await.unwrap();
    assert_eq!(out.value, Some(40));
    assert_eq!(*SLOW_CALLS.lock().unwrap(), [1, 2]);
    let out = app.invoke(vec![2, 3], &config).await.unwrap();
    assert_eq!(out.value, Some(50));
    assert_eq!(*SLOW_CALLS.lock().unwrap(), [1, 2, 3]);

    let updates: Vec<String> = app
        .stream(vec![3, 4], &config, StreamMode::Updates)
        .map(|e| match graph_event(e.unwrap()) {
            StreamEvent::Call {
                task,
                value,
                cached: true,
            } => format!("{task} {value} cached"),
            StreamEvent::Call { task, value, .. } => format!("{task} {value}"),
            StreamEvent::Updates { node, updates } => format!("{node} {:?}", updates[0].output),
            other => format!("{:?}", other.mode()),
        })
        .collect()
        .await;
    assert_eq!(
        updates,
        ["slow 30 cached", "slow 40", "cached_sum Some(Some(70))"]
    );

    let tasks: Vec<String> = app
        .stream(vec![3], &config, StreamMode::Tasks)
        .map(|e| match graph_event(e.unwrap()) {
            StreamEvent::TaskStart { name, .. } => format!("start {name}"),
            StreamEvent::TaskResult { name, .. } => format!("result {name}"),
            StreamEvent::CallResult { task, .. } => format!("call result {task}"),
            other => format!("{:?}", other.mode()),
        })
        .collect()
        .await;
    assert_eq!(
        tasks,
        ["start cached_sum", "start slow", "result cached_sum"]
    );
    assert_eq!(*SLOW_CALLS.lock().unwrap(), [1, 2, 3, 4]);

    // Without a cache the policy does nothing: every call runs.
    let uncached = Entrypoint::new(cached_sum).compile().unwrap();
    uncached.invoke(vec![1, 1], &config).await.unwrap();
    assert_eq!(*SLOW_CALLS.lock().unwrap(), [1, 2, 3, 4, 1, 1]);
}

#[task]
async fn remember(fact: String) -> Result<String, NodeError> {
    let store = stategraph::func::store().ok_or_else(|| NodeError::msg("no store"))?;
    store
        .put(
            &Namespace::new(["facts"])?,
            &fact,
            serde_json::json!({ "fact": fact }),
        )
        .await?;
    Ok(fact)
}

#[entrypoint]
async fn memorise(fact: String, store: &dyn Store) -> Result<Vec<String>, NodeError> {
    remember(fact).await?;
    let found = store
        .search(SearchOp::new(Namespace::new(["facts"])?))
        .await?;
    // Sorted: without a query, LangGraph's InMemoryStore lists items in
    // insertion order, this one (as the SQL stores) most recent first.
    let mut keys: Vec<String> = found.into_iter().map(|found| found.item.key).collect();
    keys.sort();
    Ok(keys)
}

#[entrypoint]
async fn has_store(_x: u32, store: Option<&dyn Store>) -> bool {
    store.is_some()
}

/// Python (`@entrypoint(store=InMemoryStore())` taking `*, store`, its task
/// writing through `get_store()`; then an entrypoint compiled without one):
/// ```text
/// mem.invoke("a") -> ['a']; mem.invoke("b") -> ['a', 'b']
/// nostore.invoke(1) -> repr(store) == 'None'
/// ```
#[tokio::test]
async fn an_entrypoint_and_its_tasks_reach_the_store_it_was_compiled_with() {
    let store = InMemoryStore::new();
    let app = Entrypoint::new(memorise)
        .compile_with(CompileOptions::new().store(store.clone()))
        .unwrap();
    let config = RunConfig::new();
    let out = app.invoke("a".to_owned(), &config).await.unwrap();
    assert_eq!(out.value, Some(vec!["a".to_owned()]));
    let out = app.invoke("b".to_owned(), &config).await.unwrap();
    assert_eq!(out.value, Some(vec!["a".to_owned(), "b".to_owned()]));
    let item = store
        .get(&Namespace::new(["facts"]).unwrap(), "b")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(item.value["fact"], "b");

    let optional = Entrypoint::new(has_store).compile().unwrap();
    assert_eq!(
        optional.invoke(1, &config).await.unwrap().value,
        Some(false)
    );
    let optional = Entrypoint::new(has_store)
        .compile_with(CompileOptions::new().store(InMemoryStore::new()))
        .unwrap();
    assert_eq!(optional.invoke(1, &config).await.unwrap().value, Some(true));

    // A required store that is missing fails the run with `NoStore`.
    let missing = Entrypoint::new(memorise).compile().unwrap();
    let err = missing.invoke("c".to_owned(), &config).await.unwrap_err();
    let text = err.to_string() + &format!("{:?}", std::error::Error::source(&err));
    assert!(text.contains("NoStore") || text.contains("store"), "{text}");
}

#[task(timeout = std::time::Duration::from_millis(20))]
fn blocks_past_its_limit() -> u32 {
    std::thread::sleep(std::time::Duration::from_secs(2));
    1
}

#[entrypoint]
async fn waits_on_a_blocking_task(_x: u32) -> Result<u32, NodeError> {
    blocks_past_its_limit().await
}

/// LangGraph's tasks have no timeout. A sync task with one runs on tokio's
/// blocking pool, as a sync node with a timeout does: past its limit the call
/// fails with `NodeTimeout { abandoned: true }` (the thread finishes in the
/// background) instead of blocking the entrypoint until it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_task_past_its_timeout_is_abandoned_not_awaited() {
    let app = Entrypoint::new(waits_on_a_blocking_task).compile().unwrap();
    let err = app.invoke(0, &RunConfig::new()).await.unwrap_err();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    let mut timeout = None;
    while let Some(e) = source {
        if let Some(t) = e.downcast_ref::<stategraph::error::NodeTimeout>() {
            timeout = Some(t);
        }
        source = e.source();
    }
    let timeout = timeout.unwrap_or_else(|| panic!("not a timeout: {err:?}"));
    assert!(timeout.abandoned, "{timeout:?}");
    assert_eq!(timeout.node, "blocks_past_its_limit");
}
