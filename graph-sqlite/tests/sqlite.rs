//! SqliteSaver beyond the conformance suite: persistence across reopen, bad input
//! (newer schema, corrupted or foreign values, a file that is not a database),
//! concurrency, and the O(changed channels) storage layout.

use graph_core::checkpoint::{
    Blob, ChannelVersion, Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata,
    CheckpointSource, Checkpointer, ListOptions, NameMap,
};
use graph_sqlite::SqliteSaver;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

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

/// Puts `steps` checkpoints on `thread`; step `n` sets channel `count` to `n`, and
/// step 1 also writes `history` (never changed again). Returns the last config.
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
            values.insert(
                "history".into(),
                Blob::encode(&json!(["a", "b"])).expect("encode"),
            );
            new_versions.insert("history".into(), version(n));
            versions.insert("history".into(), version(n));
        }
        let checkpoint = Checkpoint {
            v: 4,
            id: id(n),
            ts: "2025-01-01T00:00:00+00:00".to_owned(),
            channel_values: values,
            channel_versions: versions.clone(),
            versions_seen: NameMap::new(),
            updated_channels: None,
        };
        config = saver
            .put(&config, checkpoint, meta(n as i64), new_versions)
            .await
            .unwrap_or_else(|e| panic!("put {thread}/{n}: {e}"));
    }
    config
}

fn value(t: &graph_core::checkpoint::CheckpointTuple, channel: &str) -> Option<Value> {
    t.checkpoint
        .channel_values
        .get(channel)
        .map(|b| b.decode().expect("json"))
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("raw open")
}

#[tokio::test]
async fn data_survives_close_and_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("persist.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let last = write_thread(&saver, "t", 3).await;
    saver
        .put_writes(
            &last,
            vec![("count".into(), Blob::encode(&9).expect("encode"))],
            "task",
        )
        .await
        .expect("put_writes");
    let before = saver
        .list(None, &ListOptions::default())
        .await
        .expect("list");
    saver.close().await.expect("close");

    let saver = SqliteSaver::open(&path).await.expect("reopen");
    let after = saver
        .list(None, &ListOptions::default())
        .await
        .expect("list");
    assert_eq!(
        after, before,
        "everything stored before closing is there after reopening"
    );
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("t"))
        .await
        .expect("get")
        .expect("latest");
    assert_eq!(value(&latest, "count"), Some(json!(3)));
    assert_eq!(value(&latest, "history"), Some(json!(["a", "b"])));
    assert_eq!(latest.pending_writes.len(), 1);
    // Dropping without close() also keeps the data (the thread closes it).
    drop(saver);
    let saver = SqliteSaver::open(&path).await.expect("reopen after drop");
    assert_eq!(
        saver
            .list(None, &ListOptions::default())
            .await
            .expect("list"),
        before
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("newer.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    write_thread(&saver, "t", 2).await;
    saver.close().await.expect("close");
    raw(&path)
        .execute("INSERT INTO checkpoint_migrations (v) VALUES (7)", [])
        .expect("bump version");
    let bytes = std::fs::read(&path).expect("read file");

    let err = SqliteSaver::open(&path).await.expect_err("newer schema");
    match &err {
        CheckpointError::Unsupported(message) => {
            assert!(
                message.contains("version 7"),
                "names the version: {message}"
            );
            assert!(
                message.contains("newer.sqlite"),
                "names the file: {message}"
            );
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert!(err.to_string().contains("upgrade"), "{err}");
    assert_eq!(
        std::fs::read(&path).expect("read file"),
        bytes,
        "the file is not modified"
    );
    let conn = raw(&path);
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM checkpoint_rows", [], |r| r.get(0))
        .expect("count");
    assert_eq!(rows, 2, "nothing stored is damaged");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("notes.txt");
    let text = "this is not a database, but it is long enough to have a header....".repeat(20);
    std::fs::write(&path, &text).expect("write");
    let err = SqliteSaver::open(&path).await.expect_err("not a database");
    assert!(matches!(err, CheckpointError::Storage(_)), "{err:?}");
    assert!(
        err.to_string().contains("notes.txt"),
        "names the file: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        text,
        "the file is untouched"
    );
}

/// Corrupts one thing of thread `bad` with `sql`, then checks that reading it is
/// a `Corrupt` error naming the thread, checkpoint and `what`, and that thread
/// `good` and later writes still work.
async fn corrupted(sql: &str, what: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("corrupt.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let bad = write_thread(&saver, "bad", 2).await;
    saver
        .put_writes(
            &bad,
            vec![("count".into(), Blob::encode(&5).expect("encode"))],
            "task-1",
        )
        .await
        .expect("put_writes");
    write_thread(&saver, "good", 2).await;
    raw(&path).execute_batch(sql).expect("corrupt");

    let err = saver
        .get_tuple(&CheckpointConfig::thread("bad"))
        .await
        .expect_err(what);
    match &err {
        CheckpointError::Corrupt {
            thread_id,
            checkpoint_id,
            what: got,
            ..
        } => {
            assert_eq!(thread_id, "bad");
            assert_eq!(checkpoint_id, &id(2));
            assert!(got.contains(what), "`{got}` should mention `{what}`");
        }
        other => panic!("{what}: expected Corrupt, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("`bad`") && message.contains(&id(2)),
        "{message}"
    );
    assert!(
        saver
            .list(
                Some(&CheckpointConfig::thread("bad")),
                &ListOptions::default()
            )
            .await
            .is_err(),
        "list of the thread reports it too"
    );
    let good = saver
        .get_tuple(&CheckpointConfig::thread("good"))
        .await
        .expect("the other thread reads")
        .expect("present");
    assert_eq!(value(&good, "count"), Some(json!(2)));
    // The database still takes writes, and the bad thread can be deleted.
    write_thread(&saver, "new", 1).await;
    saver
        .delete_thread("bad")
        .await
        .expect("delete the bad thread");
    assert!(saver
        .get_tuple(&CheckpointConfig::thread("bad"))
        .await
        .expect("get")
        .is_none());
}

#[tokio::test]
async fn a_corrupted_value_is_an_error_naming_thread_checkpoint_and_channel() {
    corrupted(
        "UPDATE checkpoint_blobs SET blob = '{\"half\": ' WHERE thread_id = 'bad' AND channel = 'history'",
        "channel `history`",
    )
    .await;
}

#[tokio::test]
async fn a_foreign_value_type_is_an_error() {
    corrupted(
        "UPDATE checkpoint_blobs SET type = 'pickle', blob = x'80049500' WHERE thread_id = 'bad' AND channel = 'count'",
        "channel `count`",
    )
    .await;
}

#[tokio::test]
async fn a_corrupted_msgpack_value_is_an_error() {
    corrupted(
        "UPDATE checkpoint_blobs SET type = 'msgpack', blob = x'c1' WHERE thread_id = 'bad' AND channel = 'count'",
        "channel `count`",
    )
    .await;
}

#[tokio::test]
async fn a_corrupted_checkpoint_row_is_an_error() {
    corrupted(
        "UPDATE checkpoint_rows SET checkpoint = 'garbage' WHERE thread_id = 'bad'",
        "checkpoint",
    )
    .await;
}

#[tokio::test]
async fn corrupted_metadata_is_an_error() {
    corrupted(
        "UPDATE checkpoint_rows SET metadata = x'00ff' WHERE thread_id = 'bad'",
        "metadata",
    )
    .await;
}

#[tokio::test]
async fn a_corrupted_pending_write_is_an_error() {
    corrupted(
        "UPDATE writes SET value = 'nope' WHERE thread_id = 'bad'",
        "pending write of task `task-1`",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_puts_to_different_threads() {
    let saver = Arc::new(SqliteSaver::in_memory().await.expect("open"));
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let saver = Arc::clone(&saver);
            tokio::spawn(async move {
                let thread = format!("thread-{t}");
                write_thread(saver.as_ref(), &thread, 25).await;
                let latest = saver
                    .get_tuple(&CheckpointConfig::thread(&thread))
                    .await
                    .expect("get")
                    .expect("latest");
                assert_eq!(value(&latest, "count"), Some(json!(25)));
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    let all = saver
        .list(None, &ListOptions::default())
        .await
        .expect("list");
    assert_eq!(all.len(), 8 * 25);
    for t in 0..8 {
        let thread = format!("thread-{t}");
        let history = saver
            .list(
                Some(&CheckpointConfig::thread(&thread)),
                &ListOptions::default(),
            )
            .await
            .expect("list");
        assert_eq!(history.len(), 25, "{thread}");
        assert!(history
            .iter()
            .all(|c| value(c, "history") == Some(json!(["a", "b"]))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_savers_share_one_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("shared.sqlite");
    let a = Arc::new(SqliteSaver::open(&path).await.expect("open a"));
    let b = Arc::new(SqliteSaver::open(&path).await.expect("open b"));
    let (ra, rb) = tokio::join!(
        {
            let a = Arc::clone(&a);
            tokio::spawn(async move { write_thread(a.as_ref(), "from-a", 30).await })
        },
        {
            let b = Arc::clone(&b);
            tokio::spawn(async move { write_thread(b.as_ref(), "from-b", 30).await })
        },
    );
    ra.expect("a");
    rb.expect("b");
    for saver in [&a, &b] {
        let all = saver
            .list(None, &ListOptions::default())
            .await
            .expect("list");
        assert_eq!(all.len(), 60, "each connection sees both threads");
    }
}

#[tokio::test]
async fn an_unchanged_value_is_stored_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("size.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let big: Vec<String> = (0..2_000).map(|i| format!("message number {i}")).collect();
    let big_len = serde_json::to_string(&big).expect("json").len() as i64;
    let mut config = CheckpointConfig::thread("t");
    let mut versions = NameMap::new();
    for n in 1..=50u64 {
        let mut values = NameMap::new();
        let mut new_versions = NameMap::new();
        if n == 1 {
            values.insert("history".into(), Blob::encode(&big).expect("encode"));
            new_versions.insert("history".into(), version(1));
            versions.insert("history".into(), version(1));
        }
        values.insert("count".into(), Blob::encode(&n).expect("encode"));
        new_versions.insert("count".into(), version(n));
        versions.insert("count".into(), version(n));
        let checkpoint = Checkpoint {
            v: 4,
            id: id(n),
            ts: String::new(),
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
    saver.close().await.expect("close");
    let conn = raw(&path);
    let stored: i64 = conn
        .query_row(
            "SELECT sum(length(blob)) FROM checkpoint_blobs WHERE thread_id = 't'",
            [],
            |r| r.get(0),
        )
        .expect("sum");
    let rows: i64 = conn
        .query_row(
            "SELECT sum(length(checkpoint)) FROM checkpoint_rows WHERE thread_id = 't'",
            [],
            |r| r.get(0),
        )
        .expect("sum");
    assert!(
        stored < big_len + 50 * 8,
        "50 checkpoints store the big value once: {stored} bytes of values for a {big_len}-byte value"
    );
    assert!(
        rows < 50 * 400,
        "checkpoint rows hold no values: {rows} bytes"
    );
    // And Python's view of the latest checkpoint is still complete.
    let text: String = conn
        .query_row(
            "SELECT checkpoint FROM checkpoints WHERE thread_id = 't' ORDER BY checkpoint_id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .expect("view");
    let viewed: Value = serde_json::from_str(&text).expect("view json");
    assert_eq!(viewed["channel_values"]["history"], json!(big));
    assert_eq!(viewed["channel_values"]["count"], json!(50));
}

#[tokio::test]
async fn the_view_shows_what_get_tuple_returns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("view.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open");
    graph_core::checkpoint::conformance::run_all(&saver).await;
    let all = saver
        .list(None, &ListOptions::default())
        .await
        .expect("list");
    assert!(all.len() > 20);
    let conn = raw(&path);
    let mut stmt = conn
        .prepare(
            "SELECT type, checkpoint, metadata, parent_checkpoint_id FROM checkpoints \
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3",
        )
        .expect("prepare");
    for t in &all {
        let (type_, text, metadata, parent): (String, String, String, Option<String>) = stmt
            .query_row(
                [
                    t.config.thread_id.as_str(),
                    t.config.checkpoint_ns.as_str(),
                    t.config.checkpoint_id.as_deref().expect("id"),
                ],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .expect("row in view");
        assert_eq!(type_, "json");
        let viewed: Value = serde_json::from_str(&text).expect("json");
        let expected: BTreeMap<String, Value> = t
            .checkpoint
            .channel_values
            .iter()
            .map(|(k, b)| (k.to_string(), b.decode().expect("json")))
            .collect();
        assert_eq!(
            viewed["channel_values"],
            serde_json::to_value(&expected).expect("json"),
            "view of {:?}",
            t.config
        );
        assert_eq!(
            viewed["channel_versions"],
            serde_json::to_value(&t.checkpoint.channel_versions).expect("json")
        );
        let metadata: Value = serde_json::from_str(&metadata).expect("json");
        assert_eq!(metadata, serde_json::to_value(&t.metadata).expect("json"));
        assert_eq!(
            parent,
            t.parent_config
                .as_ref()
                .and_then(|p| p.checkpoint_id.as_ref().map(ToString::to_string))
        );
    }
}

#[tokio::test]
async fn rows_written_through_the_view_are_read_leniently() {
    // What an older Python saver wrote: a JSON-typed row with every value inline
    // and integer versions, inserted through the view as Python does.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("legacy.sqlite");
    SqliteSaver::open(&path)
        .await
        .expect("create")
        .close()
        .await
        .expect("close");
    let checkpoint = json!({
        "v": 1, "id": id(1), "ts": "2024-01-01T00:00:00+00:00",
        "channel_values": {"count": 3, "msg": "hi"},
        "channel_versions": {"count": 2, "msg": 1},
        "versions_seen": {"node": {"count": 1}},
        "pending_sends": []
    });
    raw(&path)
        .execute(
            "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, \
             parent_checkpoint_id, type, checkpoint, metadata) VALUES ('legacy', '', ?1, NULL, 'json', ?2, ?3)",
            rusqlite::params![
                id(1),
                checkpoint.to_string().into_bytes(),
                br#"{"source": "input", "step": -1, "writes": null}"#.to_vec()
            ],
        )
        .expect("insert through the view");
    raw(&path)
        .execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value) \
             VALUES ('legacy', '', ?1, 'task', 0, 'msg', 'null', x'')",
            [id(1)],
        )
        .expect("insert write");
    let saver = SqliteSaver::open(&path).await.expect("open");
    let t = saver
        .get_tuple(&CheckpointConfig::thread("legacy"))
        .await
        .expect("get")
        .expect("found");
    assert_eq!(value(&t, "count"), Some(json!(3)));
    assert_eq!(value(&t, "msg"), Some(json!("hi")));
    assert_eq!(t.checkpoint.channel_versions["count"], format!("{:032}", 2));
    assert_eq!(
        t.checkpoint.versions_seen["node"]["count"],
        format!("{:032}", 1)
    );
    assert_eq!(t.metadata.source, CheckpointSource::Input);
    assert_eq!(t.pending_writes.len(), 1);
    assert_eq!(t.pending_writes[0].value, Blob::null());
    // Python reading it back through the view gets the row as it wrote it.
    let viewed: Vec<u8> = raw(&path)
        .query_row(
            "SELECT checkpoint FROM checkpoints WHERE thread_id = 'legacy'",
            [],
            |r| r.get(0),
        )
        .expect("view");
    let viewed: Value = serde_json::from_slice(&viewed).expect("json");
    assert_eq!(viewed["channel_values"], json!({"count": 3, "msg": "hi"}));
}

#[tokio::test]
async fn operations_run_in_call_order() {
    let saver = SqliteSaver::in_memory().await.expect("open");
    let checkpoint = Checkpoint {
        v: 4,
        id: id(1),
        ts: String::new(),
        channel_values: NameMap::new(),
        channel_versions: NameMap::new(),
        versions_seen: NameMap::new(),
        updated_channels: None,
    };
    let config = CheckpointConfig::thread("t");
    let put = saver.put(&config, checkpoint, meta(0), NameMap::new());
    let delete = saver.delete_thread("t");
    // Awaited in the opposite order: the put, called first, still runs first.
    delete.await.expect("delete");
    put.await.expect("put");
    assert!(
        saver.get_tuple(&config).await.expect("get").is_none(),
        "the delete, called after the put, removed it"
    );
}

/// Workers that start together open one new database at once: each sees either
/// no tables or the whole migrated schema, never half of it (a schema read
/// across another connection's migration commit was once refused as foreign).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn savers_opened_at_once_on_a_new_database_all_open() {
    for round in 0..30 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh.db");
        let opens = (0..6).map(|_| {
            let path = path.clone();
            tokio::spawn(async move { SqliteSaver::open(&path).await })
        });
        for (i, open) in futures::future::join_all(opens)
            .await
            .into_iter()
            .enumerate()
        {
            if let Err(e) = open.unwrap() {
                panic!("round {round}, saver {i}: {e}");
            }
        }
        // And the schema they agreed on works.
        let saver = SqliteSaver::open(&path).await.unwrap();
        write_thread(&saver, "t", 1).await;
    }
}

/// A saver opened while another connection holds the new database's write lock
/// waits for it, rather than failing to switch the file to WAL ("database is
/// locked": that switch does not wait by itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saver_opened_while_another_connection_writes_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.db");
    let holder = raw(&path);
    holder
        .execute_batch("CREATE TABLE other_app (x INTEGER); BEGIN IMMEDIATE; INSERT INTO other_app VALUES (1);")
        .unwrap();
    let opening = tokio::spawn({
        let path = path.clone();
        async move { SqliteSaver::open(&path).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    holder.execute_batch("COMMIT").unwrap();
    let saver = opening.await.unwrap().unwrap();
    write_thread(&saver, "t", 1).await;
}
