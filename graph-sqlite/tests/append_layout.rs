//! The append layout (`SqliteSaverBuilder::append_layout`): list channels that
//! only grew are stored as what each checkpoint appended, compacted
//! periodically, and every read assembles whole values. (The conformance suite
//! runs on it too, in tests/conformance.rs.)

use graph_core::checkpoint::{
    Append, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointSource, Checkpointer, ListOptions, NameMap, Retention, SharedStr,
};
use graph_sqlite::SqliteSaver;
use stategraph::prelude::*;
use stategraph::Durability;
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

#[tokio::test]
async fn appended_values_read_back_whole_at_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let saver = open(&dir.path().join("a.sqlite")).await;
    let mut expected = vec![serde_json::json!([1, 2])];
    put(&saver, 1, None, "[1,2]").await;
    // Appends, a replacement of the last item (keep 3 of 4), an empty append.
    let steps: [(usize, &str, serde_json::Value); 4] = [
        (2, "[3]", serde_json::json!([1, 2, 3])),
        (
            3,
            r#"["a",{"b":[4]}]"#,
            serde_json::json!([1, 2, 3, "a", {"b": [4]}]),
        ),
        (4, "[5]", serde_json::json!([1, 2, 3, "a", 5])),
        (5, "[]", serde_json::json!([1, 2, 3, "a", 5])),
    ];
    for (i, (keep, items, whole)) in steps.into_iter().enumerate() {
        put(&saver, i as u32 + 2, Some((keep, items)), "").await;
        expected.push(whole);
    }
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(
            &value_at(&saver, i as u32 + 1).await,
            want,
            "version {}",
            i + 1
        );
    }
    let all = saver
        .list(
            Some(&CheckpointConfig::thread("t")),
            &ListOptions::default(),
        )
        .await
        .unwrap();
    let listed: Vec<serde_json::Value> = all
        .iter()
        .rev()
        .map(|t| t.checkpoint.channel_values["log"].decode().unwrap())
        .collect();
    assert_eq!(listed, expected);
    // A saver in LangGraph's layout reads the same file.
    saver.close().await.unwrap();
    let plain = SqliteSaver::open(dir.path().join("a.sqlite"))
        .await
        .unwrap();
    assert_eq!(value_at(&plain, 5).await, expected[4]);
}

#[tokio::test]
async fn a_long_chain_of_appends_is_compacted_and_prunes_keep_what_they_extend() {
    let dir = tempfile::tempdir().unwrap();
    let saver = open(&dir.path().join("a.sqlite")).await;
    put(&saver, 1, None, r#"["x"]"#).await;
    let item = format!("\"{}\"", "y".repeat(100));
    for n in 2..=200 {
        put(&saver, n, Some((n as usize - 1, &format!("[{item}]"))), "").await;
    }
    let whole = value_at(&saver, 200).await;
    assert_eq!(whole.as_array().map(Vec::len), Some(200));
    let middle = value_at(&saver, 150).await;
    assert_eq!(middle.as_array().map(Vec::len), Some(150));
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
    saver.prune("t", Retention::KeepLast(60)).await.unwrap();
    assert_eq!(value_at(&saver, 150).await, middle);
    assert_eq!(value_at(&saver, 200).await, whole);
    assert!(saver
        .get_tuple(&CheckpointConfig::thread("t").at("100"))
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn an_append_to_a_missing_version_is_refused_and_the_default_layout_refuses_appends() {
    let dir = tempfile::tempdir().unwrap();
    let saver = open(&dir.path().join("a.sqlite")).await;
    put(&saver, 1, None, "[1]").await;
    let refused = saver
        .put_appending(
            &parent(2),
            checkpoint(2, None),
            metadata(2),
            new_version(2),
            append("009", 1, "[2]"),
        )
        .await;
    assert!(
        matches!(refused, Err(CheckpointError::InvalidInput(_))),
        "{refused:?}"
    );
    assert_eq!(value_at(&saver, 1).await, serde_json::json!([1]));
    let plain = SqliteSaver::open(dir.path().join("b.sqlite"))
        .await
        .unwrap();
    assert!(!plain.stores_appends());
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
