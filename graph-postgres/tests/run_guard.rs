//! The engine takes a thread's advisory lock itself (`Checkpointer::begin_run`):
//! two savers on one database — two pools, as two processes would have — never
//! run one thread at once. The second run fails at once with
//! `GraphError::ThreadBusy`; once the first has returned, the thread is free.

mod common;

use futures::StreamExt;
use graph_postgres::PostgresSaver;
use stategraph::prelude::*;
use stategraph::Durability;
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

/// A graph of one node that adds 1 at once.
fn counting(saver: PostgresSaver) -> CompiledGraph<Count> {
    StateGraph::<Count>::new()
        .add_node(node_fn("work", |_: &Count| Count::update().n(1)))
        .add_edge(START, "work")
        .compile_with(saver)
        .expect("compile")
}

/// A caller that stops reading a run's stream once it has the final values
/// (the stream dropped, the run cancelled) while the run's last checkpoint is
/// being stored: the put that had started completes, as LangGraph's saves
/// do when its loop exits, and the thread reads the finished step.
async fn the_last_checkpoint_outlives_a_dropped_stream(durability: Durability, name: &str) {
    let (saver, _) = two_savers(name).await;
    let graph = counting(saver);
    let thread = RunConfig::thread(name).with_durability(durability);
    let mut stream = graph.stream(Count::update(), &thread, StreamMode::Values);
    loop {
        match stream.next().await {
            Some(Ok(StreamEvent::Values(state))) if state.n == 1 => break,
            Some(Ok(_)) => {}
            Some(Err(e)) => panic!("the run failed: {e}"),
            None => panic!("the run ended without its final values"),
        }
    }
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let state = graph.get_state(&thread).await.expect("state");
        if state.values.n == 1 && state.next.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the finished step was lost: the thread reads n = {} with next {:?}",
            state.values.n,
            state.next
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_sync_the_last_checkpoint_outlives_a_dropped_stream() {
    the_last_checkpoint_outlives_a_dropped_stream(Durability::Sync, "dropped_sync").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_exit_the_last_checkpoint_outlives_a_dropped_stream() {
    the_last_checkpoint_outlives_a_dropped_stream(Durability::Exit, "dropped_exit").await;
}

/// A run under `exit` dropped while one task of a step waits, after its
/// sibling completed: the sibling's writes are stored with the checkpoint the
/// step ran from (LangGraph's exit stores its pending writes), so resuming
/// the thread runs the waiting task alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_exit_a_completed_sibling_outlives_a_dropped_stream() {
    let (saver, _) = two_savers("dropped_sibling").await;
    let fast_runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(0));
    let fast = Arc::clone(&fast_runs);
    let waiting = Arc::clone(&gate);
    let graph = StateGraph::<Count>::new()
        .add_node(node_fn("fast", move |_: &Count| {
            fast.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Count::update().n(1)
        }))
        .add_node(async_node_fn(
            "slow",
            move |_: Arc<Count>, _ctx: Context| {
                let gate = Arc::clone(&waiting);
                async move {
                    gate.acquire().await.map(|permit| permit.forget()).ok();
                    Count::update().n(10)
                }
            },
        ))
        .add_edge(START, "fast")
        .add_edge(START, "slow")
        .compile_with(saver)
        .expect("compile");
    let thread = RunConfig::thread("dropped_sibling").with_durability(Durability::Exit);
    let mut stream = graph.stream(Count::update(), &thread, StreamMode::Values);
    // The stream drives the run: polled until `fast` has run (`slow` cannot
    // complete without a permit).
    while fast_runs.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        if let Ok(event) = tokio::time::timeout(Duration::from_millis(20), stream.next()).await {
            event.expect("the run ended early").expect("the run failed");
        }
    }
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let state = graph.get_state(&thread).await.expect("state");
        let next: Vec<String> = state.next.iter().map(|n| n.to_string()).collect();
        if state.values.n == 1 && next == ["slow"] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "`fast`'s write was lost: the thread reads n = {} with next {next:?}",
            state.values.n,
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    gate.add_permits(1);
    let out = graph.invoke(None, &thread).await.expect("resume");
    assert_eq!(out.n, 11);
    assert_eq!(
        fast_runs.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "`fast` ran again"
    );
}

/// A run cancelled (its future dropped) while the saver stores a step: the
/// put, started, completes anyway; its transaction is not rolled back with the
/// step lost. The put is held up by a lock on `checkpoints` taken by another
/// session, and the run dropped once the server shows the put waiting on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_under_way_when_its_run_is_cancelled_completes() {
    let (config, schema) = common::fresh_config("cancelled_put").await;
    let saver = PostgresSaver::builder_from_config(config)
        .connect()
        .await
        .expect("connect");
    let graph = StateGraph::<Count>::new()
        .add_node(node_fn("one", |_: &Count| Count::update().n(1)))
        .add_edge(START, "one")
        .compile_with(saver)
        .expect("compile");
    let locker = common::client(&schema).await;
    let observer = common::client(&schema).await;
    locker
        .batch_execute("BEGIN; LOCK TABLE checkpoints IN EXCLUSIVE MODE")
        .await
        .expect("lock");
    let locker_pid: i32 = locker
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .expect("pid")
        .get(0);
    let thread = RunConfig::thread("cancelled_put").with_durability(Durability::Sync);
    let mut run = Box::pin(graph.invoke(Count::update(), &thread));
    // The run stores its `input` checkpoint and the `__start__` step's before
    // `one` runs: that put waits for the lock.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        assert!(
            futures::poll!(run.as_mut()).is_pending(),
            "the run ended before it was cancelled"
        );
        let waiting: i64 = observer
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
                &[&locker_pid],
            )
            .await
            .expect("pg_stat_activity")
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the put never waited for the lock"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(run);
    locker.batch_execute("COMMIT").await.expect("unlock");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let state = graph.get_state(&thread).await.expect("state");
        if !state.next.is_empty() {
            assert_eq!(state.next.len(), 1, "`one` is next: {:?}", state.next);
            assert_eq!(state.values.n, 0);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the put under way was rolled back: the thread has no checkpoint"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A run cancelled under `sync` while its node waits has stored everything it
/// made, and still releases its thread: its lease row is removed, so the next
/// run does not find a lease its last run left (and warn that the run did not
/// release it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_with_nothing_to_store_removes_its_lease() {
    let (builder, schema) = common::fresh_schema("cancel_release").await;
    let saver = builder.connect().await.expect("connect");
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let graph = gated(saver, started_tx, Arc::clone(&gate));
    let thread = RunConfig::thread("cancel_release").with_durability(Durability::Sync);
    let client = common::client(&schema).await;
    let leases = || async {
        client
            .query_one(
                "SELECT count(*) FROM stategraph_thread_leases WHERE thread_id = 'cancel_release'",
                &[],
            )
            .await
            .expect("read the leases")
            .get::<_, i64>(0)
    };

    let mut stream = graph.stream(Count::update(), &thread, StreamMode::Values);
    tokio::select! {
        _ = started.recv() => {}
        event = stream.next() => panic!("the run ended early: {event:?}"),
    }
    assert_eq!(leases().await, 1, "the running run holds the lease");
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while leases().await != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cancelled run left its lease row"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The thread is free and reads the step the run had stored.
    gate.add_permits(1);
    let out = graph
        .invoke(None, &thread)
        .await
        .expect("the thread is free");
    assert_eq!(out.n, 1);
}
