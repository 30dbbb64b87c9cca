//! A conformance suite for [`Checkpointer`] implementations, written once and run
//! against every saver (memory, SQLite, PostgreSQL, and yours). It covers what
//! LangGraph's checkpoint-conformance spec covers: put / get_tuple round trips
//! through the per-version blob layout, latest vs by id, parent chains,
//! namespaces, `list` (ordering, filters, `before`, `limit`), pending writes
//! (insert-if-absent, special replacement, ordering, attachment),
//! `delete_thread`, `prune`, and idempotence; [`run_leases`] adds the properties
//! of a saver that holds threads for its runs.
//!
//! Every property is its own `pub async fn`, and [`run_all`] runs them in turn.
//! Each one works on fresh, randomly named threads, so the suite can run on a saver
//! that already holds data (or twice on the same saver). Failures panic with a
//! message naming the property that broke.
//!
//! # Testing a saver of your own
//!
//! The module is test code, compiled only with the `test-util` feature. Enable it
//! for your tests alone, in your saver crate's `Cargo.toml`:
//!
//! ```toml
//! [dev-dependencies]
//! stategraph = { version = "0.1", features = ["test-util"] }
//! # or, when the saver depends on the runtime crate directly:
//! graph-core = { package = "stategraph-core", version = "0.1", features = ["test-util"] }
//! tokio = { version = "1", features = ["rt", "macros"] }
//! ```
//!
//! and run the suite from an integration test (`tests/conformance.rs`), here
//! against the in-memory reference saver:
//!
//! ```
//! use graph_core::checkpoint::{conformance, InMemorySaver};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // In a test file: #[tokio::test] async fn passes_the_conformance_suite() { ... }
//! let saver = InMemorySaver::new(); // your saver, on a fresh or existing database
//! conformance::run_all(&saver).await;
//! // Only if `begin_run` holds threads (returns a guard with a writer):
//! conformance::run_leases(&saver).await;
//! # }
//! ```

use super::{
    Append, Blob, ChannelVersion, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointSource, CheckpointTuple, Checkpointer, ListOptions, NameMap,
    PendingWrite, Retention, SharedStr, StepPut,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// LangGraph's task id for writes not tied to a task.
const NULL_TASK_ID: &str = "00000000-0000-0000-0000-000000000000";

/// Runs every property of the suite against `saver`.
pub async fn run_all(saver: &dyn Checkpointer) {
    put_get_round_trip(saver).await;
    unchanged_channels_come_from_earlier_versions(saver).await;
    get_tuple_latest_and_by_id(saver).await;
    missing_thread_and_checkpoint(saver).await;
    parent_chain(saver).await;
    namespaces_isolated(saver).await;
    list_newest_first(saver).await;
    list_all_threads(saver).await;
    list_metadata_filter(saver).await;
    list_before_and_limit(saver).await;
    put_writes_regular_and_special(saver).await;
    pending_writes_ordered(saver).await;
    pending_writes_attached_to_their_checkpoint(saver).await;
    put_with_writes_stores_the_writes_then_the_checkpoint(saver).await;
    put_chain_stores_each_checkpoint_as_the_child_of_the_one_before(saver).await;
    delete_thread_removes_every_namespace(saver).await;
    idempotent_put_and_put_writes(saver).await;
    value_fidelity(saver).await;
    prune_keep_last(saver).await;
    prune_older_than(saver).await;
    a_version_without_a_stored_value_is_an_error(saver).await;
    if saver.stores_appends() {
        run_appends(saver).await;
    }
}

/// Runs the properties of a saver that stores appended values
/// ([`Checkpointer::stores_appends`] is `true`; [`run_all`] runs them then):
/// every version of an appended value reads back whole, a long chain of
/// appends reads back and prunes exactly, and an append that cannot extend
/// its base is refused.
pub async fn run_appends(saver: &dyn Checkpointer) {
    appended_values_read_back_whole_at_every_version(saver).await;
    a_long_chain_of_appends_reads_back_and_prunes_exactly(saver).await;
    an_append_that_cannot_extend_its_base_is_refused(saver).await;
}

/// Runs the properties of a saver that holds threads for their runs
/// ([`Checkpointer::begin_run`] returns a guard with a writer): exclusion,
/// `delete_thread` / `prune` refusing a held thread, and fencing of the writes
/// of a run that no longer holds its thread.
pub async fn run_leases(saver: &dyn Checkpointer) {
    a_held_thread_is_busy(saver).await;
    begin_run_and_load_holds_and_reads_the_thread(saver).await;
    delete_and_prune_refuse_a_held_thread(saver).await;
    writes_of_a_run_that_lost_its_thread_are_fenced(saver).await;
}

/// A thread name no other property (or earlier run) uses.
fn unique_thread(property: &str) -> String {
    format!("conformance-{property}-{:016x}", fastrand::u64(..))
}

/// A UUIDv6-shaped id, increasing in creation order within the process.
fn next_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let base = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "1f{:06x}-{:04x}-6000-8000-{:012x}",
        (base >> 16) & 0xff_ffff,
        base & 0xffff,
        n
    )
}

/// LangGraph's `"{n:032}.{random:016}"` channel version.
fn version(n: u64) -> ChannelVersion {
    format!("{n:032}.{:016}", 0.25).into()
}

fn blob(value: Value) -> Blob {
    match Blob::encode(&value) {
        Ok(b) => b,
        Err(e) => panic!("conformance: cannot encode {value}: {e}"),
    }
}

fn meta(source: CheckpointSource, step: i64, extra: Value) -> CheckpointMetadata {
    let extra = match extra {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => panic!("conformance: metadata extra must be an object, got {other}"),
    };
    CheckpointMetadata {
        source,
        step,
        parents: BTreeMap::new(),
        extra,
    }
}

fn loop_meta(step: i64) -> CheckpointMetadata {
    meta(CheckpointSource::Loop, step, Value::Null)
}

/// Writes a chain of checkpoints the way the Pregel loop does: each `put` carries
/// values only for the channels that changed, and the full state is tracked here
/// so the expected checkpoint can be compared with what the saver returns.
struct ThreadWriter<'a> {
    saver: &'a dyn Checkpointer,
    config: CheckpointConfig,
    values: NameMap<Blob>,
    versions: NameMap<ChannelVersion>,
    next_version: u64,
}

impl<'a> ThreadWriter<'a> {
    fn new(saver: &'a dyn Checkpointer, thread_id: &str, ns: &str) -> Self {
        ThreadWriter {
            saver,
            config: CheckpointConfig {
                thread_id: thread_id.into(),
                checkpoint_ns: ns.into(),
                checkpoint_id: None,
            },
            values: NameMap::new(),
            versions: NameMap::new(),
            next_version: 1,
        }
    }

    /// Puts a checkpoint where `changes` changed (`None`: the channel became empty)
    /// as the child of the current one; returns the full checkpoint expected back.
    async fn step(
        &mut self,
        changes: &[(&str, Option<Value>)],
        metadata: CheckpointMetadata,
    ) -> Checkpoint {
        let id = next_id();
        self.step_with_id(id, changes, metadata).await
    }

    async fn step_with_id(
        &mut self,
        id: String,
        changes: &[(&str, Option<Value>)],
        metadata: CheckpointMetadata,
    ) -> Checkpoint {
        let (sent, expected, new_versions) = self.next_checkpoint(id.clone(), changes);
        let stored = self
            .saver
            .put(&self.config, sent, metadata, new_versions)
            .await;
        self.stored(stored, &id);
        expected
    }

    /// [`step`](Self::step) stored with `put_with_writes`: first `writes`
    /// (task id, writes) against the current checkpoint.
    async fn step_after_writes(
        &mut self,
        writes: &[(&str, Vec<(&str, Value)>)],
        changes: &[(&str, Option<Value>)],
        metadata: CheckpointMetadata,
    ) -> Checkpoint {
        let id = next_id();
        let (sent, expected, new_versions) = self.next_checkpoint(id.clone(), changes);
        let writes = writes
            .iter()
            .map(|(task, rows)| {
                let rows = rows
                    .iter()
                    .map(|(c, v)| ((*c).to_owned(), blob(v.clone())))
                    .collect();
                ((*task).to_owned(), rows)
            })
            .collect();
        let stored = self
            .saver
            .put_with_writes(
                &self.config,
                writes,
                sent,
                metadata,
                new_versions,
                NameMap::new(),
            )
            .await;
        self.stored(stored, &id);
        expected
    }

    /// Checks the config a put returned, and continues from it.
    fn stored(&mut self, stored: Result<CheckpointConfig, CheckpointError>, id: &str) {
        let stored = match stored {
            Ok(c) => c,
            Err(e) => panic!("put of checkpoint {id} failed: {e}"),
        };
        assert_eq!(
            stored,
            self.config.at(id.to_owned()),
            "put must return the config of the stored checkpoint (same thread and namespace, its id)"
        );
        self.config = stored;
    }

    /// The checkpoint `id` where `changes` changed, as sent to the saver and
    /// as expected back, and its new versions.
    fn next_checkpoint(
        &mut self,
        id: String,
        changes: &[(&str, Option<Value>)],
    ) -> (Checkpoint, Checkpoint, NameMap<ChannelVersion>) {
        let v = version(self.next_version);
        self.next_version += 1;
        let mut new_versions = NameMap::new();
        let mut changed_values = NameMap::new();
        for (channel, value) in changes {
            let name = SharedStr::from(*channel);
            self.versions.insert(name.clone(), v.clone());
            new_versions.insert(name.clone(), v.clone());
            match value {
                Some(value) => {
                    let b = blob(value.clone());
                    self.values.insert(name.clone(), b.clone());
                    changed_values.insert(name, b);
                }
                None => {
                    self.values.remove(channel);
                }
            }
        }
        let mut versions_seen = NameMap::new();
        versions_seen.insert(SharedStr::from("__input__"), NameMap::new());
        versions_seen.insert(SharedStr::from("node"), self.versions.clone());
        let mut updated: Vec<SharedStr> = changes.iter().map(|(c, _)| (*c).into()).collect();
        updated.sort();
        let sent = Checkpoint {
            v: 4,
            id,
            ts: format!("2024-07-31T20:14:19.{:06}+00:00", self.next_version),
            channel_values: changed_values,
            channel_versions: self.versions.clone(),
            versions_seen,
            updated_channels: Some(updated),
        };
        let expected = Checkpoint {
            channel_values: self.values.clone(),
            ..sent.clone()
        };
        (sent, expected, new_versions)
    }

    /// Continues from `id` (a fork) with the state as it was there.
    fn rewind(&mut self, checkpoint: &Checkpoint) {
        self.config = self.config.at(checkpoint.id.clone());
        self.values = checkpoint.channel_values.clone();
        self.versions = checkpoint.channel_versions.clone();
    }
}

async fn get(saver: &dyn Checkpointer, config: &CheckpointConfig) -> Option<CheckpointTuple> {
    match saver.get_tuple(config).await {
        Ok(t) => t,
        Err(e) => panic!("get_tuple({config:?}) failed: {e}"),
    }
}

async fn must_get(saver: &dyn Checkpointer, config: &CheckpointConfig) -> CheckpointTuple {
    match get(saver, config).await {
        Some(t) => t,
        None => panic!("get_tuple({config:?}) returned None for a stored checkpoint"),
    }
}

async fn list(
    saver: &dyn Checkpointer,
    config: Option<&CheckpointConfig>,
    options: &ListOptions,
) -> Vec<CheckpointTuple> {
    match saver.list(config, options).await {
        Ok(l) => l,
        Err(e) => panic!("list({config:?}, {options:?}) failed: {e}"),
    }
}

async fn put_writes(
    saver: &dyn Checkpointer,
    config: &CheckpointConfig,
    writes: &[(&str, Value)],
    task_id: &str,
) {
    let writes = writes
        .iter()
        .map(|(c, v)| ((*c).to_owned(), blob(v.clone())))
        .collect();
    if let Err(e) = saver.put_writes(config, writes, task_id).await {
        panic!("put_writes({config:?}, task {task_id}) failed: {e}");
    }
}

fn ids(tuples: &[CheckpointTuple]) -> Vec<String> {
    tuples
        .iter()
        .map(|t| t.checkpoint.id.clone())
        .collect::<Vec<_>>()
}

fn ids_of(checkpoints: &[&Checkpoint]) -> Vec<String> {
    checkpoints.iter().map(|c| c.id.clone()).collect()
}

fn write(task_id: &str, channel: &str, value: Value) -> PendingWrite {
    PendingWrite {
        task_id: task_id.to_owned(),
        channel: channel.to_owned(),
        value: blob(value),
    }
}

/// The writes of `task_id`, in the order the saver returned them.
fn writes_of<'w>(writes: &'w [PendingWrite], task_id: &str) -> Vec<&'w PendingWrite> {
    writes.iter().filter(|w| w.task_id == task_id).collect()
}

fn sorted(mut writes: Vec<PendingWrite>) -> Vec<PendingWrite> {
    writes.sort_by(|a, b| {
        (&a.task_id, &a.channel, a.value.as_str()).cmp(&(&b.task_id, &b.channel, b.value.as_str()))
    });
    writes
}

/// `put` then `get_tuple` gives back the checkpoint, its metadata and configs.
pub async fn put_get_round_trip(saver: &dyn Checkpointer) {
    let thread = unique_thread("round-trip");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let metadata = meta(
        CheckpointSource::Input,
        -1,
        json!({"user": "alice", "score": 1.5, "flag": true}),
    );
    let expected = w
        .step(
            &[
                ("__start__", Some(json!({"question": "hi"}))),
                ("count", Some(json!(0))),
            ],
            metadata.clone(),
        )
        .await;
    let got = must_get(saver, &CheckpointConfig::thread(&thread)).await;
    assert_eq!(
        got.checkpoint, expected,
        "round trip: get_tuple must return the checkpoint that was put"
    );
    assert_eq!(
        got.metadata, metadata,
        "round trip: get_tuple must return the metadata that was put"
    );
    assert_eq!(
        got.config,
        CheckpointConfig::thread(&thread).at(expected.id.clone()),
        "round trip: the returned config names thread, namespace and checkpoint id"
    );
    assert_eq!(
        got.parent_config, None,
        "round trip: the first checkpoint of a thread has no parent"
    );
    assert!(
        got.pending_writes.is_empty(),
        "round trip: a checkpoint without put_writes has no pending writes"
    );
}

/// The blob-layout contract: `put` carries values only for the channels in
/// `new_versions`; the others come back from the blobs of earlier versions, and a
/// channel that became empty has no value.
pub async fn unchanged_channels_come_from_earlier_versions(saver: &dyn Checkpointer) {
    let thread = unique_thread("blob-layout");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let first = w
        .step(
            &[
                ("messages", Some(json!(["m1", "m2"]))),
                ("count", Some(json!(1))),
                ("scratch", Some(json!({"tmp": true}))),
            ],
            loop_meta(0),
        )
        .await;
    let second = w.step(&[("count", Some(json!(2)))], loop_meta(1)).await;
    let third = w
        .step(
            &[
                ("messages", Some(json!(["m1", "m2", "m3"]))),
                ("scratch", None),
            ],
            loop_meta(2),
        )
        .await;
    for expected in [&first, &second, &third] {
        let got = must_get(
            saver,
            &CheckpointConfig::thread(&thread).at(expected.id.clone()),
        )
        .await;
        assert_eq!(
            got.checkpoint.channel_values, expected.channel_values,
            "blob layout: checkpoint {} must have every channel's value, including \
             channels unchanged since an earlier checkpoint (read from that version's blob)",
            expected.id
        );
        assert_eq!(
            got.checkpoint, *expected,
            "blob layout: checkpoint {} must round-trip",
            expected.id
        );
    }
    assert!(
        !third.channel_values.contains_key("scratch"),
        "conformance suite bug: scratch should be empty"
    );
    assert!(
        third.channel_versions.contains_key("scratch"),
        "conformance suite bug: scratch should keep its version"
    );
}

/// Without an id, `get_tuple` returns the checkpoint with the greatest id (not the
/// one put last); with an id, exactly that one.
pub async fn get_tuple_latest_and_by_id(saver: &dyn Checkpointer) {
    let thread = unique_thread("latest");
    let low = next_id();
    let high = next_id();
    let mut w = ThreadWriter::new(saver, &thread, "");
    let newer = w
        .step_with_id(high.clone(), &[("a", Some(json!("high")))], loop_meta(1))
        .await;
    let mut w2 = ThreadWriter::new(saver, &thread, "");
    // A version of its own: blobs are keyed by (thread, namespace, channel, version).
    w2.next_version = 7;
    let older = w2
        .step_with_id(low.clone(), &[("a", Some(json!("low")))], loop_meta(0))
        .await;
    let latest = must_get(saver, &CheckpointConfig::thread(&thread)).await;
    assert_eq!(
        latest.checkpoint, newer,
        "get_tuple without checkpoint_id must return the greatest id of the thread, even if it was not put last"
    );
    assert_eq!(
        latest.config.checkpoint_id.as_deref(),
        Some(high.as_str()),
        "get_tuple without checkpoint_id must return a config with the found id"
    );
    let by_id = must_get(saver, &CheckpointConfig::thread(&thread).at(low.clone())).await;
    assert_eq!(
        by_id.checkpoint, older,
        "get_tuple with checkpoint_id must return that checkpoint"
    );
}

/// A missing thread, namespace or checkpoint id is `None` (and an empty list).
pub async fn missing_thread_and_checkpoint(saver: &dyn Checkpointer) {
    let thread = unique_thread("missing");
    assert!(
        get(saver, &CheckpointConfig::thread(&thread))
            .await
            .is_none(),
        "get_tuple of a thread that was never written must be None"
    );
    assert!(
        get(saver, &CheckpointConfig::thread(&thread).at(next_id()))
            .await
            .is_none(),
        "get_tuple of a checkpoint id in a thread that was never written must be None"
    );
    assert!(
        list(
            saver,
            Some(&CheckpointConfig::thread(&thread)),
            &ListOptions::default()
        )
        .await
        .is_empty(),
        "list of a thread that was never written must be empty"
    );
    let mut w = ThreadWriter::new(saver, &thread, "");
    w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    assert!(
        get(saver, &CheckpointConfig::thread(&thread).at(next_id()))
            .await
            .is_none(),
        "get_tuple of a checkpoint id that does not exist in an existing thread must be None"
    );
    let other_ns = CheckpointConfig {
        checkpoint_ns: "never:written".into(),
        ..CheckpointConfig::thread(&thread)
    };
    assert!(
        get(saver, &other_ns).await.is_none(),
        "get_tuple of a namespace that was never written must be None"
    );
    assert!(
        saver.delete_thread(&unique_thread("never")).await.is_ok(),
        "delete_thread of a thread that was never written must succeed"
    );
}

/// `parent_config` points at the checkpoint `put` was given as parent, forming a
/// chain (with forks) back to the root.
pub async fn parent_chain(saver: &dyn Checkpointer) {
    let thread = unique_thread("parents");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let c1 = w.step(&[("a", Some(json!(1)))], loop_meta(-1)).await;
    let c2 = w.step(&[("a", Some(json!(2)))], loop_meta(0)).await;
    let c3 = w.step(&[("b", Some(json!(3)))], loop_meta(1)).await;
    w.rewind(&c1);
    let fork = w
        .step(
            &[("a", Some(json!(20)))],
            meta(CheckpointSource::Fork, 0, Value::Null),
        )
        .await;

    let root = CheckpointConfig::thread(&thread);
    let mut chain = Vec::new();
    let mut next = Some(root.at(c3.id.clone()));
    while let Some(config) = next {
        let t = must_get(saver, &config).await;
        chain.push(t.checkpoint.id.clone());
        assert!(
            chain.len() <= 3,
            "parent chain must end at the root checkpoint"
        );
        next = t.parent_config;
    }
    assert_eq!(
        chain,
        ids_of(&[&c3, &c2, &c1]),
        "following parent_config from the newest checkpoint must visit each ancestor once"
    );
    let f = must_get(saver, &root.at(fork.id.clone())).await;
    assert_eq!(
        f.parent_config,
        Some(root.at(c1.id.clone())),
        "a fork's parent_config must be the checkpoint it was forked from"
    );
    assert_eq!(
        f.checkpoint, fork,
        "a fork must see its parent's values plus its own change"
    );
    let latest = must_get(saver, &root).await;
    assert_eq!(
        latest.checkpoint.id, fork.id,
        "the latest checkpoint is the greatest id, whatever branch it is on"
    );
    let history = list(saver, Some(&root), &ListOptions::default()).await;
    assert_eq!(
        ids(&history),
        ids_of(&[&fork, &c3, &c2, &c1]),
        "list must show every branch, ordered by id (not by ancestry)"
    );
}

/// Namespaces of one thread are separate: same ids, channels and versions do not
/// mix; a config names one namespace.
pub async fn namespaces_isolated(saver: &dyn Checkpointer) {
    let thread = unique_thread("namespaces");
    let shared_id = next_id();
    let mut root = ThreadWriter::new(saver, &thread, "");
    let mut child = ThreadWriter::new(saver, &thread, "child:6f1c");
    let r = root
        .step_with_id(
            shared_id.clone(),
            &[("x", Some(json!("root")))],
            loop_meta(0),
        )
        .await;
    let mut child_meta = loop_meta(0);
    child_meta.parents.insert(String::new(), r.id.clone());
    let c = child
        .step_with_id(
            shared_id.clone(),
            &[("x", Some(json!("child")))],
            child_meta.clone(),
        )
        .await;
    let r2 = root
        .step(&[("y", Some(json!("root2")))], loop_meta(1))
        .await;

    let root_cfg = CheckpointConfig::thread(&thread);
    let child_cfg = CheckpointConfig {
        checkpoint_ns: "child:6f1c".into(),
        ..root_cfg.clone()
    };
    let got_child = must_get(saver, &child_cfg).await;
    assert_eq!(
        got_child.checkpoint, c,
        "a namespace's latest checkpoint must not see another namespace's checkpoints or blobs"
    );
    assert_eq!(
        got_child.metadata, child_meta,
        "a subgraph checkpoint keeps its `parents` metadata"
    );
    assert_eq!(
        got_child.config.checkpoint_ns, "child:6f1c",
        "the returned config must keep the namespace"
    );
    let got_root_same_id = must_get(saver, &root_cfg.at(shared_id.clone())).await;
    assert_eq!(
        got_root_same_id.checkpoint, r,
        "the same checkpoint id in two namespaces must address two checkpoints"
    );
    let got_child_same_id = must_get(saver, &child_cfg.at(shared_id.clone())).await;
    assert_eq!(
        got_child_same_id.checkpoint, c,
        "the same checkpoint id in two namespaces must address two checkpoints"
    );
    assert_eq!(
        must_get(saver, &root_cfg).await.checkpoint,
        r2,
        "the root namespace's latest checkpoint must ignore the child namespace"
    );
    assert_eq!(
        ids(&list(saver, Some(&root_cfg), &ListOptions::default()).await),
        ids_of(&[&r2, &r]),
        "list with a config must only show that config's namespace"
    );
    assert_eq!(
        ids(&list(saver, Some(&child_cfg), &ListOptions::default()).await),
        ids_of(&[&c]),
        "list with a child namespace must only show that namespace"
    );
}

/// `list` of a thread is newest first (id descending).
pub async fn list_newest_first(saver: &dyn Checkpointer) {
    let thread = unique_thread("list-order");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let mut put = Vec::new();
    for step in 0..5 {
        put.push(w.step(&[("n", Some(json!(step)))], loop_meta(step)).await);
    }
    let got = list(
        saver,
        Some(&CheckpointConfig::thread(&thread)),
        &ListOptions::default(),
    )
    .await;
    let expected: Vec<String> = put.iter().rev().map(|c| c.id.clone()).collect();
    assert_eq!(
        ids(&got),
        expected,
        "list must return newest first (id descending)"
    );
    for (t, c) in got.iter().zip(put.iter().rev()) {
        assert_eq!(
            t.checkpoint, *c,
            "list must return complete checkpoints (values of unchanged channels too)"
        );
        assert_eq!(
            t.config,
            CheckpointConfig::thread(&thread).at(c.id.clone()),
            "each listed tuple carries its own config"
        );
    }
    assert_eq!(
        got.last().and_then(|t| t.parent_config.clone()),
        None,
        "the oldest listed checkpoint has no parent"
    );
    assert_eq!(
        got.first().and_then(|t| t.parent_config.clone()),
        Some(CheckpointConfig::thread(&thread).at(put[3].id.clone())),
        "listed tuples carry their parent_config"
    );
    let one = list(
        saver,
        Some(&CheckpointConfig::thread(&thread).at(put[2].id.clone())),
        &ListOptions::default(),
    )
    .await;
    assert_eq!(
        ids(&one),
        vec![put[2].id.clone()],
        "list with a checkpoint_id in the config must return only that checkpoint"
    );
}

/// `list(None)` lists every thread and namespace, newest first.
pub async fn list_all_threads(saver: &dyn Checkpointer) {
    let t1 = unique_thread("all-a");
    let t2 = unique_thread("all-b");
    let mut a = ThreadWriter::new(saver, &t1, "");
    let mut b = ThreadWriter::new(saver, &t2, "");
    let mut sub = ThreadWriter::new(saver, &t2, "sub:1");
    let a1 = a.step(&[("v", Some(json!("a1")))], loop_meta(0)).await;
    let b1 = b.step(&[("v", Some(json!("b1")))], loop_meta(0)).await;
    let s1 = sub.step(&[("v", Some(json!("s1")))], loop_meta(0)).await;
    let a2 = a.step(&[("v", Some(json!("a2")))], loop_meta(1)).await;
    let all = list(saver, None, &ListOptions::default()).await;
    for pair in all.windows(2) {
        assert!(
            pair[0].checkpoint.id >= pair[1].checkpoint.id,
            "list(None) must be ordered newest first across threads: {} before {}",
            pair[0].checkpoint.id,
            pair[1].checkpoint.id
        );
    }
    let ours: Vec<&CheckpointTuple> = all
        .iter()
        .filter(|t| t.config.thread_id == t1 || t.config.thread_id == t2)
        .collect();
    let got: Vec<(String, String, String)> = ours
        .iter()
        .map(|t| {
            (
                t.config.thread_id.to_string(),
                t.config.checkpoint_ns.to_string(),
                t.checkpoint.id.clone(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (t1.clone(), String::new(), a2.id.clone()),
            (t2.clone(), "sub:1".to_owned(), s1.id.clone()),
            (t2.clone(), String::new(), b1.id.clone()),
            (t1.clone(), String::new(), a1.id.clone()),
        ],
        "list(None) must include every thread and namespace, newest first"
    );
    let sub_tuple = ours
        .iter()
        .find(|t| t.checkpoint.id == s1.id)
        .map(|t| t.checkpoint.clone());
    assert_eq!(
        sub_tuple,
        Some(s1),
        "list(None) must return each namespace's own values"
    );
}

/// `filter` keeps checkpoints whose metadata has every given entry.
pub async fn list_metadata_filter(saver: &dyn Checkpointer) {
    let thread = unique_thread("filter");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let input = w
        .step(
            &[("a", Some(json!(0)))],
            meta(CheckpointSource::Input, -1, Value::Null),
        )
        .await;
    let alice = w
        .step(
            &[("a", Some(json!(1)))],
            meta(
                CheckpointSource::Loop,
                0,
                json!({"user": "alice", "flag": true, "score": 1.5}),
            ),
        )
        .await;
    let bob = w
        .step(
            &[("a", Some(json!(2)))],
            meta(
                CheckpointSource::Loop,
                1,
                json!({"user": "bob", "flag": false, "score": 1}),
            ),
        )
        .await;
    let update = w
        .step(
            &[("a", Some(json!(3)))],
            meta(
                CheckpointSource::Update,
                2,
                json!({"user": "alice", "nested": {"k": [1, 2]}}),
            ),
        )
        .await;
    let config = CheckpointConfig::thread(&thread);
    let cases: Vec<(Value, Vec<&Checkpoint>)> = vec![
        (json!({}), vec![&update, &bob, &alice, &input]),
        (json!({"source": "loop"}), vec![&bob, &alice]),
        (json!({"source": "input"}), vec![&input]),
        (json!({"step": 1}), vec![&bob]),
        (json!({"step": -1}), vec![&input]),
        (json!({"user": "alice"}), vec![&update, &alice]),
        (json!({"source": "loop", "user": "alice"}), vec![&alice]),
        (json!({"source": "update", "user": "bob"}), vec![]),
        (json!({"flag": true}), vec![&alice]),
        (json!({"flag": false}), vec![&bob]),
        (json!({"score": 1.5}), vec![&alice]),
        (json!({"nested": {"k": [1, 2]}}), vec![&update]),
        (json!({"user": "carol"}), vec![]),
        (json!({"no_such_key": "x"}), vec![]),
    ];
    for (filter, expected) in cases {
        let Value::Object(filter) = filter else {
            unreachable!("filters above are objects")
        };
        let options = ListOptions {
            filter: filter.clone(),
            ..ListOptions::default()
        };
        let got = list(saver, Some(&config), &options).await;
        assert_eq!(
            ids(&got),
            ids_of(&expected),
            "list with metadata filter {filter:?} must return exactly the matching checkpoints, newest first"
        );
    }
    let mut filter = serde_json::Map::new();
    filter.insert("source".to_owned(), json!("loop"));
    let options = ListOptions {
        filter,
        limit: Some(1),
        ..ListOptions::default()
    };
    assert_eq!(
        ids(&list(saver, Some(&config), &options).await),
        ids_of(&[&bob]),
        "limit must apply after the metadata filter"
    );
    let mut filter = serde_json::Map::new();
    filter.insert("user".to_owned(), json!("alice"));
    let in_all = list(
        saver,
        None,
        &ListOptions {
            filter,
            ..ListOptions::default()
        },
    )
    .await;
    let ours: Vec<String> = in_all
        .iter()
        .filter(|t| t.config.thread_id == thread)
        .map(|t| t.checkpoint.id.clone())
        .collect();
    assert_eq!(
        ours,
        ids_of(&[&update, &alice]),
        "list(None) must apply the metadata filter too"
    );
}

/// `before` keeps ids strictly less than the given one; `limit` caps the result.
pub async fn list_before_and_limit(saver: &dyn Checkpointer) {
    let thread = unique_thread("before");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let mut c = Vec::new();
    for step in 0..5 {
        c.push(w.step(&[("n", Some(json!(step)))], loop_meta(step)).await);
    }
    let config = CheckpointConfig::thread(&thread);
    let opts = |before: Option<&Checkpoint>, limit: Option<usize>| ListOptions {
        before: before.map(|b| b.id.clone()),
        limit,
        ..ListOptions::default()
    };
    let cases: Vec<(ListOptions, Vec<&Checkpoint>, &str)> = vec![
        (opts(Some(&c[3]), None), vec![&c[2], &c[1], &c[0]], "before"),
        (
            opts(Some(&c[3]), Some(2)),
            vec![&c[2], &c[1]],
            "before + limit",
        ),
        (opts(Some(&c[0]), None), vec![], "before the oldest"),
        (opts(None, Some(2)), vec![&c[4], &c[3]], "limit"),
        (opts(None, Some(0)), vec![], "limit 0"),
        (
            opts(None, Some(50)),
            vec![&c[4], &c[3], &c[2], &c[1], &c[0]],
            "limit above the count",
        ),
    ];
    for (options, expected, what) in cases {
        assert_eq!(
            ids(&list(saver, Some(&config), &options).await),
            ids_of(&expected),
            "list with {what} ({options:?}) must return ids strictly before `before`, newest first, at most `limit`"
        );
    }
    // An id between two stored ones, that is not stored itself.
    let between = format!("{}~", c[1].id);
    assert_eq!(
        ids(&list(
            saver,
            Some(&config),
            &ListOptions {
                before: Some(between),
                ..ListOptions::default()
            }
        )
        .await),
        ids_of(&[&c[1], &c[0]]),
        "`before` compares ids as strings; it need not name a stored checkpoint"
    );
}

/// Regular writes are inserted if absent (a retry does not duplicate or change
/// them); special writes (`__error__`, `__interrupt__`, ...) replace.
pub async fn put_writes_regular_and_special(saver: &dyn Checkpointer) {
    let thread = unique_thread("writes");
    let mut w = ThreadWriter::new(saver, &thread, "");
    w.step(&[("a", Some(json!(0)))], loop_meta(0)).await;
    let at = w.config.clone();

    put_writes(saver, &at, &[("a", json!(1)), ("b", json!(2))], "task-1").await;
    put_writes(saver, &at, &[("a", json!(10)), ("c", json!(30))], "task-1").await;
    put_writes(
        saver,
        &at,
        &[("__error__", json!("first failure"))],
        "task-2",
    )
    .await;
    put_writes(
        saver,
        &at,
        &[("__error__", json!("second failure"))],
        "task-2",
    )
    .await;
    put_writes(
        saver,
        &at,
        &[("__interrupt__", json!([{"value": "q1", "id": "i1"}]))],
        "task-3",
    )
    .await;
    put_writes(
        saver,
        &at,
        &[("__interrupt__", json!([{"value": "q2", "id": "i2"}]))],
        "task-3",
    )
    .await;
    put_writes(saver, &at, &[("__resume__", json!(["yes"]))], NULL_TASK_ID).await;
    put_writes(
        saver,
        &at,
        &[("__resume__", json!(["yes", "no"]))],
        NULL_TASK_ID,
    )
    .await;
    // A mixed batch: the regular write is kept, the special one replaced.
    put_writes(
        saver,
        &at,
        &[("x", json!(1)), ("__error__", json!("e1"))],
        "task-4",
    )
    .await;
    put_writes(
        saver,
        &at,
        &[("x", json!(2)), ("__error__", json!("e2"))],
        "task-4",
    )
    .await;

    let got = must_get(saver, &at).await.pending_writes;
    let expected = vec![
        write("task-1", "a", json!(1)),
        write("task-1", "b", json!(2)),
        write("task-2", "__error__", json!("second failure")),
        write(
            "task-3",
            "__interrupt__",
            json!([{"value": "q2", "id": "i2"}]),
        ),
        write(NULL_TASK_ID, "__resume__", json!(["yes", "no"])),
        write("task-4", "x", json!(1)),
        write("task-4", "__error__", json!("e2")),
    ];
    assert_eq!(
        sorted(got.clone()),
        sorted(expected),
        "put_writes: regular writes are kept when (task, index) exists; special writes replace"
    );
    assert!(
        saver
            .put_writes(
                &CheckpointConfig::thread(&thread),
                vec![("a".to_owned(), Blob::null())],
                "task-1"
            )
            .await
            .is_err(),
        "put_writes without a checkpoint id must be an error"
    );
}

/// A task's writes come back in the order it made them.
pub async fn pending_writes_ordered(saver: &dyn Checkpointer) {
    let thread = unique_thread("writes-order");
    let mut w = ThreadWriter::new(saver, &thread, "");
    w.step(&[("a", Some(json!(0)))], loop_meta(0)).await;
    let at = w.config.clone();
    let many: Vec<(&str, Value)> = (0..12).map(|i| ("topic", json!(i))).collect();
    put_writes(saver, &at, &many, "task-a").await;
    put_writes(
        saver,
        &at,
        &[("z", json!("z")), ("a", json!("a"))],
        "task-b",
    )
    .await;
    let got = must_get(saver, &at).await.pending_writes;
    let a: Vec<Value> = writes_of(&got, "task-a")
        .iter()
        .map(|w| w.value.decode().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        a,
        (0..12).map(|i| json!(i)).collect::<Vec<_>>(),
        "a task's writes must come back in the order of put_writes (index order, not lexical)"
    );
    let b: Vec<&str> = writes_of(&got, "task-b")
        .iter()
        .map(|w| w.channel.as_str())
        .collect();
    assert_eq!(
        b,
        vec!["z", "a"],
        "a task's writes keep their order, not sorted by channel"
    );
    let a_pos = got.iter().position(|w| w.task_id == "task-b");
    let last_a = got.iter().rposition(|w| w.task_id == "task-a");
    assert!(
        matches!((last_a, a_pos), (Some(x), Some(y)) if x < y),
        "writes of tasks put in task-id order come back grouped in that order"
    );
}

/// Writes belong to one checkpoint of one namespace and come back with it (in
/// `get_tuple` and `list`), not with its parent, child or namesake.
pub async fn pending_writes_attached_to_their_checkpoint(saver: &dyn Checkpointer) {
    let thread = unique_thread("writes-attach");
    let shared_id = next_id();
    let mut root = ThreadWriter::new(saver, &thread, "");
    let c1 = root
        .step_with_id(shared_id.clone(), &[("a", Some(json!(1)))], loop_meta(0))
        .await;
    let c1_cfg = root.config.clone();
    let c2 = root.step(&[("a", Some(json!(2)))], loop_meta(1)).await;
    let c2_cfg = root.config.clone();
    let mut child = ThreadWriter::new(saver, &thread, "child:1");
    child
        .step_with_id(shared_id.clone(), &[("a", Some(json!("c")))], loop_meta(0))
        .await;
    let child_cfg = child.config.clone();

    put_writes(saver, &c1_cfg, &[("a", json!("on c1"))], "t1").await;
    put_writes(saver, &c2_cfg, &[("a", json!("on c2"))], "t2").await;
    put_writes(saver, &child_cfg, &[("a", json!("on child"))], "t3").await;

    let check = |tuple: &CheckpointTuple, expected: Vec<PendingWrite>, what: &str| {
        assert_eq!(
            tuple.pending_writes, expected,
            "pending writes of {what} must be exactly the writes put against it"
        );
    };
    check(
        &must_get(saver, &c1_cfg).await,
        vec![write("t1", "a", json!("on c1"))],
        "c1",
    );
    check(
        &must_get(saver, &c2_cfg).await,
        vec![write("t2", "a", json!("on c2"))],
        "c2",
    );
    check(
        &must_get(saver, &child_cfg).await,
        vec![write("t3", "a", json!("on child"))],
        "the child namespace's checkpoint with the same id",
    );
    let listed = list(
        saver,
        Some(&CheckpointConfig::thread(&thread)),
        &ListOptions::default(),
    )
    .await;
    assert_eq!(
        ids(&listed),
        ids_of(&[&c2, &c1]),
        "list of the root namespace"
    );
    check(
        &listed[0],
        vec![write("t2", "a", json!("on c2"))],
        "c2 (listed)",
    );
    check(
        &listed[1],
        vec![write("t1", "a", json!("on c1"))],
        "c1 (listed)",
    );
}

/// `put_with_writes` stores each task's writes against the current checkpoint,
/// in order, and the new checkpoint as its child, as `put_writes` and `put`
/// would; with no writes it is a `put`.
pub async fn put_with_writes_stores_the_writes_then_the_checkpoint(saver: &dyn Checkpointer) {
    let thread = unique_thread("put-with-writes");
    let mut w = ThreadWriter::new(saver, &thread, "");
    w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    let parent = w.config.clone();
    let child = w
        .step_after_writes(
            &[
                ("task-b", vec![("a", json!(2)), ("z", json!("z"))]),
                ("task-a", vec![("__error__", json!("boom"))]),
            ],
            &[("a", Some(json!(2)))],
            loop_meta(1),
        )
        .await;
    let got = must_get(saver, &parent).await.pending_writes;
    assert_eq!(
        sorted(got),
        sorted(vec![
            write("task-b", "a", json!(2)),
            write("task-b", "z", json!("z")),
            write("task-a", "__error__", json!("boom")),
        ]),
        "put_with_writes stores every task's writes against the parent checkpoint"
    );
    let b: Vec<String> = writes_of(&must_get(saver, &parent).await.pending_writes, "task-b")
        .iter()
        .map(|w| w.channel.clone())
        .collect();
    assert_eq!(b, vec!["a", "z"], "a task's writes keep their order");
    let latest = must_get(saver, &CheckpointConfig::thread(&thread)).await;
    assert_eq!(
        latest.checkpoint, child,
        "put_with_writes stores the checkpoint"
    );
    assert_eq!(
        latest.parent_config,
        Some(parent),
        "the checkpoint is the child of the one the writes belong to"
    );
    assert!(
        latest.pending_writes.is_empty(),
        "the writes belong to the parent, not to the new checkpoint"
    );
    let last = w
        .step_after_writes(&[], &[("b", Some(json!(3)))], loop_meta(2))
        .await;
    assert_eq!(
        must_get(saver, &CheckpointConfig::thread(&thread))
            .await
            .checkpoint,
        last,
        "put_with_writes without writes is a put"
    );
}

/// `put_chain` stores its checkpoints in order, each the child of the one
/// before, each step's writes against its parent; an empty chain stores
/// nothing and answers the config it was given.
pub async fn put_chain_stores_each_checkpoint_as_the_child_of_the_one_before(
    saver: &dyn Checkpointer,
) {
    let thread = unique_thread("put-chain");
    let mut w = ThreadWriter::new(saver, &thread, "");
    w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    let start = w.config.clone();
    let (first_id, second_id) = (next_id(), next_id());
    let (first_sent, first, first_versions) =
        w.next_checkpoint(first_id.clone(), &[("a", Some(json!(2)))]);
    let (second_sent, second, second_versions) =
        w.next_checkpoint(second_id.clone(), &[("b", Some(json!("b")))]);
    let puts = vec![
        StepPut {
            writes: vec![("task-0".to_owned(), vec![("a".to_owned(), blob(json!(2)))])],
            checkpoint: first_sent,
            metadata: meta(CheckpointSource::Input, 1, Value::Null),
            new_versions: first_versions,
            appends: NameMap::new(),
        },
        StepPut {
            writes: vec![(
                "task-1".to_owned(),
                vec![("b".to_owned(), blob(json!("b")))],
            )],
            checkpoint: second_sent,
            metadata: loop_meta(2),
            new_versions: second_versions,
            appends: NameMap::new(),
        },
    ];
    let stored = match saver.put_chain(&start, puts).await {
        Ok(c) => c,
        Err(e) => panic!("put_chain failed: {e}"),
    };
    let (first_config, second_config) = (start.at(first_id), start.at(second_id));
    assert_eq!(
        stored, second_config,
        "put_chain answers the last checkpoint's config"
    );
    let latest = must_get(saver, &CheckpointConfig::thread(&thread)).await;
    assert_eq!(
        latest.checkpoint, second,
        "the last of the chain is the latest"
    );
    assert_eq!(latest.parent_config, Some(first_config.clone()));
    assert!(latest.pending_writes.is_empty());
    let middle = must_get(saver, &first_config).await;
    assert_eq!(
        middle.checkpoint, first,
        "every checkpoint of the chain is stored"
    );
    assert_eq!(
        middle.parent_config,
        Some(start.clone()),
        "the first is the child of the config put_chain was given"
    );
    assert_eq!(
        middle.pending_writes,
        vec![write("task-1", "b", json!("b"))],
        "a step's writes belong to its parent"
    );
    assert_eq!(
        must_get(saver, &start).await.pending_writes,
        vec![write("task-0", "a", json!(2))]
    );
    let empty = match saver.put_chain(&second_config, Vec::new()).await {
        Ok(c) => c,
        Err(e) => panic!("an empty put_chain failed: {e}"),
    };
    assert_eq!(empty, second_config, "an empty chain answers its config");
    assert_eq!(
        must_get(saver, &CheckpointConfig::thread(&thread))
            .await
            .checkpoint,
        second
    );
}

/// `delete_thread` removes checkpoints, blobs and writes of every namespace of the
/// thread, and nothing of other threads.
pub async fn delete_thread_removes_every_namespace(saver: &dyn Checkpointer) {
    let doomed = unique_thread("delete");
    let kept = unique_thread("keep");
    let mut d_root = ThreadWriter::new(saver, &doomed, "");
    let mut d_child = ThreadWriter::new(saver, &doomed, "child:1");
    let mut k_root = ThreadWriter::new(saver, &kept, "");
    d_root
        .step(&[("a", Some(json!("doomed")))], loop_meta(0))
        .await;
    d_child
        .step(&[("a", Some(json!("doomed child")))], loop_meta(0))
        .await;
    let k = k_root
        .step(&[("a", Some(json!("kept")))], loop_meta(0))
        .await;
    put_writes(saver, &d_root.config, &[("a", json!("w"))], "t").await;
    put_writes(saver, &k_root.config, &[("a", json!("kw"))], "t").await;

    if let Err(e) = saver.delete_thread(&doomed).await {
        panic!("delete_thread({doomed}) failed: {e}");
    }
    let root_cfg = CheckpointConfig::thread(&doomed);
    let child_cfg = CheckpointConfig {
        checkpoint_ns: "child:1".into(),
        ..root_cfg.clone()
    };
    assert!(
        get(saver, &root_cfg).await.is_none(),
        "after delete_thread, get_tuple of the thread must be None"
    );
    assert!(
        get(saver, &child_cfg).await.is_none(),
        "after delete_thread, the thread's other namespaces must be gone too"
    );
    assert!(
        list(saver, Some(&root_cfg), &ListOptions::default())
            .await
            .is_empty(),
        "after delete_thread, the thread's history must be empty"
    );
    assert!(
        list(saver, None, &ListOptions::default())
            .await
            .iter()
            .all(|t| t.config.thread_id != doomed),
        "after delete_thread, list(None) must not show the thread"
    );
    let k_got = must_get(saver, &CheckpointConfig::thread(&kept)).await;
    assert_eq!(
        k_got.checkpoint, k,
        "delete_thread must not touch other threads"
    );
    assert_eq!(
        k_got.pending_writes,
        vec![write("t", "a", json!("kw"))],
        "delete_thread must not touch other threads' writes"
    );

    // Reusing the thread id with the same versions must not resurrect old blobs
    // or writes.
    let mut again = ThreadWriter::new(saver, &doomed, "");
    let fresh = again
        .step(&[("b", Some(json!("fresh")))], loop_meta(0))
        .await;
    let got = must_get(saver, &root_cfg).await;
    assert_eq!(
        got.checkpoint, fresh,
        "a thread re-created after delete_thread must not see the old values"
    );
    assert!(
        got.pending_writes.is_empty(),
        "a thread re-created after delete_thread must not see the old writes"
    );
    let mut again_child = ThreadWriter::new(saver, &doomed, "child:1");
    let fresh_child = again_child
        .step(&[("b", Some(json!(1)))], loop_meta(0))
        .await;
    let got = must_get(saver, &child_cfg).await;
    assert_eq!(
        got.checkpoint, fresh_child,
        "a namespace re-created after delete_thread must not see the old values (channel `a` had version 1)"
    );
}

/// Putting the same checkpoint or the same writes twice stores them once.
pub async fn idempotent_put_and_put_writes(saver: &dyn Checkpointer) {
    let thread = unique_thread("idempotent");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let c1 = w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    let c1_cfg = w.config.clone();
    let c2 = w.step(&[("a", Some(json!(2)))], loop_meta(1)).await;
    // Same id, same parent, same content again (a retried put).
    let mut again = ThreadWriter::new(saver, &thread, "");
    again.rewind(&c1);
    again.next_version = 2;
    let c2_again = again
        .step_with_id(c2.id.clone(), &[("a", Some(json!(2)))], loop_meta(1))
        .await;
    assert_eq!(
        c2_again, c2,
        "conformance suite bug: the retried put must be identical"
    );
    let history = list(
        saver,
        Some(&CheckpointConfig::thread(&thread)),
        &ListOptions::default(),
    )
    .await;
    assert_eq!(
        ids(&history),
        ids_of(&[&c2, &c1]),
        "putting the same checkpoint twice must store it once"
    );
    assert_eq!(
        history[0].checkpoint, c2,
        "a re-put checkpoint must read back unchanged"
    );
    assert_eq!(
        history[0].parent_config,
        Some(c1_cfg.clone()),
        "a re-put checkpoint keeps its parent"
    );
    let at = CheckpointConfig::thread(&thread).at(c2.id.clone());
    for _ in 0..3 {
        put_writes(saver, &at, &[("a", json!(5)), ("b", json!(6))], "task").await;
        put_writes(saver, &at, &[("__error__", json!("boom"))], "task").await;
    }
    let got = must_get(saver, &at).await.pending_writes;
    assert_eq!(
        sorted(got),
        sorted(vec![
            write("task", "a", json!(5)),
            write("task", "b", json!(6)),
            write("task", "__error__", json!("boom")),
        ]),
        "repeating put_writes must not duplicate writes"
    );
}

/// Values and metadata survive exactly: nesting, unicode, escapes, numbers, and a
/// channel holding `null` (which differs from an empty channel).
pub async fn value_fidelity(saver: &dyn Checkpointer) {
    let thread = unique_thread("fidelity");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let values = [
        (
            "nested",
            json!({"a": [1, 2, {"b": null}], "c": {"d": [true, false]}}),
        ),
        ("unicode", json!("héllo wörld ✓ 日本語 🚀")),
        (
            "escapes",
            json!("quote \" backslash \\ newline \n tab \t nul \u{0}"),
        ),
        ("big", json!(9_007_199_254_740_993_u64)),
        ("negative", json!(-42)),
        ("float", json!(0.1)),
        ("null_value", Value::Null),
        ("empty_list", json!([])),
        ("empty_object", json!({})),
        ("channel with spaces/and.dots", json!("ok")),
    ];
    let changes: Vec<(&str, Option<Value>)> =
        values.iter().map(|(c, v)| (*c, Some(v.clone()))).collect();
    let metadata = meta(
        CheckpointSource::Update,
        7,
        json!({"note": "ünïcode ✓", "deep": {"x": [1, "two"]}}),
    );
    let c = w.step(&changes, metadata.clone()).await;
    let got = must_get(saver, &w.config).await;
    assert_eq!(got.checkpoint, c, "values must round-trip exactly");
    assert_eq!(got.metadata, metadata, "metadata must round-trip exactly");
    assert_eq!(
        got.checkpoint.channel_values.get("null_value"),
        Some(&Blob::null()),
        "a channel holding null must come back as null, not as empty"
    );
    put_writes(
        saver,
        &w.config,
        &[
            ("nested", values[0].1.clone()),
            ("unicode", values[1].1.clone()),
        ],
        "task",
    )
    .await;
    let got = must_get(saver, &w.config).await.pending_writes;
    assert_eq!(
        got,
        vec![
            write("task", "nested", values[0].1.clone()),
            write("task", "unicode", values[1].1.clone()),
        ],
        "write values must round-trip exactly"
    );
}

async fn prune(saver: &dyn Checkpointer, thread: &str, retention: Retention) -> u64 {
    match saver.prune(thread, retention).await {
        Ok(n) => n,
        Err(e) => panic!("prune({thread}, {retention:?}) failed: {e}"),
    }
}

/// `prune(KeepLast(n))` keeps the newest `n` checkpoints of each namespace, which
/// read back unchanged (values of channels last written by a deleted checkpoint
/// included); the others go with their writes and the values nothing refers to.
pub async fn prune_keep_last(saver: &dyn Checkpointer) {
    let thread = unique_thread("prune-last");
    let other = unique_thread("prune-other");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let c1 = w
        .step(
            &[("a", Some(json!(1))), ("b", Some(json!("b1")))],
            loop_meta(0),
        )
        .await;
    let c1_cfg = w.config.clone();
    w.step(&[("a", Some(json!(2)))], loop_meta(1)).await;
    let c3 = w.step(&[("c", Some(json!("kept")))], loop_meta(2)).await;
    let c4 = w.step(&[("a", Some(json!(4)))], loop_meta(3)).await;
    let c4_cfg = w.config.clone();
    let c5 = w.step(&[("b", Some(json!("b5")))], loop_meta(4)).await;
    let c5_cfg = w.config.clone();
    put_writes(saver, &c1_cfg, &[("a", json!("old write"))], "t1").await;
    put_writes(saver, &c5_cfg, &[("a", json!("pending"))], "t5").await;
    let mut child = ThreadWriter::new(saver, &thread, "child:1");
    let k1 = child.step(&[("x", Some(json!(1)))], loop_meta(0)).await;
    let k2 = child.step(&[("x", Some(json!(2)))], loop_meta(1)).await;
    let mut o = ThreadWriter::new(saver, &other, "");
    let o1 = o.step(&[("a", Some(json!("o1")))], loop_meta(0)).await;
    let o2 = o.step(&[("a", Some(json!("o2")))], loop_meta(1)).await;

    assert!(
        matches!(
            saver.prune(&thread, Retention::KeepLast(0)).await,
            Err(CheckpointError::InvalidInput(_))
        ),
        "prune(KeepLast(0)) must be InvalidInput (it would delete the current state)"
    );
    assert_eq!(
        prune(saver, &thread, Retention::KeepLast(2)).await,
        3,
        "prune(KeepLast(2)) of 5 root and 2 child checkpoints deletes 3 root ones"
    );
    let root = CheckpointConfig::thread(&thread);
    let history = list(saver, Some(&root), &ListOptions::default()).await;
    assert_eq!(
        ids(&history),
        ids_of(&[&c5, &c4]),
        "after prune(KeepLast(2)), the namespace's history is its 2 newest checkpoints"
    );
    let got5 = must_get(saver, &c5_cfg).await;
    assert_eq!(
        got5.checkpoint, c5,
        "a kept checkpoint reads back unchanged, including channels last written by a \
         pruned checkpoint (`c`, written by the 3rd)"
    );
    assert_eq!(
        got5.pending_writes,
        vec![write("t5", "a", json!("pending"))],
        "a kept checkpoint keeps its pending writes"
    );
    let got4 = must_get(saver, &c4_cfg).await;
    assert_eq!(
        got4.checkpoint, c4,
        "the oldest kept checkpoint reads back unchanged"
    );
    assert_eq!(
        got4.parent_config,
        Some(root.at(c3.id.clone())),
        "prune leaves parent_config as it was, even when it names a deleted checkpoint"
    );
    assert!(
        get(saver, &c1_cfg).await.is_none(),
        "a pruned checkpoint is gone"
    );
    let child_cfg = CheckpointConfig {
        checkpoint_ns: "child:1".into(),
        ..root.clone()
    };
    assert_eq!(
        ids(&list(saver, Some(&child_cfg), &ListOptions::default()).await),
        ids_of(&[&k2, &k1]),
        "prune counts each namespace on its own (the child had only 2)"
    );
    assert_eq!(
        ids(&list(
            saver,
            Some(&CheckpointConfig::thread(&other)),
            &ListOptions::default()
        )
        .await),
        ids_of(&[&o2, &o1]),
        "prune must not touch other threads"
    );
    assert_eq!(
        prune(saver, &thread, Retention::KeepLast(2)).await,
        0,
        "pruning again deletes nothing"
    );
    assert_eq!(
        prune(saver, &unique_thread("never"), Retention::KeepLast(1)).await,
        0,
        "pruning a thread that was never written deletes nothing"
    );

    // The first checkpoint's value of `a` (version 1) is referenced by no kept
    // checkpoint, so it must be gone: a new checkpoint storing version 1 of `a`
    // with another value must read that value (a leftover would win, since a
    // channel version is written once).
    let mut again = ThreadWriter::new(saver, &thread, "");
    again.rewind(&c5);
    again.next_version = 1;
    let fresh = again
        .step(&[("a", Some(json!("fresh")))], loop_meta(5))
        .await;
    assert_eq!(
        must_get(saver, &again.config).await.checkpoint,
        fresh,
        "prune must delete stored values that no remaining checkpoint refers to"
    );
    // And the pruned checkpoint's writes are gone: re-creating it shows none.
    let mut redo = ThreadWriter::new(saver, &thread, "");
    redo.next_version = 50;
    redo.step_with_id(c1.id.clone(), &[("z", Some(json!(0)))], loop_meta(0))
        .await;
    assert!(
        must_get(saver, &root.at(c1.id.clone()))
            .await
            .pending_writes
            .is_empty(),
        "prune must delete the pending writes of the checkpoints it deletes"
    );
}

/// `prune(OlderThan(t))` deletes the checkpoints whose `ts` is before `t`, but
/// never the newest of a namespace.
pub async fn prune_older_than(saver: &dyn Checkpointer) {
    let thread = unique_thread("prune-time");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let mut all = Vec::new();
    for n in 0..5 {
        all.push(w.step(&[("n", Some(json!(n)))], loop_meta(n)).await);
    }
    let Some(cutoff) = all[2].created_at() else {
        panic!("conformance suite bug: ts {} does not parse", all[2].ts);
    };
    assert_eq!(
        prune(saver, &thread, Retention::OlderThan(cutoff)).await,
        2,
        "prune(OlderThan(t)) deletes the checkpoints created strictly before t"
    );
    let root = CheckpointConfig::thread(&thread);
    assert_eq!(
        ids(&list(saver, Some(&root), &ListOptions::default()).await),
        ids_of(&[&all[4], &all[3], &all[2]]),
        "prune(OlderThan(t)) keeps the checkpoints created at or after t"
    );
    let far_future = std::time::SystemTime::now() + std::time::Duration::from_secs(86_400);
    assert_eq!(
        prune(saver, &thread, Retention::OlderThan(far_future)).await,
        2,
        "prune(OlderThan(t)) keeps the newest checkpoint even if it is older than t"
    );
    let latest = must_get(saver, &root).await;
    assert_eq!(
        latest.checkpoint, all[4],
        "the newest checkpoint survives every prune, unchanged"
    );
}

async fn begin(saver: &dyn Checkpointer, thread: &str) -> super::RunGuard {
    match saver.begin_run(thread, "").await {
        Ok(guard) => guard,
        Err(e) => panic!("begin_run({thread}) failed: {e}"),
    }
}

fn writer_of(guard: &super::RunGuard) -> std::sync::Arc<dyn Checkpointer> {
    match guard.writer() {
        Some(writer) => std::sync::Arc::clone(writer),
        None => panic!(
            "leases: begin_run must return a guard with a writer that fences the run's writes"
        ),
    }
}

fn is_busy<T: std::fmt::Debug>(result: &Result<T, CheckpointError>, thread: &str) -> bool {
    matches!(result, Err(CheckpointError::ThreadBusy { thread_id }) if thread_id == thread)
}

fn is_lost<T: std::fmt::Debug>(result: &Result<T, CheckpointError>, thread: &str) -> bool {
    matches!(result, Err(CheckpointError::LeaseLost { thread_id, owner, .. })
        if thread_id == thread && !owner.is_empty())
}

/// While a run holds a thread, another `begin_run` of it is `ThreadBusy`; other
/// threads are free; once released, the thread is free again.
pub async fn a_held_thread_is_busy(saver: &dyn Checkpointer) {
    let thread = unique_thread("lease-busy");
    let guard = begin(saver, &thread).await;
    let second = saver.begin_run(&thread, "").await;
    assert!(
        is_busy(&second, &thread),
        "leases: a second begin_run of a held thread must be ThreadBusy, got {second:?}"
    );
    let other = unique_thread("lease-busy-other");
    begin(saver, &other).await.release().await;
    guard.release().await;
    begin(saver, &thread).await.release().await;
}

/// `begin_run_and_load` holds the thread as `begin_run` does and returns the
/// checkpoint its config addresses (the latest, or a given one; `None` for a
/// thread or id with none), with its pending writes.
pub async fn begin_run_and_load_holds_and_reads_the_thread(saver: &dyn Checkpointer) {
    let thread = unique_thread("lease-load");
    let config = CheckpointConfig::thread(&thread);
    let load = |config: CheckpointConfig| async move {
        match saver.begin_run_and_load(&config).await {
            Ok(loaded) => loaded,
            Err(e) => panic!("begin_run_and_load({config:?}) failed: {e}"),
        }
    };
    let (guard, none) = load(config.clone()).await;
    assert!(
        none.is_none(),
        "leases: begin_run_and_load of a new thread loads nothing"
    );
    let writer = writer_of(&guard);
    let mut w = ThreadWriter::new(&*writer, &thread, "");
    let first = w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    let first_config = w.config.clone();
    let second = w
        .step_after_writes(
            &[("task", vec![("a", json!(2))])],
            &[("a", Some(json!(2)))],
            loop_meta(1),
        )
        .await;
    let busy = saver.begin_run_and_load(&config).await;
    assert!(
        is_busy(&busy, &thread),
        "leases: begin_run_and_load of a held thread must be ThreadBusy, got {busy:?}"
    );
    guard.release().await;

    let (guard, latest) = load(config.clone()).await;
    let latest = latest.unwrap_or_else(|| panic!("leases: begin_run_and_load lost the thread"));
    assert_eq!(
        latest.checkpoint, second,
        "leases: begin_run_and_load loads the latest checkpoint"
    );
    assert!(
        is_busy(&saver.begin_run(&thread, "").await, &thread),
        "leases: begin_run_and_load holds the thread"
    );
    guard.release().await;
    let (guard, at_first) = load(first_config).await;
    let at_first = at_first.unwrap_or_else(|| panic!("leases: the first checkpoint is gone"));
    assert_eq!(
        (at_first.checkpoint, at_first.pending_writes),
        (first, vec![write("task", "a", json!(2))]),
        "leases: begin_run_and_load loads the addressed checkpoint with its writes"
    );
    guard.release().await;
    let (guard, missing) = load(config.at(next_id())).await;
    assert!(
        missing.is_none(),
        "leases: begin_run_and_load of a missing checkpoint id loads nothing"
    );
    guard.release().await;
    begin(saver, &thread).await.release().await;
}

/// `delete_thread` and `prune` refuse a thread a run holds, and delete nothing.
pub async fn delete_and_prune_refuse_a_held_thread(saver: &dyn Checkpointer) {
    let thread = unique_thread("lease-delete");
    let guard = begin(saver, &thread).await;
    let writer = writer_of(&guard);
    let mut w = ThreadWriter::new(&*writer, &thread, "");
    w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    w.step(&[("a", Some(json!(2)))], loop_meta(1)).await;
    let deleted = saver.delete_thread(&thread).await;
    assert!(
        is_busy(&deleted, &thread),
        "leases: delete_thread of a held thread must be ThreadBusy, got {deleted:?}"
    );
    let pruned = saver.prune(&thread, Retention::KeepLast(1)).await;
    assert!(
        is_busy(&pruned, &thread),
        "leases: prune of a held thread must be ThreadBusy, got {pruned:?}"
    );
    let config = CheckpointConfig::thread(&thread);
    assert_eq!(
        list(saver, Some(&config), &ListOptions::default())
            .await
            .len(),
        2,
        "leases: a refused delete_thread or prune deletes nothing"
    );
    guard.release().await;
    prune(saver, &thread, Retention::KeepLast(1)).await;
    if let Err(e) = saver.delete_thread(&thread).await {
        panic!("leases: delete_thread of a released thread failed: {e}");
    }
}

/// A run whose thread was given to another run, or deleted, after its guard
/// was released or dropped: its writes fail with `LeaseLost` and store nothing.
pub async fn writes_of_a_run_that_lost_its_thread_are_fenced(saver: &dyn Checkpointer) {
    let thread = unique_thread("lease-fence");
    let config = CheckpointConfig::thread(&thread);
    let first = begin(saver, &thread).await;
    let stale = writer_of(&first);
    let mut w = ThreadWriter::new(&*stale, &thread, "");
    let kept = w.step(&[("a", Some(json!(1)))], loop_meta(0)).await;
    first.release().await;

    // Another run holds the thread now.
    let second = begin(saver, &thread).await;
    let mut checkpoint = kept.clone();
    checkpoint.id = next_id();
    let put = stale
        .put(
            &config.at(kept.id.clone()),
            checkpoint.clone(),
            loop_meta(1),
            NameMap::new(),
        )
        .await;
    assert!(
        is_lost(&put, &thread),
        "leases: a put of a run whose thread another run holds must be LeaseLost, got {put:?}"
    );
    let writes = stale
        .put_writes(
            &config.at(kept.id.clone()),
            vec![("a".to_owned(), blob(json!(5)))],
            "task",
        )
        .await;
    assert!(
        is_lost(&writes, &thread),
        "leases: put_writes of a run whose thread another run holds must be LeaseLost, got \
         {writes:?}"
    );
    let both = stale
        .put_with_writes(
            &config.at(kept.id.clone()),
            vec![("task".to_owned(), vec![("a".to_owned(), blob(json!(6)))])],
            checkpoint.clone(),
            loop_meta(1),
            NameMap::new(),
            NameMap::new(),
        )
        .await;
    assert!(
        is_lost(&both, &thread),
        "leases: put_with_writes of a run whose thread another run holds must be LeaseLost, \
         got {both:?}"
    );
    let latest = must_get(saver, &config).await;
    assert_eq!(
        latest.checkpoint.id, kept.id,
        "leases: a fenced put stores nothing"
    );
    assert!(
        latest.pending_writes.is_empty(),
        "leases: fenced put_writes store nothing"
    );
    // The holder's own writes go through.
    let current = writer_of(&second);
    let mut w = ThreadWriter::new(&*current, &thread, "");
    w.config = config.at(kept.id.clone());
    w.next_version = 2;
    w.step(&[("a", Some(json!(2)))], loop_meta(1)).await;
    second.release().await;

    // Released, then deleted: the old writer still stores nothing.
    if let Err(e) = saver.delete_thread(&thread).await {
        panic!("leases: delete_thread of a released thread failed: {e}");
    }
    let put = stale
        .put(&config, checkpoint, loop_meta(0), NameMap::new())
        .await;
    assert!(
        is_lost(&put, &thread),
        "leases: a put of a run whose thread was deleted must be LeaseLost, got {put:?}"
    );
    assert!(
        get(saver, &config).await.is_none(),
        "leases: nothing is stored after the delete"
    );
}

/// A checkpoint whose `channel_versions` names a version for which no value was
/// ever stored (not even an empty one) does not load: reading it is a `Corrupt`
/// error naming the channel, never a checkpoint without that channel's value
/// (which the engine would read as the field's default).
pub async fn a_version_without_a_stored_value_is_an_error(saver: &dyn Checkpointer) {
    let thread = unique_thread("missing-value");
    let mut w = ThreadWriter::new(saver, &thread, "");
    let first = w.step(&[("kept", Some(json!(1)))], loop_meta(0)).await;
    let mut broken = first.clone();
    broken.id = next_id();
    broken.channel_values = NameMap::new();
    broken
        .channel_versions
        .insert(SharedStr::from("lost"), version(99));
    let config = CheckpointConfig::thread(&thread).at(first.id.clone());
    if let Err(e) = saver
        .put(&config, broken.clone(), loop_meta(1), NameMap::new())
        .await
    {
        panic!("put of checkpoint {} failed: {e}", broken.id);
    }
    let read = saver
        .get_tuple(&CheckpointConfig::thread(&thread).at(broken.id.clone()))
        .await;
    match read {
        Err(CheckpointError::Corrupt {
            thread_id,
            checkpoint_id,
            what,
            ..
        }) => {
            assert_eq!(
                thread_id, thread,
                "missing value: the error names the thread"
            );
            assert_eq!(
                checkpoint_id, broken.id,
                "missing value: the error names the checkpoint"
            );
            assert!(
                what.contains("lost"),
                "missing value: the error names the channel, got `{what}`"
            );
        }
        other => panic!(
            "missing value: a checkpoint naming a version without a stored value must be a \
             Corrupt error, got {other:?}"
        ),
    }
    let listed = saver
        .list(
            Some(&CheckpointConfig::thread(&thread)),
            &ListOptions::default(),
        )
        .await;
    assert!(
        matches!(listed, Err(CheckpointError::Corrupt { .. })),
        "missing value: list must fail the same way, got {listed:?}"
    );
    // The thread can still be deleted.
    if let Err(e) = saver.delete_thread(&thread).await {
        panic!("delete_thread of a thread with a missing value failed: {e}");
    }
}

/// How one checkpoint of [`put_log`] gives channel `log`'s new value.
enum LogValue<'a> {
    /// The whole value.
    Whole(Value),
    /// Keeps the first `keep` items of version `base`, then `items`.
    Appended {
        base: u64,
        keep: usize,
        items: &'a str,
    },
}

/// Puts a checkpoint of `thread` after `parent` (an id) holding version `n` of
/// channel `log` (given by `value`) and version `n` of a whole channel
/// `count`; returns the new checkpoint's config.
async fn put_log(
    saver: &dyn Checkpointer,
    thread: &str,
    parent: Option<&CheckpointConfig>,
    n: u64,
    value: LogValue<'_>,
) -> Result<CheckpointConfig, CheckpointError> {
    let config = parent
        .cloned()
        .unwrap_or_else(|| CheckpointConfig::thread(thread));
    let id = next_id();
    let mut channel_values = NameMap::new();
    channel_values.insert(SharedStr::from("count"), blob(json!(n)));
    let mut appends = NameMap::new();
    match value {
        LogValue::Whole(value) => {
            channel_values.insert(SharedStr::from("log"), blob(value));
        }
        LogValue::Appended { base, keep, items } => {
            let items = match Blob::from_json(items) {
                Ok(items) => items,
                Err(e) => panic!("appends: the items {items} are not JSON: {e}"),
            };
            appends.insert(
                SharedStr::from("log"),
                Append {
                    base: version(base),
                    keep,
                    items,
                },
            );
        }
    }
    let mut versions = NameMap::new();
    versions.insert(SharedStr::from("count"), version(n));
    versions.insert(SharedStr::from("log"), version(n));
    let checkpoint = Checkpoint {
        v: 4,
        id,
        ts: format!("2024-07-31T20:14:19.{n:06}+00:00"),
        channel_values,
        channel_versions: versions.clone(),
        versions_seen: NameMap::new(),
        updated_channels: None,
    };
    let step = i64::try_from(n).unwrap_or(i64::MAX);
    saver
        .put_appending(&config, checkpoint, loop_meta(step), versions, appends)
        .await
}

/// [`put_log`], which must succeed.
async fn must_put_log(
    saver: &dyn Checkpointer,
    thread: &str,
    parent: Option<&CheckpointConfig>,
    n: u64,
    value: LogValue<'_>,
) -> CheckpointConfig {
    match put_log(saver, thread, parent, n, value).await {
        Ok(config) => config,
        Err(e) => panic!("appends: the put of version {n} of `log` failed: {e}"),
    }
}

/// Channel `log` of the checkpoint at `config`, and its `count`.
async fn log_at(saver: &dyn Checkpointer, config: &CheckpointConfig) -> (Value, Value) {
    let tuple = must_get(saver, config).await;
    let read = |channel: &str| -> Value {
        match tuple.checkpoint.channel_values.get(channel) {
            Some(b) => match b.decode() {
                Ok(v) => v,
                Err(e) => panic!("appends: `{channel}` at {config:?} is not JSON: {e}"),
            },
            None => panic!("appends: `{channel}` has no value at {config:?}"),
        }
    };
    (read("log"), read("count"))
}

/// Every version of a list channel stored as appends (plain appends, one that
/// replaces the last item, an empty one, a fork appending to an older version)
/// reads back whole, by id and in `list`, next to a channel stored whole; a
/// value read before an append is not changed by it.
pub async fn appended_values_read_back_whole_at_every_version(saver: &dyn Checkpointer) {
    let thread = unique_thread("appends");
    let mut configs =
        vec![must_put_log(saver, &thread, None, 1, LogValue::Whole(json!([1, 2]))).await];
    let mut expected = vec![json!([1, 2])];
    let steps: [(usize, &str, Value); 4] = [
        (2, "[3]", json!([1, 2, 3])),
        (3, r#"["a",{"b":[4]}]"#, json!([1, 2, 3, "a", {"b": [4]}])),
        // Keeps 4 of 5: replaces the last item.
        (4, "[5]", json!([1, 2, 3, "a", 5])),
        (5, "[]", json!([1, 2, 3, "a", 5])),
    ];
    for (i, (keep, items, whole)) in steps.into_iter().enumerate() {
        let n = i as u64 + 2;
        // The newest value, read (and held) before the append.
        let held = must_get(saver, &configs[i]).await;
        let config = must_put_log(
            saver,
            &thread,
            Some(&configs[i]),
            n,
            LogValue::Appended {
                base: n - 1,
                keep,
                items,
            },
        )
        .await;
        let held_log: Value = held.checkpoint.channel_values["log"]
            .decode()
            .unwrap_or_default();
        assert_eq!(
            held_log, expected[i],
            "appends: a value read before an append must not change with it"
        );
        configs.push(config);
        expected.push(whole);
    }
    for (i, (config, want)) in configs.iter().zip(&expected).enumerate() {
        assert_eq!(
            log_at(saver, config).await,
            (want.clone(), json!(i + 1)),
            "appends: version {} of an appended list must read back whole",
            i + 1
        );
    }
    assert_eq!(
        log_at(saver, &CheckpointConfig::thread(&thread)).await.0,
        expected[4],
        "appends: the latest checkpoint holds the newest whole value"
    );
    let listed = list(
        saver,
        Some(&CheckpointConfig::thread(&thread)),
        &ListOptions::default(),
    )
    .await;
    let listed: Vec<Value> = listed
        .iter()
        .rev()
        .map(|t| {
            t.checkpoint.channel_values["log"]
                .decode()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        listed, expected,
        "appends: list must assemble every version"
    );
    // A fork: appends to version 2 (not the newest) from its checkpoint.
    let fork = must_put_log(
        saver,
        &thread,
        Some(&configs[1]),
        6,
        LogValue::Appended {
            base: 2,
            keep: 2,
            items: r#"["fork"]"#,
        },
    )
    .await;
    assert_eq!(
        log_at(saver, &fork).await.0,
        json!([1, 2, "fork"]),
        "appends: an append to an older version extends that version"
    );
    assert_eq!(
        log_at(saver, &configs[4]).await.0,
        expected[4],
        "appends: a fork leaves the versions it did not extend as they were"
    );
    // Stored whole again after appends: extends as before.
    let whole_again = must_put_log(
        saver,
        &thread,
        Some(&fork),
        7,
        LogValue::Whole(json!(["new"])),
    )
    .await;
    let after = must_put_log(
        saver,
        &thread,
        Some(&whole_again),
        8,
        LogValue::Appended {
            base: 7,
            keep: 1,
            items: "[2]",
        },
    )
    .await;
    assert_eq!(
        log_at(saver, &after).await.0,
        json!(["new", 2]),
        "appends: an append to a value stored whole extends it"
    );
}

/// Two hundred appends of ~100 bytes each read back whole at any version, and
/// `prune(KeepLast(60))` keeps exactly the newest 60, whose values still read
/// back (a kept version keeps the versions it extends).
pub async fn a_long_chain_of_appends_reads_back_and_prunes_exactly(saver: &dyn Checkpointer) {
    let thread = unique_thread("append-chain");
    let item = format!("\"{}\"", "y".repeat(100));
    let items = format!("[{item}]");
    let mut configs =
        vec![must_put_log(saver, &thread, None, 1, LogValue::Whole(json!(["x"]))).await];
    for n in 2..=200u64 {
        let parent = configs.last().cloned();
        let config = must_put_log(
            saver,
            &thread,
            parent.as_ref(),
            n,
            LogValue::Appended {
                base: n - 1,
                keep: n as usize - 1,
                items: &items,
            },
        )
        .await;
        configs.push(config);
    }
    let want = |n: usize| -> Value {
        let mut v = vec![json!("x")];
        v.extend((1..n).map(|_| json!("y".repeat(100))));
        Value::Array(v)
    };
    assert_eq!(
        log_at(saver, &configs[199]).await.0,
        want(200),
        "append chain: version 200"
    );
    assert_eq!(
        log_at(saver, &configs[149]).await.0,
        want(150),
        "append chain: version 150"
    );
    assert_eq!(
        log_at(saver, &configs[9]).await.0,
        want(10),
        "append chain: version 10"
    );
    assert_eq!(
        prune(saver, &thread, Retention::KeepLast(60)).await,
        140,
        "append chain: prune(KeepLast(60)) of 200 deletes 140"
    );
    assert_eq!(
        log_at(saver, &configs[149]).await.0,
        want(150),
        "append chain: a kept version still reads back after prune"
    );
    assert_eq!(
        log_at(saver, &configs[140]).await.0,
        want(141),
        "append chain: the oldest kept version"
    );
    assert_eq!(
        log_at(saver, &configs[199]).await.0,
        want(200),
        "append chain: the newest after prune"
    );
    assert!(
        get(saver, &configs[99]).await.is_none(),
        "append chain: a pruned checkpoint is gone"
    );
    // The thread goes on after the prune.
    let next = must_put_log(
        saver,
        &thread,
        Some(&configs[199]),
        201,
        LogValue::Appended {
            base: 200,
            keep: 200,
            items: &items,
        },
    )
    .await;
    assert_eq!(
        log_at(saver, &next).await.0,
        want(201),
        "append chain: an append after prune"
    );
}

/// An append to a version that is not stored, or that keeps more items than
/// its base has, is an error, and the thread reads back as before.
pub async fn an_append_that_cannot_extend_its_base_is_refused(saver: &dyn Checkpointer) {
    let thread = unique_thread("append-refused");
    let first = must_put_log(saver, &thread, None, 1, LogValue::Whole(json!([1]))).await;
    let too_many = put_log(
        saver,
        &thread,
        Some(&first),
        2,
        LogValue::Appended {
            base: 1,
            keep: 2,
            items: "[2]",
        },
    )
    .await;
    assert!(
        too_many.is_err(),
        "appends: keeping 2 items of a 1-item value must fail, got {too_many:?}"
    );
    let missing = put_log(
        saver,
        &thread,
        Some(&first),
        3,
        LogValue::Appended {
            base: 9,
            keep: 1,
            items: "[2]",
        },
    )
    .await;
    assert!(
        missing.is_err(),
        "appends: an append to a version never stored must fail, got {missing:?}"
    );
    let latest = must_get(saver, &CheckpointConfig::thread(&thread)).await;
    assert_eq!(
        latest.config.checkpoint_id, first.checkpoint_id,
        "appends: a refused append stores no checkpoint"
    );
    assert_eq!(log_at(saver, &first).await.0, json!([1]));
}
