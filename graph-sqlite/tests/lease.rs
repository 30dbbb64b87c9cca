//! One writer per thread across SQLite savers and processes sharing a file: a
//! run holds its thread's lease (`stategraph_thread_leases`), another run of the
//! thread gets `ThreadBusy`, a crashed holder's thread is free at once on the
//! same machine (after the lease time elsewhere), and a run whose lease was
//! taken over stores nothing more (`GraphError::LeaseLost`): the thread's
//! history never forks.

use graph_core::checkpoint::{CheckpointConfig, CheckpointError, Checkpointer, ListOptions};
use graph_sqlite::SqliteSaver;
use stategraph::prelude::*;
use stategraph::Durability;
use std::path::Path;
use std::process::{Command as Process, Stdio};
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

/// A loop of `steps` steps; each reports its start, then waits for a permit of
/// `gate` (none: at once) and logs `who`.
fn looping(
    saver: SqliteSaver,
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

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("open raw")
}

/// Every checkpoint of the thread descends from the one before it: one chain.
async fn assert_linear_history(saver: &SqliteSaver, thread: &str) -> usize {
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
        assert_eq!(parent, expected, "checkpoint {i} forks the history");
    }
    all.len()
}

fn is_busy<T: std::fmt::Debug>(result: &Result<T, GraphError>, thread: &str) -> bool {
    matches!(result, Err(GraphError::ThreadBusy { thread_id, .. }) if thread_id == thread)
}

#[tokio::test]
async fn the_saver_holds_threads_for_its_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let saver = SqliteSaver::open(dir.path().join("leases.sqlite"))
        .await
        .expect("open");
    graph_core::checkpoint::conformance::run_leases(&saver).await;
    let memory = SqliteSaver::in_memory().await.expect("open");
    graph_core::checkpoint::conformance::run_leases(&memory).await;
}

/// A run cancelled while its lease is being taken (its future dropped after
/// the request reached the saver's thread) leaves the thread free: the next run
/// takes it at once, not after the lease expires. (graph-server's `interrupt`
/// strategy cancels runs that are just starting.)
#[tokio::test]
async fn a_run_cancelled_while_taking_its_lease_leaves_the_thread_free() {
    use futures::FutureExt;
    let dir = tempfile::tempdir().expect("dir");
    let saver = SqliteSaver::open(dir.path().join("cancelled.sqlite"))
        .await
        .expect("open");
    for _ in 0..20 {
        // One poll queues the request on the saver's thread; then the future
        // is dropped, as a cancelled run's is.
        drop(saver.begin_run("t", "").now_or_never());
        let guard = saver
            .begin_run("t", "")
            .await
            .expect("the thread is free again");
        guard.release().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_savers_on_one_file_never_run_one_thread_at_once() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("shared.sqlite");
    let saver_a = SqliteSaver::open(&path).await.expect("open");
    let saver_b = SqliteSaver::open(&path).await.expect("open");
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = looping(saver_a, "a", 3, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b, "b", 3, started_tx, None);
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("shared").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("started");
    let second = b
        .invoke(Steps::update(), &thread)
        .await
        .map(|s| s.into_state());
    assert!(is_busy(&second, "shared"), "{second:?}");
    let update = b.update_state(&thread, Steps::update().n(5), None).await;
    assert!(is_busy(&update, "shared"), "{update:?}");
    // Other threads are free meanwhile.
    let other = b
        .invoke(Steps::update(), &RunConfig::thread("other"))
        .await
        .expect("another thread");
    assert_eq!(other.n, 3);

    gate.add_permits(100);
    let done = first.await.expect("join").expect("first run");
    assert_eq!(done.log, ["a1", "a2", "a3"]);
    // Once the run has returned, the thread is free at once.
    let after = b
        .invoke(Steps::update(), &thread)
        .await
        .expect("free again");
    assert_eq!(
        after.log,
        ["a1", "a2", "a3", "b4"],
        "past the loop's end: one step"
    );
    let check = SqliteSaver::open(&path).await.expect("open");
    assert_linear_history(&check, "shared").await;
}

/// Set in the child process: the database it runs a thread on, forever.
const CHILD_DB: &str = "STATEGRAPH_LEASE_TEST_DB";

/// The child process of `a_thread_held_by_another_process_is_busy_until_it_dies`:
/// runs a thread whose node never returns.
#[tokio::test]
#[ignore = "the child process of `a_thread_held_by_another_process_is_busy_until_it_dies`, which runs it"]
async fn lease_child() {
    let db = std::env::var(CHILD_DB).expect("run only by the lease test");
    let saver = SqliteSaver::open(&db).await.expect("open");
    let (started, _rx) = mpsc::unbounded_channel();
    let app = looping(
        saver,
        "child",
        3,
        started,
        Some(Arc::new(Semaphore::new(1))),
    );
    app.invoke(Steps::update(), &RunConfig::thread("crossed"))
        .await
        .expect("the child's run");
}

/// Kills and reaps the child if the test fails before it does.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_held_by_another_process_is_busy_until_it_dies() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("processes.sqlite");
    // The schema first, so that the child and this process only read and write.
    let saver = SqliteSaver::open(&path).await.expect("open");
    let mut child = KillOnDrop(
        Process::new(std::env::current_exe().expect("test binary"))
            .args(["lease_child", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_DB, &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the child"),
    );
    // Until the child holds the thread and has done its first step.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the child made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let state = saver.get_tuple(&CheckpointConfig::thread("crossed")).await;
        if matches!(&state, Ok(Some(t)) if t.metadata.step >= 1) {
            break;
        }
    }
    let (started, _rx) = mpsc::unbounded_channel();
    let app = looping(saver, "parent", 3, started, None);
    let thread = RunConfig::thread("crossed");
    let busy = app
        .invoke(Steps::update(), &thread)
        .await
        .map(|s| s.into_state());
    assert!(is_busy(&busy, "crossed"), "{busy:?}");

    // The child dies without releasing anything: on this machine its lease is
    // known dead at once, long before it would expire.
    child.0.kill().expect("kill");
    child.0.wait().expect("reap");
    let done = app
        .invoke(None, &thread)
        .await
        .expect("the dead process's thread is free");
    assert_eq!(done.log, ["child1", "parent2", "parent3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_lease_expired_and_was_taken_over_stores_nothing_more() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("expired.sqlite");
    let saver_a = SqliteSaver::open(&path).await.expect("open");
    let saver_b = SqliteSaver::open(&path).await.expect("open");
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(1));
    let a = looping(saver_a, "a", 4, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b, "b", 4, started_tx, None);
    // Each step's checkpoint is stored before the next step starts.
    let thread = RunConfig::thread("expired").with_durability(Durability::Sync);

    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("step 1");
    started.recv().await.expect("step 2");
    // As if the first run's process had been stopped for longer than the lease
    // time on another machine: its lease has expired.
    raw(&path)
        .execute(
            "UPDATE stategraph_thread_leases SET expires_at = 0, boot_id = 'elsewhere' \
             WHERE thread_id = 'expired'",
            [],
        )
        .expect("expire the lease");
    let done = b
        .invoke(Steps::update(), &thread)
        .await
        .expect("takes over");
    assert_eq!(done.log, ["a1", "b2", "b3", "b4"]);

    // The first run comes back and writes: refused, with a clear error.
    gate.add_permits(100);
    let lost = first.await.expect("join").map(|s| s.into_state());
    match &lost {
        Err(GraphError::LeaseLost {
            thread_id, reason, ..
        }) => {
            assert_eq!(thread_id, "expired");
            assert!(
                reason.contains("taken the thread over") || reason.contains("took it over"),
                "{reason}"
            );
        }
        other => panic!("expected LeaseLost, got {other:?}"),
    }
    let check = SqliteSaver::open(&path).await.expect("open");
    let state = b.get_state(&thread).await.expect("state");
    assert_eq!(state.values.log, ["a1", "b2", "b3", "b4"]);
    // The first run's input, `__start__` and one step; the second's input,
    // `__start__` and three steps.
    assert_eq!(assert_linear_history(&check, "expired").await, 8);
}

#[tokio::test]
async fn a_lease_of_a_holder_elsewhere_blocks_until_it_expires() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("elsewhere.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let future = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_millis() as i64
        + 400;
    raw(&path)
        .execute(
            "INSERT INTO stategraph_thread_leases (thread_id, owner, expires_at, boot_id, pid) \
             VALUES ('far', 'worker-9:77:1', ?1, 'another-machine', 77)",
            [future],
        )
        .expect("a lease held elsewhere");
    let (started, _rx) = mpsc::unbounded_channel();
    let app = looping(saver, "here", 1, started, None);
    let thread = RunConfig::thread("far");
    let busy = app
        .invoke(Steps::update(), &thread)
        .await
        .map(|s| s.into_state());
    assert!(is_busy(&busy, "far"), "{busy:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let done = app
        .invoke(Steps::update(), &thread)
        .await
        .expect("expired: free");
    assert_eq!(done.log, ["here1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_keeps_its_lease_renewed() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("renewed.sqlite");
    let ttl = Duration::from_millis(300);
    let saver_a = SqliteSaver::builder(&path)
        .lease_ttl(ttl)
        .open()
        .await
        .expect("open");
    let saver_b = SqliteSaver::open(&path).await.expect("open");
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let a = looping(saver_a, "a", 2, started_tx.clone(), Some(Arc::clone(&gate)));
    let b = looping(saver_b, "b", 2, started_tx, None);
    let thread = RunConfig::thread("long");
    // Seen from another machine, so that only the lease's expiry could free it.
    let first = tokio::spawn({
        let (a, thread) = (a.clone(), thread.clone());
        async move { a.invoke(Steps::update(), &thread).await }
    });
    started.recv().await.expect("started");
    raw(&path)
        .execute(
            "UPDATE stategraph_thread_leases SET boot_id = 'elsewhere' WHERE thread_id = 'long'",
            [],
        )
        .expect("update");
    // Five times the lease time: the holder's saver renews it all along.
    for _ in 0..5 {
        tokio::time::sleep(ttl).await;
        let other = b
            .invoke(Steps::update(), &thread)
            .await
            .map(|s| s.into_state());
        assert!(is_busy(&other, "long"), "{other:?}");
    }
    gate.add_permits(100);
    let done = first.await.expect("join").expect("the long run completes");
    assert_eq!(done.log, ["a1", "a2"]);
}

/// The main database file's bytes (a read-only open must leave them as they were).
fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read the file")
}

#[tokio::test]
async fn a_read_only_saver_reads_and_never_writes() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("inspect.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let (started, _rx) = mpsc::unbounded_channel();
    let app = looping(saver, "w", 2, started, None);
    let thread = RunConfig::thread("t");
    app.invoke(Steps::update(), &thread).await.expect("run");
    drop(app);
    // Checkpoint the WAL into the main file, so that it alone holds the data.
    raw(&path)
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint the WAL");
    let before = bytes(&path);

    let reader = SqliteSaver::open_read_only(&path)
        .await
        .expect("open read-only");
    let tuple = reader
        .get_tuple(&CheckpointConfig::thread("t"))
        .await
        .expect("read")
        .expect("the thread");
    assert_eq!(tuple.checkpoint.channel_values["n"].as_str(), "2");
    let (started, _rx) = mpsc::unbounded_channel();
    let app = looping(reader, "r", 2, started, None);
    assert_eq!(app.get_state(&thread).await.expect("state").values.n, 2);
    let refused = app
        .invoke(Steps::update(), &thread)
        .await
        .map(|s| s.into_state());
    assert!(
        matches!(
            &refused,
            Err(GraphError::Checkpoint(CheckpointError::ReadOnly { .. }))
        ),
        "{refused:?}"
    );
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("read-only"), "{message}");
    let saver = app.checkpointer().expect("saver");
    let deleted = saver.delete_thread("t").await;
    assert!(
        matches!(deleted, Err(CheckpointError::ReadOnly { .. })),
        "{deleted:?}"
    );
    drop(app);
    assert_eq!(bytes(&path), before, "the file is unchanged");

    // A file that does not exist is not created.
    let missing = dir.path().join("missing.sqlite");
    let err = SqliteSaver::open_read_only(&missing).await.unwrap_err();
    assert!(err.to_string().contains("missing.sqlite"), "{err}");
    assert!(!missing.exists());
}

/// A database with `sql` run in it; what `open` says of it and whether it left
/// the file as it was.
async fn open_foreign(sql: &str) -> (CheckpointError, bool) {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("foreign.sqlite");
    raw(&path).execute_batch(sql).expect("set up");
    let before = bytes(&path);
    let err = SqliteSaver::open(&path).await.expect_err("refused");
    (err, bytes(&path) == before)
}

#[tokio::test]
async fn a_database_with_tables_that_are_not_langgraphs_is_refused_untouched() {
    let (err, unchanged) =
        open_foreign("CREATE TABLE checkpoints (id INTEGER PRIMARY KEY, note TEXT);").await;
    assert!(unchanged);
    let text = err.to_string();
    assert!(
        matches!(err, CheckpointError::ForeignSchema { .. })
            && text.contains("table `checkpoints` is not LangGraph's")
            && text.contains("id, note"),
        "{text}"
    );

    let (err, unchanged) = open_foreign(
        "CREATE TABLE checkpoints (thread_id TEXT NOT NULL, thread_ts TEXT NOT NULL, \
         parent_ts TEXT, checkpoint BLOB, metadata BLOB, PRIMARY KEY (thread_id, thread_ts));
         CREATE TABLE writes (thread_id TEXT NOT NULL, thread_ts TEXT NOT NULL, \
         task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, value BLOB, \
         PRIMARY KEY (thread_id, thread_ts, task_id, idx));",
    )
    .await;
    assert!(unchanged);
    assert!(err.to_string().contains("thread_ts"), "{err}");

    let (err, unchanged) = open_foreign("CREATE TABLE writes (author TEXT, body TEXT);").await;
    assert!(unchanged);
    assert!(err.to_string().contains("`writes`"), "{err}");

    let (err, unchanged) = open_foreign("CREATE TABLE checkpoint_blobs (k TEXT);").await;
    assert!(unchanged);
    assert!(err.to_string().contains("`checkpoint_blobs`"), "{err}");
}

#[tokio::test]
async fn a_database_shared_with_unrelated_tables_keeps_them() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("shared.sqlite");
    raw(&path)
        .execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);
             INSERT INTO users (name) VALUES ('ada');",
        )
        .expect("set up");
    let saver = SqliteSaver::open(&path).await.expect("open");
    saver.close().await.expect("close");
    let name: String = raw(&path)
        .query_row("SELECT name FROM users", [], |r| r.get(0))
        .expect("the user's table is there");
    assert_eq!(name, "ada");
}

#[tokio::test]
async fn a_checkpoint_whose_value_is_missing_is_an_error_not_a_default() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("missing.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let (started, _rx) = mpsc::unbounded_channel();
    let app = looping(saver, "x", 2, started, None);
    let thread = RunConfig::thread("t");
    app.invoke(Steps::update(), &thread).await.expect("run");
    let deleted = raw(&path)
        .execute(
            "DELETE FROM checkpoint_blobs WHERE channel = 'log' \
             AND version = (SELECT max(version) FROM checkpoint_blobs WHERE channel = 'log')",
            [],
        )
        .expect("delete");
    assert_eq!(deleted, 1);
    let err = app.get_state(&thread).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, GraphError::Checkpoint(CheckpointError::Corrupt { thread_id, .. }) if thread_id == "t")
            && text.contains("channel `log`")
            && text.contains("no value is stored"),
        "{text}"
    );
    // Resuming or continuing the thread fails the same way (never from a default).
    let err = app.invoke(Steps::update(), &thread).await.unwrap_err();
    assert!(err.to_string().contains("channel `log`"), "{err}");
}

/// A run whose checkpoint cannot be read does not start, and leaves its thread
/// free: `begin_run_and_load` takes the lease and reads in one job, and gives
/// the lease back in that job when the read fails.
#[tokio::test]
async fn a_run_that_cannot_read_its_checkpoint_leaves_the_thread_free() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("unreadable.sqlite");
    let (started, _) = mpsc::unbounded_channel();
    let app = looping(
        SqliteSaver::open(&path).await.expect("open"),
        "a",
        1,
        started,
        None,
    );
    // Another saver of the file, to call directly.
    let saver = SqliteSaver::open(&path).await.expect("open");
    let config = RunConfig::thread("t");
    app.invoke(Steps::update(), &config)
        .await
        .expect("first run");
    raw(&path)
        .execute(
            "UPDATE checkpoint_rows SET checkpoint = 'not json' WHERE thread_id = 't'",
            [],
        )
        .expect("corrupt the checkpoints");
    let loaded = saver
        .begin_run_and_load(&CheckpointConfig::thread("t"))
        .await;
    assert!(
        matches!(loaded, Err(CheckpointError::Corrupt { ref thread_id, .. }) if thread_id == "t"),
        "{loaded:?}"
    );
    let run = app.invoke(Steps::update(), &config).await;
    assert!(
        matches!(
            run,
            Err(GraphError::Checkpoint(CheckpointError::Corrupt { .. }))
        ),
        "{run:?}"
    );
    // Neither attempt kept the lease.
    let guard = saver.begin_run("t", "").await.expect("the thread is free");
    guard.release().await;
}

/// The lease holders of `thread` in the file: (owner, generation).
fn holders(path: &Path, thread: &str) -> Vec<(String, i64)> {
    let conn = raw(path);
    let mut stmt = conn
        .prepare("SELECT owner, generation FROM stategraph_thread_leases WHERE thread_id = ?1")
        .expect("prepare");
    stmt.query_map([thread], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// A run of one step (durability `sync`) on `thread`, started and waiting in
/// its node until the returned gate gets a permit.
async fn one_step_run_waiting_in_its_node(
    path: &Path,
    thread: &str,
) -> (
    tokio::task::JoinHandle<Result<Steps, GraphError>>,
    Arc<Semaphore>,
) {
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let gate = Arc::new(Semaphore::new(0));
    let app = looping(
        SqliteSaver::open(path).await.expect("open"),
        "a",
        1,
        started_tx,
        Some(Arc::clone(&gate)),
    );
    let config = RunConfig::thread(thread).with_durability(Durability::Sync);
    let run = tokio::spawn(async move {
        app.invoke(Steps::update(), &config)
            .await
            .map(|out| out.into_state())
    });
    started.recv().await.expect("the step started");
    (run, gate)
}

/// Under durability `sync` a run's last checkpoint is stored with the release
/// of its lease, in one transaction. A put that fails there still lets the
/// thread go (a run right after takes it at once) and returns its error; the
/// checkpoints stored before the node ran stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_checkpoint_that_cannot_be_stored_fails_the_run_and_frees_the_thread() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("last.sqlite");
    let (run, gate) = one_step_run_waiting_in_its_node(&path, "last").await;
    // The node runs: the run's `input` and `__start__` checkpoints are stored,
    // and the lease is held. From now on the file refuses new checkpoints.
    let other = SqliteSaver::open(&path).await.expect("open");
    assert_eq!(assert_linear_history(&other, "last").await, 2);
    assert_eq!(holders(&path, "last").len(), 1);
    raw(&path)
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON checkpoint_rows \
             BEGIN SELECT RAISE(ABORT, 'the disk is full'); END;",
        )
        .expect("trigger");
    gate.add_permits(1);
    let failed = run.await.expect("join");
    assert!(
        matches!(
            &failed,
            Err(GraphError::Checkpoint(CheckpointError::Storage(e))) if e.to_string().contains("the disk is full")
        ),
        "{failed:?}"
    );
    // Nothing of the failed put was stored, and the lease went with it.
    assert_eq!(assert_linear_history(&other, "last").await, 2);
    assert!(holders(&path, "last").is_empty());
    raw(&path)
        .execute_batch("DROP TRIGGER refuse;")
        .expect("drop trigger");
    let guard = other
        .begin_run("last", "")
        .await
        .expect("the thread is free");
    guard.release().await;
}

/// A run whose lease was taken over while its last node ran: the last
/// checkpoint, stored with the release, is refused (`LeaseLost`), and the
/// release leaves the new holder's lease alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_lost_its_lease_in_its_last_step_leaves_the_new_holder_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("taken.sqlite");
    let (run, gate) = one_step_run_waiting_in_its_node(&path, "taken").await;
    // Its lease expired (its process stalled, on another machine) and a run
    // elsewhere took the thread.
    raw(&path)
        .execute_batch(
            "DELETE FROM stategraph_thread_leases WHERE thread_id = 'taken'; \
             INSERT INTO stategraph_thread_leases (thread_id, owner, expires_at, boot_id) \
             VALUES ('taken', 'elsewhere', 9223372036854775807, 'another-boot');",
        )
        .expect("take the thread over");
    let new_holder = holders(&path, "taken");
    gate.add_permits(1);
    let lost = run.await.expect("join");
    assert!(
        matches!(&lost, Err(GraphError::LeaseLost { thread_id, .. }) if thread_id == "taken"),
        "{lost:?}"
    );
    let other = SqliteSaver::open(&path).await.expect("open");
    assert_eq!(assert_linear_history(&other, "taken").await, 2);
    assert_eq!(holders(&path, "taken"), new_holder);
}
