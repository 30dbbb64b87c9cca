//! A run's hold on its thread cannot be lost silently. The advisory lock lives on
//! a connection the server may end at any time (`pg_terminate_backend`,
//! `idle_session_timeout`, a failover, a proxy dropping idle TCP): the lock's
//! heartbeat keeps it alive or takes it back, and every write of a run is fenced
//! by its lease generation, so that when another worker does take the thread
//! over, the first run fails with `GraphError::LeaseLost` at its next write and
//! the thread's history never forks.

mod common;

use graph_postgres::PostgresSaver;
use stategraph::checkpoint::{CheckpointConfig, Checkpointer, ListOptions};
use stategraph::prelude::*;
use stategraph::Durability;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Steps {
    #[reducer(std::ops::Add::add)]
    n: u32,
    #[reducer(append)]
    log: Vec<String>,
}

fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// A loop of `steps` steps; each step reports its start, then waits for a permit
/// of `gate` (none: it runs at once) and logs `who`.
fn looping(
    saver: PostgresSaver,
    who: &'static str,
    steps: u32,
    started: mpsc::UnboundedSender<u32>,
    gate: Option<Arc<Semaphore>>,
) -> CompiledGraph<Steps> {
    StateGraph::<Steps>::new()
        .add_node(async_node_fn(
            "step",
            move |s: Arc<Steps>, _ctx: Context| {
                let (started, gate) = (started.clone(), gate.clone());
                async move {
                    started.send(s.n).ok();
                    if let Some(gate) = gate {
                        gate.acquire().await.map(|permit| permit.forget()).ok();
                    }
                    Steps::update().n(1).log(vec![format!("{who}{}", s.n + 1)])
                }
            },
        ))
        .add_edge(START, "step")
        .add_conditional_edges(
            "step",
            move |s: &Steps| {
                if s.n < steps {
                    "step"
                } else {
                    END
                }
            },
        )
        .compile_with(saver)
        .expect("compile")
}

/// The server processes holding `thread`'s run lock (the saver's lock class).
async fn lock_holders(client: &tokio_postgres::Client, thread: &str) -> Vec<i32> {
    client
        .query(
            "SELECT pid FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND objsubid = 2
                 AND classid = x'53475452'::int::oid
                 AND objid = (hashtext($1)::int8 & 4294967295)::oid",
            &[&thread],
        )
        .await
        .expect("read pg_locks")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// Ends the session holding `thread`'s lock, as a server timeout or an
/// administrator would; returns its pid.
async fn terminate_lock_session(client: &tokio_postgres::Client, thread: &str) -> i32 {
    let holders = lock_holders(client, thread).await;
    assert_eq!(holders.len(), 1, "one session holds the lock: {holders:?}");
    let ended: bool = client
        .query_one("SELECT pg_terminate_backend($1)", &[&holders[0]])
        .await
        .expect("terminate")
        .get(0);
    assert!(ended);
    holders[0]
}

/// Every checkpoint of the thread's root namespace descends from the one before
/// it: one chain, no fork. Returns the chain's length.
async fn assert_linear_history(saver: &PostgresSaver, thread: &str) -> usize {
    let mut all = saver
        .list(
            Some(&CheckpointConfig::thread(thread)),
            &ListOptions::default(),
        )
        .await
        .expect("list");
    all.reverse();
    for (i, tuple) in all.iter().enumerate() {
        let parent = tuple
            .parent_config
            .as_ref()
            .and_then(|p| p.checkpoint_id.clone());
        let expected = i
            .checked_sub(1)
            .map(|p| all[p].config.checkpoint_id.clone().expect("id"));
        assert_eq!(
            parent,
            expected,
            "checkpoint {i} of {} forks the history: {:#?}",
            all.len(),
            all.iter()
                .map(|t| (&t.config.checkpoint_id, &t.parent_config))
                .collect::<Vec<_>>()
        );
    }
    all.len()
}

async fn saver_with(config: &tokio_postgres::Config, heartbeat: Option<Duration>) -> PostgresSaver {
    let mut builder = PostgresSaver::builder_from_config(config.clone());
    if let Some(interval) = heartbeat {
        builder = builder.lock_heartbeat(interval);
    }
    builder.connect().await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_lock_session_is_terminated_is_fenced_out_when_another_worker_takes_over() {
    let (config, schema) = common::fresh_config("lease_takeover").await;
    // The first worker's heartbeat is too slow to notice before the takeover.
    let saver_a = saver_with(&config, Some(Duration::from_secs(600))).await;
    let saver_b = saver_with(&config, None).await;
    let admin = common::client(&schema).await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = looping(saver_a, "a", 6, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b.clone(), "b", 6, started_tx, None);
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("taken").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    // Two steps done, the third waiting for its permit.
    gate.add_permits(2);
    for _ in 0..3 {
        started.recv().await.expect("a step started");
    }
    terminate_lock_session(&admin, "taken").await;

    // Another worker now takes the thread (once the server has ended the
    // session) and runs it to the end, from the first run's last checkpoint.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let done = loop {
        match b.invoke(Steps::update(), &thread).await {
            Ok(done) => break done,
            Err(GraphError::ThreadBusy { .. }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("the second worker cannot run the thread: {e}"),
        }
    };
    assert_eq!(done.n, 6);
    assert_eq!(done.log, ["a1", "a2", "b3", "b4", "b5", "b6"]);

    // The first run wakes up and writes: refused, and it stops with a clear error.
    gate.add_permits(100);
    let lost = first.await.expect("join").map(|s| s.into_state());
    match &lost {
        Err(GraphError::LeaseLost {
            thread_id, owner, ..
        }) => {
            assert_eq!(thread_id, "taken");
            assert!(!owner.is_empty());
        }
        other => panic!("expected LeaseLost, got {other:?}"),
    }
    let message = lost.unwrap_err().to_string();
    assert!(
        message.contains("thread `taken`") && message.contains("taken over"),
        "{message}"
    );

    // Nothing of the first run's later steps was stored; the history is one chain.
    let state = b.get_state(&thread).await.expect("state");
    assert_eq!(state.values.log, ["a1", "a2", "b3", "b4", "b5", "b6"]);
    assert!(state.next.is_empty());
    // The first run's input, `__start__` and 2 steps; the second's input (an
    // empty update), `__start__` and 4 steps.
    assert_eq!(assert_linear_history(&saver_b, "taken").await, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_waiting_on_lock_thread_takes_over_a_lost_lock_and_the_first_run_fails_cleanly() {
    let (config, schema) = common::fresh_config("lease_wait").await;
    let saver_a = saver_with(&config, Some(Duration::from_secs(600))).await;
    let saver_b = saver_with(&config, None).await;
    let admin = common::client(&schema).await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(1));
    let a = looping(saver_a, "a", 4, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b.clone(), "b", 4, started_tx, None);
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("waited").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("step 1 started");
    started.recv().await.expect("step 2 started");
    // A worker that waits for the thread instead of failing.
    let waiter = tokio::spawn({
        let saver_b = saver_b.clone();
        async move { saver_b.lock_thread("waited").await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "the lock is held: the worker waits");
    terminate_lock_session(&admin, "waited").await;
    let lock = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("the waiting worker gets the lock once the session is gone")
        .expect("join")
        .expect("lock");
    let done = b.invoke(Steps::update(), &thread).await.expect("run");
    assert_eq!(done.log, ["a1", "b2", "b3", "b4"]);
    lock.unlock().await.expect("unlock");

    gate.add_permits(100);
    let lost = first.await.expect("join").map(|s| s.into_state());
    assert!(
        matches!(&lost, Err(GraphError::LeaseLost { thread_id, .. }) if thread_id == "waited"),
        "{lost:?}"
    );
    // 3 + the second run's input, `__start__` and 3 steps.
    assert_eq!(assert_linear_history(&saver_b, "waited").await, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heartbeat_keeps_a_lock_alive_through_idle_session_timeout() {
    let (config, schema) = common::fresh_config("lease_idle").await;
    let saver_b = saver_with(&config, None).await;
    // Every session of the first worker is ended by the server after 1 s idle.
    let mut config_a = config.clone();
    config_a.options(format!(
        "{} -c idle_session_timeout=1000",
        config.get_options().unwrap_or_default()
    ));
    let saver_a = saver_with(&config_a, None).await;
    let admin = common::client(&schema).await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = looping(saver_a, "a", 3, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b.clone(), "b", 3, started_tx, None);
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("idle").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("step 1 started");
    let holder = lock_holders(&admin, "idle").await;
    // Three times the server's idle timeout: the lock's session stays, and the
    // other worker finds the thread busy all along.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let other = b.invoke(Steps::update(), &thread).await;
        assert!(
            matches!(other, Err(GraphError::ThreadBusy { .. })),
            "the thread must stay busy while the first run holds it: {:?}",
            other.map(|s| s.into_state())
        );
    }
    assert_eq!(
        lock_holders(&admin, "idle").await,
        holder,
        "the same session still holds the lock"
    );
    gate.add_permits(100);
    let done = first.await.expect("join").expect("the first run completes");
    assert_eq!(done.log, ["a1", "a2", "a3"]);
    // Input, `__start__`, 3 steps.
    assert_eq!(assert_linear_history(&saver_b, "idle").await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_whose_connection_is_lost_is_taken_back_when_nobody_else_took_it() {
    let (config, schema) = common::fresh_config("lease_retake").await;
    let saver_a = saver_with(&config, Some(Duration::from_millis(100))).await;
    let saver_b = saver_with(&config, None).await;
    let admin = common::client(&schema).await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = looping(saver_a, "a", 3, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b.clone(), "b", 3, started_tx, None);
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("retaken").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("step 1 started");
    let old = terminate_lock_session(&admin, "retaken").await;
    // Within a few heartbeats the lock is held again, by a new session.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let holders = lock_holders(&admin, "retaken").await;
        if holders.len() == 1 && holders[0] != old {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the lock was not taken back: {holders:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let other = b.invoke(Steps::update(), &thread).await;
    assert!(
        matches!(other, Err(GraphError::ThreadBusy { .. })),
        "{:?}",
        other.map(|s| s.into_state())
    );
    gate.add_permits(100);
    let done = first.await.expect("join").expect("the first run completes");
    assert_eq!(done.log, ["a1", "a2", "a3"]);
    assert_eq!(assert_linear_history(&saver_b, "retaken").await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_prune_refuse_a_running_thread_and_fence_out_a_lost_run() {
    let (config, schema) = common::fresh_config("lease_delete").await;
    let saver_a = saver_with(&config, Some(Duration::from_secs(600))).await;
    let saver_b = saver_with(&config, None).await;
    let admin = common::client(&schema).await;
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(1));
    let a = looping(saver_a, "a", 4, started_tx, Some(Arc::clone(&gate)));
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("deleted").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("step 1 started");
    started.recv().await.expect("step 2 started");
    // While the run holds the thread, neither deletes anything.
    let deleted = saver_b.delete_thread("deleted").await;
    assert!(
        matches!(&deleted, Err(stategraph::checkpoint::CheckpointError::ThreadBusy { thread_id }) if thread_id == "deleted"),
        "{deleted:?}"
    );
    let pruned = saver_b
        .prune("deleted", stategraph::checkpoint::Retention::KeepLast(1))
        .await;
    assert!(
        matches!(
            &pruned,
            Err(stategraph::checkpoint::CheckpointError::ThreadBusy { .. })
        ),
        "{pruned:?}"
    );
    // Input, `__start__`, the first step.
    assert_eq!(assert_linear_history(&saver_b, "deleted").await, 3);

    // Its lock lost, the run is not running as far as anyone can tell: the
    // thread may be deleted, and the run must not write on top of the deletion.
    terminate_lock_session(&admin, "deleted").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match saver_b.delete_thread("deleted").await {
            Ok(()) => break,
            Err(stategraph::checkpoint::CheckpointError::ThreadBusy { .. })
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("{e}"),
        }
    }
    gate.add_permits(100);
    let lost = first.await.expect("join").map(|s| s.into_state());
    assert!(
        matches!(&lost, Err(GraphError::LeaseLost { reason, .. }) if reason.contains("deleted")),
        "{lost:?}"
    );
    let left = saver_b
        .list(
            Some(&CheckpointConfig::thread("deleted")),
            &ListOptions::default(),
        )
        .await
        .expect("list");
    assert!(
        left.is_empty(),
        "nothing was written after the delete: {left:?}"
    );
    let blobs: i64 = admin
        .query_one(
            "SELECT count(*) FROM checkpoint_blobs WHERE thread_id = 'deleted'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(blobs, 0);
}
