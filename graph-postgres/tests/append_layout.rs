//! The append layout (`PostgresSaverBuilder::append_layout`): list channels
//! that only grew are stored as what each checkpoint appended, compacted
//! periodically. How appended values read back, prune and refuse bad appends
//! is graph-core's conformance suite (tests/conformance.rs runs it on this
//! layout); these are the properties of the Postgres rows.

mod common;

use graph_core::checkpoint::{
    Append, Blob, CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointSource,
    Checkpointer, ListOptions, NameMap, SharedStr,
};
use graph_postgres::PostgresSaver;
use stategraph::prelude::*;
use stategraph::{CompiledGraph, Durability};

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

fn chat_app(saver: PostgresSaver) -> CompiledGraph<Chat> {
    StateGraph::<Chat>::new()
        .add_node(node_fn("assistant", |s: &Chat| {
            Chat::update().messages(vec![message("assistant", s.messages.len() / 2)])
        }))
        .add_edge(START, "assistant")
        .add_edge("assistant", END)
        .compile_with(saver)
        .unwrap()
}

fn expected_turns(turns: std::ops::Range<usize>) -> Vec<String> {
    turns
        .flat_map(|t| [message("user", t), message("assistant", t)])
        .collect()
}

/// Runs turns `turns` of thread `thread`; returns the messages after the last.
async fn turns(
    app: &CompiledGraph<Chat>,
    thread: &str,
    turns: std::ops::Range<usize>,
) -> Vec<String> {
    let config = RunConfig::thread(thread).with_durability(Durability::Sync);
    let mut last = Vec::new();
    for turn in turns {
        last = app
            .invoke(
                Chat::update().messages(vec![message("user", turn)]),
                &config,
            )
            .await
            .unwrap()
            .into_state()
            .messages;
    }
    last
}

/// The bytes of the thread's stored rows.
async fn stored_bytes(schema: &str, thread: &str) -> i64 {
    let client = common::client(schema).await;
    let row = client
        .query_one(
            "SELECT (SELECT coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs WHERE thread_id = $1)::int8
                + (SELECT coalesce(sum(octet_length(checkpoint::text) + octet_length(metadata::text)), 0)
                   FROM checkpoints WHERE thread_id = $1)::int8",
            &[&thread],
        )
        .await
        .unwrap();
    row.get(0)
}

#[tokio::test]
async fn a_chat_threads_rows_grow_linearly_with_its_turns_in_the_append_layout() {
    let (builder, schema) = common::fresh_schema("append_linear").await;
    let app = chat_app(builder.clone().append_layout(true).connect().await.unwrap());
    let n = 60;
    assert_eq!(turns(&app, "n", 0..n).await, expected_turns(0..n));
    assert_eq!(turns(&app, "2n", 0..2 * n).await, expected_turns(0..2 * n));
    let (at_n, at_2n) = (
        stored_bytes(&schema, "n").await,
        stored_bytes(&schema, "2n").await,
    );
    // Linear: twice the turns, about twice the bytes (quadratic would be 4x).
    assert!(
        at_2n < 3 * at_n,
        "{at_n} bytes after {n} turns, {at_2n} after {}",
        2 * n
    );
    // LangGraph's layout rewrites the whole list at every step.
    let plain = chat_app(builder.connect().await.unwrap());
    assert_eq!(
        turns(&plain, "plain", 0..2 * n).await,
        expected_turns(0..2 * n)
    );
    let plain_2n = stored_bytes(&schema, "plain").await;
    assert!(
        at_2n * 4 < plain_2n,
        "append layout {at_2n} bytes, LangGraph's {plain_2n}"
    );
    // Every checkpoint of the history holds its whole prefix, read by a
    // saver in the default layout (which reads both).
    let history = plain
        .get_state_history(&RunConfig::thread("2n"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 3 * 2 * n);
    let all = expected_turns(0..2 * n);
    for snapshot in history {
        let m = snapshot.values.messages;
        assert_eq!(m, all[..m.len()]);
    }
}

#[tokio::test]
async fn a_saver_sees_what_another_saver_wrote_to_its_threads() {
    // Each saver caches the newest value of the lists it wrote; another
    // saver's writes (another process's, say) must never be hidden by it.
    let (builder, _) = common::fresh_schema("append_shared").await;
    let a = chat_app(builder.clone().append_layout(true).connect().await.unwrap());
    let b = chat_app(builder.clone().append_layout(true).connect().await.unwrap());
    assert_eq!(turns(&a, "chat", 0..3).await, expected_turns(0..3));
    assert_eq!(turns(&b, "chat", 3..5).await, expected_turns(0..5));
    assert_eq!(turns(&a, "chat", 5..6).await, expected_turns(0..6));
    let other = builder.append_layout(true).connect().await.unwrap();
    other.delete_thread("chat").await.unwrap();
    // The assistant numbers its turns by the thread's messages: from 0 again.
    assert_eq!(turns(&b, "chat", 0..1).await, expected_turns(0..1));
    assert_eq!(turns(&a, "chat", 1..3).await, expected_turns(0..3));
}

#[tokio::test]
async fn the_default_layout_refuses_appends() {
    let (saver, _) = common::saver("append_refused").await;
    assert!(!saver.stores_appends());
    let config = CheckpointConfig::thread("t");
    let checkpoint = graph_core::checkpoint::Checkpoint {
        v: 4,
        id: "1f0a0000-0000-6000-8000-000000000001".to_owned(),
        ts: "2026-12-02T00:00:00+00:00".to_owned(),
        channel_values: NameMap::new(),
        channel_versions: [(SharedStr::from("log"), SharedStr::from("2"))]
            .into_iter()
            .collect(),
        versions_seen: NameMap::new(),
        updated_channels: None,
    };
    let appends: NameMap<Append> = [(
        SharedStr::from("log"),
        Append {
            base: "1".into(),
            keep: 0,
            items: Blob::from_json("[1]").unwrap(),
        },
    )]
    .into_iter()
    .collect();
    let refused = saver
        .put_appending(
            &config,
            checkpoint.clone(),
            CheckpointMetadata {
                source: CheckpointSource::Loop,
                step: 1,
                parents: Default::default(),
                extra: Default::default(),
            },
            checkpoint.channel_versions.clone(),
            appends,
        )
        .await;
    assert!(
        matches!(refused, Err(CheckpointError::InvalidInput(_))),
        "{refused:?}"
    );
    assert!(saver.get_tuple(&config).await.unwrap().is_none());
}

/// Checkpoint `n` (version `n` of `log`) after checkpoint `n - 1`: the whole
/// value, or `items` appended to version `n - 1`.
async fn put_log(
    saver: &PostgresSaver,
    n: u32,
    whole: Option<&str>,
    items: &str,
) -> Result<CheckpointConfig, CheckpointError> {
    let id = |n: u32| format!("1f0a0000-0000-6000-8000-{n:012}");
    let config = CheckpointConfig::thread("t");
    let config = if n > 1 { config.at(id(n - 1)) } else { config };
    let version = SharedStr::from(format!("{n:03}"));
    let versions: NameMap<SharedStr> = [(SharedStr::from("log"), version)].into_iter().collect();
    let mut checkpoint = graph_core::checkpoint::Checkpoint {
        v: 4,
        id: id(n),
        ts: "2026-12-02T00:00:00+00:00".to_owned(),
        channel_values: NameMap::new(),
        channel_versions: versions.clone(),
        versions_seen: NameMap::new(),
        updated_channels: None,
    };
    let mut appends = NameMap::new();
    match whole {
        Some(value) => {
            checkpoint
                .channel_values
                .insert(SharedStr::from("log"), Blob::from_json(value).unwrap());
        }
        None => {
            appends.insert(
                SharedStr::from("log"),
                Append {
                    base: format!("{:03}", n - 1).into(),
                    keep: n as usize - 1,
                    items: Blob::from_json(items).unwrap(),
                },
            );
        }
    }
    let metadata = CheckpointMetadata {
        source: CheckpointSource::Loop,
        step: n.into(),
        parents: Default::default(),
        extra: Default::default(),
    };
    saver
        .put_appending(&config, checkpoint, metadata, versions, appends)
        .await
}

#[tokio::test]
async fn an_append_to_a_cached_version_deleted_meanwhile_is_refused() {
    // The saver knows version 2 (it wrote it), so it does not read its row
    // again before appending; the put itself checks that it is still stored.
    let (builder, schema) = common::fresh_schema("append_deleted").await;
    let saver = builder.append_layout(true).connect().await.unwrap();
    put_log(&saver, 1, Some("[1]"), "").await.unwrap();
    put_log(&saver, 2, None, "[2]").await.unwrap();
    put_log(&saver, 3, None, "[3]").await.unwrap();
    // Read back: the saver now holds version 3's whole value.
    let latest = saver
        .get_tuple(&CheckpointConfig::thread("t"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.checkpoint.channel_values["log"].as_str(), "[1,2,3]");
    let client = common::client(&schema).await;
    client
        .execute("DELETE FROM checkpoint_blobs WHERE version = '003'", &[])
        .await
        .unwrap();
    let refused = put_log(&saver, 4, None, "[4]").await;
    assert!(
        matches!(&refused, Err(CheckpointError::InvalidInput(m)) if m.contains("no longer stored")),
        "{refused:?}"
    );
    let stored: i64 = client
        .query_one(
            "SELECT count(*) FROM checkpoint_blobs WHERE version = '004'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 0, "the refused put stored nothing");
}
