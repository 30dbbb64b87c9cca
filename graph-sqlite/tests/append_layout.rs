//! The append layout (`SqliteSaverBuilder::append_layout`): list channels that
//! only grew are stored as what each checkpoint appended, compacted
//! periodically, and every read assembles whole values. (The conformance suite
//! runs on it too, in tests/conformance.rs.)

use graph_core::checkpoint::{
    Append, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointSource, Checkpointer, ListOptions, NameMap, SharedStr,
};
use graph_sqlite::SqliteSaver;
use stategraph::prelude::*;
use stategraph::{CompiledGraph, Durability};
use std::path::Path;

async fn open(path: &Path) -> SqliteSaver {
    SqliteSaver::builder(path)
        .append_layout(true)
        .open()
        .await
        .expect("open")
}

fn metadata(step: i64) -> CheckpointMetadata {
    CheckpointMetadata {
        source: CheckpointSource::Loop,
        step,
        parents: Default::default(),
        extra: Default::default(),
    }
}

/// Checkpoint `n` (ids "001", "002", ...) holding version `n` of `log`.
fn checkpoint(n: u32, value: Option<&str>) -> Checkpoint {
    let id = format!("{n:03}");
    Checkpoint {
        v: 4,
        id: id.clone(),
        ts: "2026-12-02T00:00:00+00:00".to_owned(),
        channel_values: value
            .map(|v| (SharedStr::from("log"), Blob::from_json(v).unwrap()))
            .into_iter()
            .collect(),
        channel_versions: [(SharedStr::from("log"), SharedStr::from(id.as_str()))]
            .into_iter()
            .collect(),
        versions_seen: NameMap::new(),
        updated_channels: None,
    }
}

fn new_version(n: u32) -> ChannelVersions {
    [(SharedStr::from("log"), SharedStr::from(format!("{n:03}")))]
        .into_iter()
        .collect()
}

fn append(base: &str, keep: usize, items: &str) -> NameMap<Append> {
    [(
        SharedStr::from("log"),
        Append {
            base: base.into(),
            keep,
            items: Blob::from_json(items).unwrap(),
        },
    )]
    .into_iter()
    .collect()
}

fn parent(n: u32) -> CheckpointConfig {
    let config = CheckpointConfig::thread("t");
    if n > 1 {
        config.at(format!("{:03}", n - 1))
    } else {
        config
    }
}

/// Puts checkpoint `n`: the whole value, or `(keep, items)` appended to `n - 1`.
async fn put(saver: &SqliteSaver, n: u32, appended: Option<(usize, &str)>, whole: &str) {
    match appended {
        Some((keep, items)) => saver
            .put_appending(
                &parent(n),
                checkpoint(n, None),
                metadata(n.into()),
                new_version(n),
                append(&format!("{:03}", n - 1), keep, items),
            )
            .await
            .unwrap(),
        None => saver
            .put(
                &parent(n),
                checkpoint(n, Some(whole)),
                metadata(n.into()),
                new_version(n),
            )
            .await
            .unwrap(),
    };
}

async fn value_at(saver: &SqliteSaver, n: u32) -> serde_json::Value {
    let config = CheckpointConfig::thread("t").at(format!("{n:03}"));
    let tuple = saver.get_tuple(&config).await.unwrap().unwrap();
    tuple.checkpoint.channel_values["log"].decode().unwrap()
}

// How appended values read back at every version, prune and refuse bad
// appends is graph-core's conformance suite (`conformance::run_appends`, run
// on this layout in tests/conformance.rs); these are SQLite's own properties.

#[tokio::test]
async fn a_saver_in_langgraphs_layout_reads_appended_rows() {
    let dir = tempfile::tempdir().unwrap();
    let saver = open(&dir.path().join("a.sqlite")).await;
    put(&saver, 1, None, "[1,2]").await;
    put(&saver, 2, Some((2, "[3]")), "").await;
    put(&saver, 3, Some((2, "[4,5]")), "").await;
    saver.close().await.unwrap();
    let plain = SqliteSaver::open(dir.path().join("a.sqlite"))
        .await
        .unwrap();
    assert!(!plain.stores_appends());
    assert_eq!(value_at(&plain, 2).await, serde_json::json!([1, 2, 3]));
    assert_eq!(value_at(&plain, 3).await, serde_json::json!([1, 2, 4, 5]));
}

#[tokio::test]
async fn a_long_chain_of_appends_is_stored_whole_again_now_and_then() {
    let dir = tempfile::tempdir().unwrap();
    let saver = open(&dir.path().join("a.sqlite")).await;
    put(&saver, 1, None, r#"["x"]"#).await;
    let item = format!("\"{}\"", "y".repeat(100));
    for n in 2..=200 {
        put(&saver, n, Some((n as usize - 1, &format!("[{item}]"))), "").await;
    }
    assert_eq!(
        value_at(&saver, 200).await.as_array().map(Vec::len),
        Some(200)
    );
    // Every value is stored whole again after a value's worth of appends:
    // a handful of whole rows, not one per version.
    let conn = rusqlite::Connection::open(dir.path().join("a.sqlite")).unwrap();
    let rows = |type_: &str| -> i64 {
        conn.query_row(
            "SELECT count(*) FROM checkpoint_blobs WHERE type = ?1",
            [type_],
            |r| r.get(0),
        )
        .unwrap()
    };
    let (whole_rows, appended_rows) = (rows("json"), rows("stategraph_append"));
    assert_eq!(whole_rows + appended_rows, 200);
    assert!((5..=12).contains(&whole_rows), "{whole_rows} whole rows");
}

#[tokio::test]
async fn the_default_layout_refuses_appends() {
    let dir = tempfile::tempdir().unwrap();
    let plain = SqliteSaver::open(dir.path().join("b.sqlite"))
        .await
        .unwrap();
    assert!(!plain.stores_appends());
    put(&plain, 1, None, "[1]").await;
    let refused = plain
        .put_appending(
            &parent(2),
            checkpoint(2, None),
            metadata(2),
            new_version(2),
            append("001", 1, "[2]"),
        )
        .await;
    assert!(
        matches!(refused, Err(CheckpointError::InvalidInput(_))),
        "{refused:?}"
    );
    assert_eq!(value_at(&plain, 1).await, serde_json::json!([1]));
}

/// Appends `new` to `list`, reporting that it kept every item (as
/// `add_messages` does when it only appends).
fn extend(mut list: Vec<String>, new: Vec<String>) -> Vec<String> {
    stategraph::channels::report_kept_prefix(list.len());
    list.extend(new);
    list
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(extend)]
    messages: Vec<String>,
}

fn message(side: &str, turn: usize) -> String {
    let mut s = format!("{side} turn {turn}: ");
    while s.len() < 400 {
        s.push_str("the quick brown fox jumps over the lazy dog. ");
    }
    s.truncate(400);
    s
}

/// Runs `turns` turns of a chat (a user message in, the assistant's answer
/// out, durability sync) on a fresh database; returns the bytes it stores.
async fn chat(path: &Path, append_layout: bool, turns: usize) -> i64 {
    let saver = SqliteSaver::builder(path)
        .append_layout(append_layout)
        .open()
        .await
        .unwrap();
    let app = StateGraph::<Chat>::new()
        .add_node(node_fn("assistant", |s: &Chat| {
            Chat::update().messages(vec![message("assistant", s.messages.len() / 2)])
        }))
        .add_edge(START, "assistant")
        .add_edge("assistant", END)
        .compile_with(saver)
        .unwrap();
    let thread = RunConfig::thread("chat").with_durability(Durability::Sync);
    for turn in 0..turns {
        let out = app
            .invoke(
                Chat::update().messages(vec![message("user", turn)]),
                &thread,
            )
            .await
            .unwrap()
            .into_state();
        assert_eq!(out.messages.len(), 2 * turn + 2);
    }
    let expected: Vec<String> = (0..turns)
        .flat_map(|t| [message("user", t), message("assistant", t)])
        .collect();
    assert_eq!(
        app.get_state(&thread).await.unwrap().values.messages,
        expected
    );
    // Every checkpoint of the history holds its whole prefix.
    let history = app
        .get_state_history(&thread, &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 3 * turns);
    for snapshot in history {
        let m = snapshot.values.messages;
        assert_eq!(m, expected[..m.len()]);
    }
    drop(app);
    // The bytes of the stored rows, read through another connection (which
    // sees the write-ahead log too): the file's size, without its slack.
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT (SELECT coalesce(sum(length(blob)), 0) FROM checkpoint_blobs) \
         + (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoint_rows) \
         + (SELECT coalesce(sum(length(value)), 0) FROM writes)",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[tokio::test]
async fn a_chat_threads_database_grows_linearly_with_its_turns_in_the_append_layout() {
    let dir = tempfile::tempdir().unwrap();
    let n = 60;
    let at_n = chat(&dir.path().join("n.sqlite"), true, n).await;
    let at_2n = chat(&dir.path().join("2n.sqlite"), true, 2 * n).await;
    // Linear: twice the turns, about twice the bytes (quadratic would be 4x).
    assert!(
        at_2n < 3 * at_n,
        "{at_n} bytes after {n} turns, {at_2n} after {}",
        2 * n
    );
    // LangGraph's layout rewrites the whole list at every step.
    let plain_2n = chat(&dir.path().join("plain.sqlite"), false, 2 * n).await;
    assert!(
        at_2n * 4 < plain_2n,
        "append layout {at_2n} bytes, LangGraph's {plain_2n}"
    );
}

/// The chat graph on `saver`.
fn chat_app(saver: SqliteSaver) -> CompiledGraph<Chat> {
    StateGraph::<Chat>::new()
        .add_node(node_fn("assistant", |s: &Chat| {
            Chat::update().messages(vec![message("assistant", s.messages.len() / 2)])
        }))
        .add_edge(START, "assistant")
        .add_edge("assistant", END)
        .compile_with(saver)
        .unwrap()
}

/// Runs turns `turns` of the chat; returns the messages after the last.
async fn turns(app: &CompiledGraph<Chat>, turns: std::ops::Range<usize>) -> Vec<String> {
    let thread = RunConfig::thread("chat").with_durability(Durability::Sync);
    let mut last = Vec::new();
    for turn in turns {
        last = app
            .invoke(
                Chat::update().messages(vec![message("user", turn)]),
                &thread,
            )
            .await
            .unwrap()
            .into_state()
            .messages;
    }
    last
}

fn expected_turns(turns: std::ops::Range<usize>) -> Vec<String> {
    turns
        .flat_map(|t| [message("user", t), message("assistant", t)])
        .collect()
}

#[tokio::test]
async fn a_saver_sees_what_another_connection_wrote_to_its_threads() {
    // Each saver caches the newest value of the lists it wrote; another
    // connection's writes (another process's, say) must never be hidden by it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.sqlite");
    let a = chat_app(open(&path).await);
    let b = chat_app(open(&path).await);
    assert_eq!(turns(&a, 0..3).await, expected_turns(0..3));
    assert_eq!(turns(&b, 3..5).await, expected_turns(0..5));
    assert_eq!(turns(&a, 5..6).await, expected_turns(0..6));
    // Another connection deletes the thread and starts it again.
    let plain = SqliteSaver::builder(&path)
        .append_layout(true)
        .open()
        .await
        .unwrap();
    plain.delete_thread("chat").await.unwrap();
    assert_eq!(turns(&b, 0..1).await, expected_turns(0..1));
    assert_eq!(turns(&a, 1..3).await, expected_turns(0..3));
    let thread = RunConfig::thread("chat");
    assert_eq!(
        b.get_state(&thread).await.unwrap().values.messages,
        expected_turns(0..3)
    );
}

/// LangGraph's state of the thread `review-1` in tests/fixtures/python_written.sqlite.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Review {
    topic: String,
    #[reducer(extend)]
    log: Vec<String>,
    count: i64,
    details: serde_json::Value,
    audit: Vec<String>,
}

/// Continues thread `review-1` of tests/fixtures/python_written.sqlite (a
/// run LangGraph's Python saver finished) for three turns; returns the
/// database and the types of the `log` rows stored.
async fn continue_python_thread(append_layout: bool) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("python.sqlite");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_written.sqlite"),
        &path,
    )
    .unwrap();
    let saver = SqliteSaver::builder(&path)
        .append_layout(append_layout)
        .open()
        .await
        .unwrap();
    let app = StateGraph::<Review>::new()
        .add_node(node_fn("note", |s: &Review| {
            Review::update().log(vec![format!("note {}", s.log.len())])
        }))
        .add_edge(START, "note")
        .add_edge("note", END)
        .compile_with(saver)
        .unwrap();
    let thread = RunConfig::thread("review-1").with_durability(Durability::Sync);
    let python_log = ["plan", "work 0 on rust", "work 1 on rust", "review: yes"];
    let mut want: Vec<String> = python_log.iter().map(|s| s.to_string()).collect();
    for turn in 0..3 {
        let out = app
            .invoke(Review::update().log(vec![format!("turn {turn}")]), &thread)
            .await
            .unwrap()
            .into_state();
        want.push(format!("turn {turn}"));
        want.push(format!("note {}", want.len()));
        assert_eq!(out.log, want, "turn {turn}");
        // Channels the turns did not change keep Python's values.
        assert_eq!(out.topic, "rust");
        assert_eq!(out.count, 11);
        assert_eq!(out.audit, ["audited"]);
    }
    // A fresh saver (no cache) reads the same.
    let fresh = StateGraph::<Review>::new()
        .add_node(node_fn("note", |_: &Review| Review::update()))
        .add_edge(START, "note")
        .add_edge("note", END)
        .compile_with(SqliteSaver::open(&path).await.unwrap())
        .unwrap();
    let state = fresh
        .get_state(&RunConfig::thread("review-1"))
        .await
        .unwrap()
        .values;
    assert_eq!(state.log, want);
    assert_eq!(state.details["text"], "héllo ✓");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let types: Vec<String> = conn
        .prepare(
            "SELECT type FROM checkpoint_blobs WHERE thread_id = 'review-1' \
             AND checkpoint_ns = '' AND channel = 'log' ORDER BY version",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (dir, types)
}

#[tokio::test]
async fn a_thread_python_started_continues_in_the_append_layout() {
    // Python's saver keeps every value inside its checkpoint rows: the first
    // checkpoint on top of one stores the values it keeps as rows, so the
    // first append has a whole value to extend.
    let (_dir, types) = continue_python_thread(true).await;
    // Python's value, then the six versions of the three turns (input and
    // node each), appended to it (one stored whole again once the appends
    // pass its size).
    assert_eq!(types.len(), 7, "{types:?}");
    assert_eq!(types[0], "json", "{types:?}");
    let appended = types.iter().filter(|t| *t == "stategraph_append").count();
    assert!(appended >= 4, "{types:?}");
}

#[tokio::test]
async fn a_thread_python_started_continues_in_langgraphs_layout() {
    let (_dir, types) = continue_python_thread(false).await;
    assert_eq!(types.len(), 7, "{types:?}");
    assert!(types.iter().all(|t| t == "json"), "{types:?}");
}
