//! PostgresSaver beyond the conformance suite: the migrations table, a newer
//! schema, the O(changed channels) layout, values it cannot read, prune's rows,
//! thread locks, and a lost connection in the middle of a run.

mod common;

use graph_core::checkpoint::{
    Blob, ChannelVersion, Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata,
    CheckpointSource, Checkpointer, NameMap, Retention,
};
use graph_postgres::{PgError, PostgresSaver, SCHEMA_VERSION};
use stategraph::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

fn version(n: u64) -> ChannelVersion {
    format!("{n:032}.{:016}", 0.5).into()
}

fn id(n: u64) -> String {
    format!("1f0e{n:04x}-0000-6000-8000-{n:012x}")
}

fn meta(step: i64) -> CheckpointMetadata {
    CheckpointMetadata {
        source: CheckpointSource::Loop,
        step,
        parents: BTreeMap::new(),
        extra: serde_json::Map::new(),
    }
}

/// Puts `steps` checkpoints; each changes `count`, the first also writes a large
/// `history` that never changes again.
async fn write_thread(saver: &dyn Checkpointer, thread: &str, steps: u64) -> CheckpointConfig {
    let mut config = CheckpointConfig::thread(thread);
    let mut versions = NameMap::new();
    for n in 1..=steps {
        let mut values = NameMap::new();
        let mut new_versions = NameMap::new();
        values.insert("count".into(), Blob::encode(&n).expect("encode"));
        new_versions.insert("count".into(), version(n));
        versions.insert("count".into(), version(n));
        if n == 1 {
            let history: Vec<String> = (0..1000).map(|i| format!("message {i}")).collect();
            values.insert("history".into(), Blob::encode(&history).expect("encode"));
            new_versions.insert("history".into(), version(n));
            versions.insert("history".into(), version(n));
        }
        let checkpoint = Checkpoint {
            v: 4,
            id: id(n),
            ts: format!("2025-01-01T00:00:{:02}+00:00", n % 60),
            channel_values: values,
            channel_versions: versions.clone(),
            versions_seen: NameMap::new(),
            updated_channels: None,
        };
        config = saver
            .put(&config, checkpoint, meta(n as i64), new_versions)
            .await
            .expect("put");
    }
    config
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client
        .query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .get(0)
}

#[tokio::test]
async fn a_new_database_gets_langgraphs_migration_rows() {
    let (_saver, schema) = common::saver("migrations").await;
    let client = common::client(&schema).await;
    let rows = client
        .query("SELECT v FROM checkpoint_migrations ORDER BY v", &[])
        .await
        .expect("read migrations");
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, (0..=SCHEMA_VERSION as i32).collect::<Vec<_>>());
    assert_eq!(SCHEMA_VERSION, 9, "LangGraph's numbering: 10 migrations");
    for table in ["checkpoints", "checkpoint_blobs", "checkpoint_writes"] {
        assert_eq!(
            count(&client, &format!("SELECT count(*) FROM {table}")).await,
            0
        );
    }
    let task_path = count(
        &client,
        "SELECT count(*) FROM information_schema.columns \
         WHERE table_name = 'checkpoint_writes' AND column_name = 'task_path'",
    )
    .await;
    assert!(task_path >= 1, "migration 9 adds task_path");
}

#[tokio::test]
async fn an_older_langgraph_database_is_migrated_keeping_its_rows() {
    let (builder, schema) = common::fresh_schema("older").await;
    let client = common::client(&schema).await;
    // What an older LangGraph saver left: migrations 0..=4, one checkpoint.
    client
        .batch_execute(
            "CREATE TABLE checkpoint_migrations (v INTEGER PRIMARY KEY);
             INSERT INTO checkpoint_migrations SELECT generate_series(0, 4);
             CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
                 checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT,
                 checkpoint JSONB NOT NULL, metadata JSONB NOT NULL DEFAULT '{}',
                 PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
             CREATE TABLE checkpoint_blobs (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
                 channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT NOT NULL, blob BYTEA,
                 PRIMARY KEY (thread_id, checkpoint_ns, channel, version));
             CREATE TABLE checkpoint_writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
                 checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL,
                 channel TEXT NOT NULL, type TEXT, blob BYTEA NOT NULL,
                 PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
             INSERT INTO checkpoints (thread_id, checkpoint_id, checkpoint, metadata) VALUES
                 ('py', '1ef0', '{\"v\": 1, \"id\": \"1ef0\", \"ts\": \"2024-07-31T20:14:19.804150+00:00\",
                   \"channel_values\": {\"n\": 3}, \"channel_versions\": {\"n\": \"00000000000000000000000000000001.0\"},
                   \"versions_seen\": {}}', '{\"source\": \"loop\", \"step\": 2}');",
        )
        .await
        .expect("create an old schema");
    let saver = builder.connect().await.expect("migrate");
    let versions = count(&client, "SELECT max(v)::int8 FROM checkpoint_migrations").await;
    assert_eq!(versions, SCHEMA_VERSION);
    let tuple = saver
        .get_tuple(&CheckpointConfig::thread("py"))
        .await
        .expect("read")
        .expect("the old checkpoint is still there");
    assert_eq!(
        tuple.checkpoint.channel_values.get("n"),
        Some(&Blob::encode(&3).expect("encode")),
        "values LangGraph kept inline in the checkpoint are read"
    );
    assert!(tuple.pending_writes.is_empty());
}

#[tokio::test]
async fn a_newer_schema_is_refused_before_anything_is_written() {
    let (builder, schema) = common::fresh_schema("newer").await;
    builder.clone().connect().await.expect("create");
    let client = common::client(&schema).await;
    client
        .batch_execute("INSERT INTO checkpoint_migrations (v) VALUES (10), (11)")
        .await
        .expect("pretend a newer version migrated");
    let tables_before = count(
        &client,
        &format!("SELECT count(*) FROM information_schema.tables WHERE table_schema = '{schema}'"),
    )
    .await;
    match builder.connect().await {
        Err(PgError::SchemaTooNew { found, supported }) => {
            assert_eq!((found, supported), (11, SCHEMA_VERSION));
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    let message = PgError::SchemaTooNew {
        found: 11,
        supported: SCHEMA_VERSION,
    }
    .to_string();
    assert!(
        message.contains("schema version 11") && message.contains("upgrade stategraph"),
        "{message}"
    );
    let as_checkpoint_error = CheckpointError::from(PgError::SchemaTooNew {
        found: 11,
        supported: 9,
    });
    assert!(matches!(
        as_checkpoint_error,
        CheckpointError::Unsupported(_)
    ));
    let tables_after = count(
        &client,
        &format!("SELECT count(*) FROM information_schema.tables WHERE table_schema = '{schema}'"),
    )
    .await;
    assert_eq!(tables_before, tables_after);
    assert_eq!(
        count(&client, "SELECT max(v)::int8 FROM checkpoint_migrations").await,
        11
    );
}

#[tokio::test]
async fn a_step_writes_only_the_channels_that_changed() {
    let (saver, schema) = common::saver("layout").await;
    write_thread(&saver, "t", 50).await;
    let client = common::client(&schema).await;
    assert_eq!(count(&client, "SELECT count(*) FROM checkpoints").await, 50);
    assert_eq!(
        count(&client, "SELECT count(*) FROM checkpoint_blobs").await,
        51,
        "50 versions of `count`, one of `history`"
    );
    assert_eq!(
        count(
            &client,
            "SELECT count(*) FROM checkpoints WHERE checkpoint -> 'channel_values' <> '{}'"
        )
        .await,
        0,
        "values are not stored in the checkpoint rows"
    );
    let last = saver
        .get_tuple(&CheckpointConfig::thread("t"))
        .await
        .expect("read")
        .expect("present");
    assert_eq!(last.checkpoint.channel_values.len(), 2);
    assert_eq!(
        last.checkpoint.channel_values["count"],
        Blob::encode(&50).expect("encode")
    );
}

#[tokio::test]
async fn prune_deletes_rows_blobs_and_writes() {
    let (saver, schema) = common::saver("prune_rows").await;
    let last = write_thread(&saver, "t", 20).await;
    saver
        .put_writes(&last, vec![("count".into(), Blob::null())], "task")
        .await
        .expect("writes");
    let first = CheckpointConfig::thread("t").at(id(1));
    saver
        .put_writes(&first, vec![("count".into(), Blob::null())], "task")
        .await
        .expect("writes");
    let deleted = saver
        .prune("t", Retention::KeepLast(5))
        .await
        .expect("prune");
    assert_eq!(deleted, 15);
    let client = common::client(&schema).await;
    assert_eq!(count(&client, "SELECT count(*) FROM checkpoints").await, 5);
    assert_eq!(
        count(&client, "SELECT count(*) FROM checkpoint_blobs").await,
        6,
        "5 versions of `count` and the one of `history` the kept checkpoints use"
    );
    assert_eq!(
        count(&client, "SELECT count(*) FROM checkpoint_writes").await,
        1
    );
    let tuple = saver
        .get_tuple(&CheckpointConfig::thread("t").at(id(16)))
        .await
        .expect("read")
        .expect("kept");
    assert!(tuple.checkpoint.channel_values.contains_key("history"));
    // ts of checkpoint n is second n % 60 of 2025-01-01.
    let cutoff = graph_core::checkpoint::parse_timestamp("2025-01-01T00:00:18+00:00");
    let deleted = saver
        .prune("t", Retention::OlderThan(cutoff.expect("parses")))
        .await
        .expect("prune");
    assert_eq!(deleted, 2, "checkpoints 16 and 17");
}

#[tokio::test]
async fn values_of_python_types_are_refused_naming_the_channel() {
    let (saver, schema) = common::saver("msgpack").await;
    write_thread(&saver, "t", 1).await;
    let client = common::client(&schema).await;
    client
        .batch_execute(
            "UPDATE checkpoint_blobs SET type = 'msgpack', blob = '\\x93010203' \
             WHERE channel = 'history'",
        )
        .await
        .expect("corrupt");
    match saver.get_tuple(&CheckpointConfig::thread("t")).await {
        Err(CheckpointError::Corrupt {
            thread_id, what, ..
        }) => {
            assert_eq!(thread_id, "t");
            assert!(what.contains("`history`"), "{what}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    client
        .batch_execute("UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{v}', '5')")
        .await
        .expect("newer format");
    assert!(matches!(
        saver.get_tuple(&CheckpointConfig::thread("t")).await,
        Err(CheckpointError::Unsupported(_))
    ));
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error() {
    // Port 1 on loopback: nothing listens there.
    let result = PostgresSaver::builder("postgres://nobody@127.0.0.1:1/none")
        .expect("parses")
        .connect()
        .await;
    let err = result.expect_err("nothing listens on port 1");
    assert!(
        err.to_string()
            .contains("cannot get a PostgreSQL connection"),
        "{err}"
    );
    assert!(matches!(
        PostgresSaver::connect("postgres://[bad").await,
        Err(PgError::Config(_))
    ));
}

#[tokio::test]
async fn a_thread_lock_excludes_other_holders_until_released() {
    let (saver, _) = common::saver("locks").await;
    let lock = saver.lock_thread("t1").await.expect("lock");
    assert!(lock.is_held());
    assert_eq!(lock.thread_id(), "t1");
    // Another holder (another process, as far as PostgreSQL knows: another session).
    assert!(saver.try_lock_thread("t1").await.expect("try").is_none());
    let other = saver.try_lock_thread("t2").await.expect("try");
    assert!(other.is_some(), "other threads are not locked");
    lock.unlock().await.expect("unlock");
    let again = saver.try_lock_thread("t1").await.expect("try");
    assert!(again.is_some(), "unlocked");
    // Dropping the guard releases it too (its session ends).
    drop(again);
    let waited = tokio::time::timeout(Duration::from_secs(10), saver.lock_thread("t1"))
        .await
        .expect("a dropped lock is released")
        .expect("lock");
    // A waiter is granted the lock when the holder releases it.
    let saver2 = saver.clone();
    let waiter = tokio::spawn(async move { saver2.lock_thread("t1").await.map(|l| l.is_held()) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the lock is held"
    );
    waited.unlock().await.expect("unlock");
    let held = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter gets the lock")
        .expect("join")
        .expect("lock");
    assert!(held);
}

fn concat(mut a: Vec<u32>, b: Vec<u32>) -> Vec<u32> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Progress {
    #[reducer(concat)]
    done: Vec<u32>,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Next {
    Work,
    #[goto(end)]
    Finished,
}

const STEPS: u32 = 40;

#[node]
async fn work(p: &Progress) -> Command<Next> {
    tokio::time::sleep(Duration::from_millis(15)).await;
    let step = p.done.len() as u32;
    let next = if step + 1 == STEPS {
        Next::Finished
    } else {
        Next::Work
    };
    Command::goto(next).update(Progress::update().done(vec![step]))
}

/// The issue's "bad input": the server ends the saver's backends
/// (`pg_terminate_backend`) while a run is checkpointing. The run either finishes
/// (the saver reconnected and retried) or fails with a clear error; either way,
/// invoking the thread again completes it with every step exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_survives_its_connections_being_terminated() {
    let (mut config, schema) = common::fresh_config("terminate").await;
    // Its own name, so that only this test's connections are terminated.
    let name = format!("stategraph-{schema}");
    config.application_name(&name);
    let saver = PostgresSaver::builder_from_config(config)
        .connect()
        .await
        .expect("connect");
    let app = StateGraph::<Progress>::new()
        .add_node(work)
        .add_edge(START, work)
        .compile_with(saver.clone())
        .expect("compile");
    let thread = RunConfig::thread("victim");
    let run = tokio::spawn({
        let thread = thread.clone();
        async move { app.invoke(Progress::update(), &thread).await }
    });
    let admin = common::client(&schema).await;
    let mut terminated = 0;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(80)).await;
        let rows = admin
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = $1 AND pid <> pg_backend_pid()",
                &[&name],
            )
            .await
            .expect("terminate");
        terminated += rows.len();
    }
    assert!(terminated > 0, "no backend of the saver was terminated");
    let first = run.await.expect("join");
    let app = StateGraph::<Progress>::new()
        .add_node(work)
        .add_edge(START, work)
        .compile_with(saver.clone())
        .expect("compile");
    let state = match first {
        Ok(state) => {
            eprintln!("{terminated} backends terminated; the run retried and finished");
            state
        }
        Err(e) => {
            eprintln!("{terminated} backends terminated; the run failed: {e}");
            let message = e.to_string();
            assert!(
                message.contains("PostgreSQL") || message.contains("connection"),
                "a lost connection must be named in the error: {message}"
            );
            app.invoke(None, &thread).await.expect("resume")
        }
    };
    assert_eq!(
        state.done,
        (0..STEPS).collect::<Vec<_>>(),
        "every step exactly once"
    );
    let history = app
        .get_state_history(&thread, &Default::default())
        .await
        .expect("history");
    assert!(history.len() as u32 >= STEPS);
}

#[tokio::test]
async fn ids_postgresql_cannot_store_are_clear_errors_and_the_servers_message_shows() {
    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct One {
        n: u32,
    }
    let (saver, _) = common::saver("bad_ids").await;
    let app = StateGraph::<One>::new()
        .add_node(node_fn("a", |_: &One| One::update().n(1)))
        .add_edge(START, "a")
        .compile_with(saver.clone())
        .expect("compile");

    // A NUL byte: refused up front, saying so (not "db error").
    let err = app
        .invoke(One::update(), &RunConfig::thread("order\0-7"))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(r"thread id `order\0-7` contains a NUL byte (at byte 5)"),
        "{text}"
    );
    assert!(!text.contains("db error"), "{text}");
    let read = saver
        .get_tuple(&CheckpointConfig::thread("order\0-7"))
        .await
        .unwrap_err();
    assert!(read.to_string().contains("NUL byte"), "{read}");
    let lock = saver.lock_thread("order\0-7").await.unwrap_err();
    assert!(matches!(lock, PgError::InvalidId { .. }), "{lock}");

    // A megabyte of id: refused, and not echoed whole.
    let long = "x".repeat(1 << 20);
    let err = app
        .invoke(One::update(), &RunConfig::thread(long.as_str()))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.len() < 600, "{} bytes of message", text.len());
    assert!(
        text.contains("1048576 bytes") && text.contains("up to 1024 bytes"),
        "{text}"
    );

    // A statement the server refuses: its own message, not the driver's "db error".
    let mut versions = graph_core::checkpoint::ChannelVersions::new();
    versions.insert("bad\0name".into(), version(1));
    let checkpoint = Checkpoint {
        v: 4,
        id: id(1),
        ts: "2024-07-31T20:14:19.804150+00:00".to_owned(),
        channel_values: Default::default(),
        channel_versions: versions.clone(),
        versions_seen: Default::default(),
        updated_channels: None,
    };
    let err = saver
        .put(
            &CheckpointConfig::thread("t"),
            checkpoint,
            meta(0),
            versions,
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("ERROR 22021: invalid byte sequence") && !text.contains("db error"),
        "{text}"
    );
}
