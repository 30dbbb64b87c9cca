//! Fuzzing, on stable Rust, of everything a run reads back from storage (issue 7
//! §5): random JSON and random names in checkpoints, pending writes and update
//! forms. Whatever a file on disk holds, reading it gives a value or a clear
//! error — never a panic — and a corrupt thread stays corrupt rather than
//! silently losing data.

use proptest::prelude::*;
use serde_json::Value;
use stategraph::checkpoint::{
    Blob, Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSource, Checkpointer,
    InMemorySaver, NameMap, SharedStr,
};
use stategraph::prelude::*;
use stategraph::StateUpdate;
use std::collections::BTreeMap;
use std::sync::Arc;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Doc {
    title: String,
    #[reducer(concat)]
    lines: Vec<String>,
    #[channel(topic)]
    events: Vec<u32>,
    count: Option<i64>,
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
        Just(Value::String("__overwrite__".into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("__overwrite__".to_owned()),
                    Just("type".to_owned()),
                    Just("value".to_owned()),
                    "[a-z_]{0,8}"
                ],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn channel() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("title".to_owned()),
        Just("lines".to_owned()),
        Just("events".to_owned()),
        Just("count".to_owned()),
        Just("__start__".to_owned()),
        Just("__pregel_tasks".to_owned()),
        Just("branch:to:edit".to_owned()),
        Just("__interrupt__".to_owned()),
        Just("__resume__".to_owned()),
        Just("__error__".to_owned()),
        "[a-z:_]{1,12}",
    ]
}

fn version() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u64..50).prop_map(|n| format!("{n:032}.0.5")),
        Just("not a version".to_owned()),
        ".{0,6}",
    ]
}

fn graph(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Doc> {
    StateGraph::<Doc>::new()
        .add_node(node_fn("edit", |d: &Doc| {
            Doc::update()
                .lines(vec![format!("{} edited", d.title)])
                .count(Some(d.lines.len() as i64))
        }))
        .add_edge(START, "edit")
        .compile_with(saver)
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The JSON form of one field's write (LastValue, reducer with its
    /// Overwrite forms, topic): a value or an error.
    #[test]
    fn a_field_write_decodes_or_fails_cleanly(field in 0usize..4, value in json()) {
        let text = value.to_string();
        let mut de = serde_json::Deserializer::from_str(&text);
        let _ = DocUpdate::from_field_write(field, &mut de);
        let mut de = serde_json::Deserializer::from_str(&text);
        prop_assert!(DocUpdate::from_field_write(99, &mut de).is_err());
    }

    /// A checkpoint whose values, versions and pending writes are random: state
    /// reads and a resume return a value or an error, never panic.
    #[test]
    fn a_random_checkpoint_is_read_or_rejected(
        values in proptest::collection::btree_map(channel(), json(), 0..6),
        versions in proptest::collection::btree_map(channel(), version(), 0..6),
        seen in proptest::collection::btree_map(
            prop_oneof![Just("edit".to_owned()), Just("__interrupt__".to_owned()), "[a-z]{1,5}"],
            proptest::collection::btree_map(channel(), version(), 0..3),
            0..3,
        ),
        writes in proptest::collection::vec((channel(), json()), 0..5),
        task in prop_oneof![
            Just("00000000-0000-0000-0000-000000000000".to_owned()),
            "[0-9a-f-]{8,36}",
        ],
    ) {
        let rt = runtime();
        let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
        let app = graph(Arc::clone(&saver));
        let versions: NameMap<SharedStr> =
            versions.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        let seen = seen
            .into_iter()
            .map(|(node, m)| (node.into(), m.into_iter().map(|(k, v)| (k.into(), v.into())).collect()))
            .collect();
        let checkpoint = Checkpoint {
            v: 4,
            id: "1f0c0000-0000-6000-8000-000000000001".into(),
            ts: "2026-11-30T00:00:00.000000+00:00".into(),
            channel_values: values
                .iter()
                .map(|(k, v)| (k.into(), Blob::encode(v).unwrap()))
                .collect(),
            channel_versions: versions.clone(),
            versions_seen: seen,
            updated_channels: None,
        };
        let metadata = CheckpointMetadata {
            source: CheckpointSource::Loop,
            step: 3,
            parents: BTreeMap::new(),
            extra: Default::default(),
        };
        let root = CheckpointConfig { thread_id: "t".into(), checkpoint_ns: Default::default(), checkpoint_id: None };
        let stored = rt
            .block_on(saver.put(&root, checkpoint, metadata, versions))
            .unwrap();
        let rows = writes
            .iter()
            .map(|(c, v)| (c.clone(), Blob::encode(v).unwrap()))
            .collect();
        rt.block_on(saver.put_writes(&stored, rows, &task)).unwrap();

        let config = RunConfig::thread("t");
        let _ = rt.block_on(app.get_state(&config));
        let _ = rt.block_on(app.get_state_with_subgraphs(&config));
        let _ = rt.block_on(app.invoke(None, &config));
        let _ = rt.block_on(app.invoke(Command::resume(Value::Null), &config));
        let _ = rt.block_on(app.invoke(Doc::update().title("x".into()), &config));
    }
}

#[test]
fn a_corrupt_field_is_a_checkpoint_error_naming_the_field() {
    let rt = runtime();
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let app = graph(Arc::clone(&saver));
    let mut values = NameMap::new();
    values.insert("lines".into(), Blob::encode(&42).unwrap());
    let mut versions = NameMap::new();
    versions.insert("lines".into(), format!("{:032}.0.5", 1).into());
    let checkpoint = Checkpoint {
        v: 4,
        id: "1f0c0000-0000-6000-8000-000000000001".into(),
        ts: "2026-11-30T00:00:00.000000+00:00".into(),
        channel_values: values,
        channel_versions: versions.clone(),
        versions_seen: NameMap::new(),
        updated_channels: None,
    };
    let metadata = CheckpointMetadata {
        source: CheckpointSource::Loop,
        step: 0,
        parents: BTreeMap::new(),
        extra: Default::default(),
    };
    let root = CheckpointConfig {
        thread_id: "t".into(),
        checkpoint_ns: Default::default(),
        checkpoint_id: None,
    };
    rt.block_on(saver.put(&root, checkpoint, metadata, versions))
        .unwrap();
    let err = rt
        .block_on(app.get_state(&RunConfig::thread("t")))
        .unwrap_err();
    assert!(matches!(err, GraphError::Checkpoint(_)), "{err}");
    assert!(err.to_string().contains("lines"), "{err}");
}
