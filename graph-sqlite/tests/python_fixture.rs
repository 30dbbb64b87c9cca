//! Reading a database written by LangGraph's own Python `SqliteSaver`
//! (tests/fixtures/python_written.sqlite, made by make_python_fixture.py), and
//! comparing with what LangGraph itself read back from it
//! (python_written.expected.json).

use graph_core::checkpoint::{
    CheckpointConfig, CheckpointError, CheckpointTuple, Checkpointer, ListOptions,
};
use graph_sqlite::SqliteSaver;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("python_written.expected.json"))
        .expect("read expected json");
    serde_json::from_str(&text).expect("parse expected json")
}

/// Opens a copy: opening migrates the file, and the committed fixture must stay
/// as Python wrote it.
async fn open_copy() -> (tempfile::TempDir, SqliteSaver) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("python_written.sqlite");
    std::fs::copy(fixture("python_written.sqlite"), &path).expect("copy fixture");
    let saver = SqliteSaver::open(&path)
        .await
        .expect("open the Python-written database");
    (dir, saver)
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("expected json: `{key}` is not a string in {v}"))
}

/// The tuple in the JSON form of make_python_fixture.py's `dump_one`.
fn as_json(t: &CheckpointTuple) -> Value {
    let values: serde_json::Map<String, Value> = t
        .checkpoint
        .channel_values
        .iter()
        .map(|(k, b)| {
            (
                k.to_string(),
                b.decode::<Value>().expect("a value read back is JSON"),
            )
        })
        .collect();
    json!({
        "thread_id": t.config.thread_id,
        "checkpoint_ns": t.config.checkpoint_ns,
        "checkpoint_id": t.config.checkpoint_id,
        "parent_checkpoint_id": t.parent_config.as_ref().and_then(|p| p.checkpoint_id.clone()),
        "metadata": serde_json::to_value(&t.metadata).expect("metadata to json"),
        "checkpoint": {
            "v": t.checkpoint.v,
            "id": t.checkpoint.id,
            "ts": t.checkpoint.ts,
            "channel_values": values,
            "channel_versions": t.checkpoint.channel_versions,
            "versions_seen": t.checkpoint.versions_seen,
            "updated_channels": t.checkpoint.updated_channels,
        },
        "pending_writes": t.pending_writes.iter().map(|w| json!([
            w.task_id, w.channel, w.value.decode::<Value>().expect("a write read back is JSON")
        ])).collect::<Vec<_>>(),
    })
}

#[tokio::test]
async fn every_checkpoint_reads_as_langgraph_reads_it() {
    let expected = expected();
    let rows = expected["review"].as_array().expect("review rows");
    assert!(rows.len() >= 6, "the fixture should hold a multi-step run");
    let (_dir, saver) = open_copy().await;
    for row in rows {
        let config = CheckpointConfig {
            thread_id: str_of(row, "thread_id").into(),
            checkpoint_ns: str_of(row, "checkpoint_ns").into(),
            checkpoint_id: Some(str_of(row, "checkpoint_id").into()),
        };
        let tuple = saver
            .get_tuple(&config)
            .await
            .unwrap_or_else(|e| panic!("get_tuple({config:?}): {e}"))
            .unwrap_or_else(|| panic!("get_tuple({config:?}) found nothing"));
        assert_eq!(
            &as_json(&tuple),
            row,
            "checkpoint {config:?} must read as LangGraph reads it"
        );
    }
}

#[tokio::test]
async fn list_matches_langgraph_order_and_namespaces() {
    let expected = expected();
    let rows = expected["review"].as_array().expect("review rows");
    let (_dir, saver) = open_copy().await;
    // exotic-1 cannot be read (see below), and would fail the whole list.
    saver
        .delete_thread("exotic-1")
        .await
        .expect("delete a Python thread");
    let all = saver
        .list(None, &ListOptions::default())
        .await
        .expect("list(None)");
    let ours: Vec<Value> = all
        .iter()
        .filter(|t| t.config.thread_id == "review-1")
        .map(as_json)
        .collect();
    assert_eq!(
        &ours, rows,
        "list(None) must give LangGraph's checkpoints, newest first"
    );

    let root = CheckpointConfig::thread("review-1");
    let listed = saver
        .list(Some(&root), &ListOptions::default())
        .await
        .expect("list(root)");
    let root_rows: Vec<&Value> = rows.iter().filter(|r| r["checkpoint_ns"] == "").collect();
    assert_eq!(listed.len(), root_rows.len(), "list of the root namespace");
    assert!(
        expected["namespaces"]
            .as_array()
            .is_some_and(|n| n.len() == 2),
        "the fixture has a subgraph namespace"
    );

    let mut filter = serde_json::Map::new();
    filter.insert("source".to_owned(), json!("input"));
    let inputs = saver
        .list(
            Some(&root),
            &ListOptions {
                filter,
                ..ListOptions::default()
            },
        )
        .await
        .expect("list with filter");
    assert_eq!(
        inputs.len(),
        1,
        "one input checkpoint in the root namespace"
    );
    assert_eq!(inputs[0].metadata.step, -1);
}

#[tokio::test]
async fn the_latest_checkpoint_holds_the_final_state() {
    let expected = expected();
    let (_dir, saver) = open_copy().await;
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("review-1"))
        .await
        .expect("get_tuple")
        .expect("a latest checkpoint");
    let final_state = expected["final_state"].as_object().expect("final state");
    for (key, value) in final_state {
        let got = latest
            .checkpoint
            .channel_values
            .get(key.as_str())
            .map(|b| b.decode::<Value>().expect("json"));
        assert_eq!(got.as_ref(), Some(value), "final value of `{key}`");
    }
}

#[tokio::test]
async fn interrupt_send_and_resume_writes_are_readable() {
    let (_dir, saver) = open_copy().await;
    let all = saver
        .list(
            Some(&CheckpointConfig::thread("review-1")),
            &ListOptions::default(),
        )
        .await
        .expect("list(review-1)");
    let writes: Vec<_> = all.iter().flat_map(|t| t.pending_writes.iter()).collect();
    let interrupt = writes
        .iter()
        .find(|w| w.channel == "__interrupt__")
        .expect("an interrupt write");
    let value: Value = interrupt.value.decode().expect("json");
    assert_eq!(
        value[0]["value"],
        json!({"question": "approve?", "count": 1})
    );
    assert!(
        value[0]["id"].is_string(),
        "an interrupt keeps its id: {value}"
    );
    assert!(
        value[0].get("response_schema").is_some(),
        "and its other fields: {value}"
    );
    let resume = writes
        .iter()
        .find(|w| w.channel == "__resume__" && w.task_id == "00000000-0000-0000-0000-000000000000")
        .expect("a resume write under the null task id");
    assert_eq!(resume.value.decode::<Value>().expect("json"), json!("yes"));
    let send = writes
        .iter()
        .find(|w| w.channel == "__pregel_tasks")
        .expect("a Send write");
    assert_eq!(
        send.value.decode::<Value>().expect("json"),
        json!({"node": "work", "arg": {"topic": "rust", "n": 0}})
    );
}

#[tokio::test]
async fn a_python_object_without_json_form_is_a_clear_error() {
    let expected = expected();
    let latest_id = expected["exotic"][0]["checkpoint_id"]
        .as_str()
        .expect("exotic id")
        .to_owned();
    let (_dir, saver) = open_copy().await;
    let err = saver
        .get_tuple(&CheckpointConfig::thread("exotic-1"))
        .await
        .expect_err("a datetime has no JSON form");
    match &err {
        CheckpointError::Corrupt {
            thread_id,
            checkpoint_id,
            what,
            ..
        } => {
            assert_eq!(thread_id, "exotic-1");
            assert_eq!(checkpoint_id, &latest_id);
            assert!(what.contains("`when`"), "names the channel: {what}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("exotic-1")
            && message.contains(&latest_id)
            && message.contains("datetime.datetime"),
        "the message names thread, checkpoint and Python type: {message}"
    );
    let listed = saver
        .list(
            Some(&CheckpointConfig::thread("exotic-1")),
            &ListOptions::default(),
        )
        .await;
    assert!(
        matches!(listed, Err(CheckpointError::Corrupt { .. })),
        "list of the thread fails the same way: {listed:?}"
    );
    // The other thread is unaffected.
    assert!(saver
        .get_tuple(&CheckpointConfig::thread("review-1"))
        .await
        .expect("other thread")
        .is_some());
}

#[tokio::test]
async fn opening_keeps_every_python_row() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("db.sqlite");
    std::fs::copy(fixture("python_written.sqlite"), &path).expect("copy fixture");
    let count = |sql: &str| -> i64 {
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        conn.query_row(sql, [], |r| r.get(0)).expect("count")
    };
    let checkpoints = count("SELECT count(*) FROM checkpoints");
    let writes = count("SELECT count(*) FROM writes");
    let saver = SqliteSaver::open(&path).await.expect("open");
    saver.close().await.expect("close");
    assert_eq!(count("SELECT count(*) FROM checkpoint_rows"), checkpoints);
    assert_eq!(
        count("SELECT count(*) FROM checkpoints"),
        checkpoints,
        "the view shows them all"
    );
    assert_eq!(count("SELECT count(*) FROM writes"), writes);
    assert_eq!(
        count("SELECT count(*) FROM checkpoints WHERE type = 'msgpack'"),
        checkpoints,
        "Python's rows pass through the view unchanged"
    );
    // Opening again is a no-op.
    let saver = SqliteSaver::open(&path).await.expect("reopen");
    saver.close().await.expect("close");
    assert_eq!(
        count("SELECT max(v) FROM checkpoint_migrations"),
        graph_sqlite::SCHEMA_VERSION
    );
}
