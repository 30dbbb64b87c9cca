//! The loop's side of persistence: LangGraph-format checkpoints from the live state
//! (serialising only channels whose version changed), restoring a run from one, and
//! encoding a task's writes as pending writes.

use super::control::ControlChannel;
use super::writes::{ControlWrite, TaskWrites};
use super::Run;
use crate::channels::Channel;
use crate::checkpoint::{
    Append, Blob, ChannelVersion, ChannelVersions, Checkpoint, CheckpointMetadata,
    CheckpointSource, CheckpointTuple, NameMap, PendingWrite, SharedStr,
};
use crate::compiled::Graph;
use crate::error::{GraphError, PanicSite, SerdeValue};
use crate::state::{FieldSet, FieldVisitor, State, StateUpdate};
use crate::unwind;
use serde::Serialize;
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Special channels of pending writes (docs/semantics.md §6.4).
pub(crate) const NO_WRITES: &str = "__no_writes__";
pub(crate) const ERROR: &str = "__error__";
pub(crate) const INTERRUPT: &str = crate::checkpoint::INTERRUPT_CHANNEL;
pub(crate) const RESUME: &str = "__resume__";
pub(crate) const TASKS: &str = crate::checkpoint::TASKS_CHANNEL;
/// The task id of writes not tied to a task (a `Command` given as input).
pub(crate) const NULL_TASK_ID: &str = "00000000-0000-0000-0000-000000000000";

/// Whether a pending write records how a task ended (an error, an interrupt, its
/// resume answers) rather than a write to a channel.
pub(crate) fn is_control(channel: &str) -> bool {
    matches!(channel, ERROR | INTERRUPT | RESUME | "__scheduled__")
}

/// The error of a panic in the `Serialize` impl of field `field`: the field a
/// collector was at when the visit of a state or an update panicked (one catch
/// per visit, not per field: this runs for every checkpoint).
fn serialize_panic(panic: unwind::Caught, field: &str, step: i64) -> GraphError {
    panic.at(PanicSite::Serializing {
        value: SerdeValue::StateField(field.to_owned()),
        step,
    })
}

/// Serialises the payload of `send`, catching a panic of its `Serialize` impl.
fn encode_send(send: &crate::command::Send, step: i64) -> Result<Blob, GraphError> {
    match unwind::catch(|| send.encode_payload()) {
        Ok(encoded) => {
            encoded.map_err(|e| encode_error(&format!("a Send to `{}`", send.node()), e))
        }
        Err(panic) => Err(panic.at(PanicSite::Serializing {
            value: SerdeValue::SendPayload(send.node().to_owned()),
            step,
        })),
    }
}

/// What a restore is decoding, kept up to date so that a panic of a
/// `Deserialize` impl of the user's names the value: one catch per restore,
/// not one per value (this runs for every field of every checkpoint read).
#[derive(Clone, Copy, Default)]
enum Decoding {
    /// The engine's own data: nothing of the user's.
    #[default]
    Engine,
    /// The value of (or a write to) the state field with this index.
    Field(usize),
    /// The payload of a `Send` to the node with this index.
    SendPayload(usize),
}

impl Decoding {
    /// The error of a panic while this was decoded from `tuple`.
    fn panicked<S: State>(
        self,
        panic: unwind::Caught,
        tuple: &CheckpointTuple,
        graph: &Graph<S>,
    ) -> GraphError {
        let value = match self {
            Decoding::Engine => return panic.at(PanicSite::Run),
            Decoding::Field(c) => {
                SerdeValue::StateField(S::FIELDS.get(c).copied().unwrap_or_default().to_owned())
            }
            Decoding::SendPayload(node) => SerdeValue::SendPayload(
                graph
                    .nodes
                    .get(node)
                    .map(|n| n.name.to_string())
                    .unwrap_or_default(),
            ),
        };
        panic.at(PanicSite::Deserializing {
            value,
            checkpoint_id: tuple.checkpoint.id.clone(),
        })
    }
}

/// Collects one blob per visited field.
struct BlobCollector<'a> {
    out: &'a mut Vec<(String, Blob)>,
    /// The field being serialised.
    at: &'static str,
    error: Option<serde_json::Error>,
}

impl<'a> BlobCollector<'a> {
    fn new(out: &'a mut Vec<(String, Blob)>) -> Self {
        BlobCollector {
            out,
            at: "",
            error: None,
        }
    }
}

impl FieldVisitor for BlobCollector<'_> {
    fn visit<T: Serialize + ?Sized>(&mut self, _field: usize, name: &'static str, value: &T) {
        self.at = name;
        match Blob::encode(value) {
            Ok(blob) => self.out.push((name.to_owned(), blob)),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
}

fn encode_error(what: &str, e: impl std::fmt::Display) -> GraphError {
    GraphError::Checkpoint(crate::checkpoint::CheckpointError::Storage(
        format!("cannot serialise {what}: {e}").into(),
    ))
}

/// Version texts made for one checkpoint, by version number.
type MadeVersions = SmallVec<[(u64, ChannelVersion); 8]>;

/// What a run that stores checkpoints tracks to build each one in what changed:
/// the channels a checkpoint lists, and the nodes that ran last.
#[derive(Default)]
pub(crate) struct Book {
    listed: Listed,
    /// The nodes whose latest seen version is the highest any node has seen
    /// (`update_state` without `as_node` is attributed to them), that version,
    /// and their triggers (a node's triggers are its own).
    last_ran: SmallVec<[usize; 4]>,
    last_ran_seen: u64,
    last_ran_triggers: FieldSet,
}

impl Book {
    /// Node `node` ran and saw versions up to `seen`: it joins (or replaces) the
    /// nodes that ran last. The triggers of nodes that no longer ran last are
    /// looked at again at the next checkpoint (they may be left out now).
    pub(crate) fn ran<S: State>(
        &mut self,
        nodes: &[crate::compiled::CompiledNode<S>],
        node: usize,
        seen: u64,
    ) {
        if seen < self.last_ran_seen {
            return;
        }
        let listed = nodes[node]
            .triggers
            .first()
            .is_some_and(|&c| self.last_ran_triggers.contains(c));
        if listed && seen == self.last_ran_seen {
            return;
        }
        if seen > self.last_ran_seen {
            for n in std::mem::take(&mut self.last_ran) {
                for &c in &nodes[n].triggers {
                    self.last_ran_triggers.remove(c);
                    self.listed.recheck(c);
                }
            }
            self.last_ran_seen = seen;
        }
        self.last_ran.push(node);
        for &c in &nodes[node].triggers {
            self.last_ran_triggers.insert(c);
        }
    }
}

/// The channels a stored checkpoint lists in `channel_versions`: those with a
/// version that hold something (see `Run::create_checkpoint`), in name order.
/// Kept up to date from the channels whose version changed, so that building a
/// checkpoint costs what changed, not the number of channels.
#[derive(Default)]
pub(crate) struct Listed {
    /// Channel ids, sorted by name (by `Graph::channel_rank`).
    ids: SmallVec<[usize; 8]>,
    is_listed: FieldSet,
    /// Channels to look at again at the next update (those a restored
    /// checkpoint listed: it may list empty ones, as LangGraph's do).
    recheck: SmallVec<[usize; 8]>,
}

impl Listed {
    fn contains(&self, c: usize) -> bool {
        self.is_listed.contains(c)
    }

    /// Where `c` is in `ids`, if listed.
    fn position(&self, rank: &[usize], c: usize) -> Option<usize> {
        if !self.contains(c) {
            return None;
        }
        self.ids.binary_search_by_key(&rank[c], |&l| rank[l]).ok()
    }

    /// Looks at channel `c` again at the next update.
    pub(crate) fn recheck(&mut self, c: usize) {
        self.recheck.push(c);
    }

    /// Lists channel `c` (a restored one, looked at again at the next update).
    fn restored(&mut self, rank: &[usize], c: usize) {
        if !self.contains(c) {
            let at = self
                .ids
                .binary_search_by_key(&rank[c], |&l| rank[l])
                .unwrap_or_else(|i| i);
            self.ids.insert(at, c);
            self.is_listed.insert(c);
        }
        self.recheck.push(c);
    }

    /// Lists or unlists each of `changed` (and the channels to recheck) as
    /// `keep` says.
    fn update(&mut self, rank: &[usize], changed: &[usize], keep: impl Fn(usize) -> bool) {
        let recheck = std::mem::take(&mut self.recheck);
        for &c in changed.iter().chain(&recheck) {
            let listed = self.contains(c);
            if keep(c) == listed {
                continue;
            }
            let at = self.ids.binary_search_by_key(&rank[c], |&l| rank[l]);
            match at {
                Ok(i) => {
                    self.ids.remove(i);
                    self.is_listed.remove(c);
                }
                Err(i) => {
                    self.ids.insert(i, c);
                    self.is_listed.insert(c);
                }
            }
        }
    }
}

/// Collects the serialised state fields of a checkpoint, by channel.
struct ValueCollector<'a> {
    out: &'a mut [Option<Blob>],
    /// Per field, the leading items to leave out (only the items after them
    /// are stored, see `append`), when that is planned.
    skips: &'a [Option<usize>],
    /// The fields stored as their items after the skipped ones.
    appended: FieldSet,
    /// The field being serialised.
    at: &'static str,
    error: Option<serde_json::Error>,
}

impl FieldVisitor for ValueCollector<'_> {
    fn visit<T: Serialize + ?Sized>(&mut self, field: usize, name: &'static str, value: &T) {
        self.at = name;
        if let Some(skip) = self.skips.get(field).copied().flatten() {
            // Not a list after all, or shorter than reported: stored whole.
            if let Ok(items) = Blob::encode(&super::append::Tail { value, skip }) {
                self.out[field] = Some(items);
                self.appended.insert(field);
                return;
            }
        }
        match Blob::encode(value) {
            Ok(blob) => self.out[field] = Some(blob),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }
}

/// A key every checkpoint's `versions_seen` has (or may have), made once.
fn shared_key(cell: &'static std::sync::OnceLock<SharedStr>, text: &str) -> SharedStr {
    cell.get_or_init(|| SharedStr::from(text)).clone()
}

/// The checkpoint form of an engine channel as a blob.
fn encode_channel<T: Serialize + ?Sized>(value: &T) -> Result<Blob, GraphError> {
    Blob::encode(value).map_err(|e| encode_error("a channel", e))
}

fn decode_error(tuple: &CheckpointTuple, what: String, e: impl std::fmt::Display) -> GraphError {
    GraphError::Checkpoint(crate::checkpoint::CheckpointError::Corrupt {
        thread_id: tuple.config.thread_id.to_string(),
        checkpoint_id: tuple.checkpoint.id.clone(),
        what,
        source: e.to_string().into(),
    })
}

/// The integer part of a version string (`"000…0012.0.1234"` → 12).
pub(crate) fn parse_version(text: &str) -> Option<u64> {
    // The usual form, `"{n:032}.{salt}"`: digits up to the first dot.
    let bytes = text.as_bytes();
    // The zero padding, skipped eight bytes at a time.
    let mut start = 0;
    while bytes.get(start..start + 8) == Some(b"00000000") {
        start += 8;
    }
    let digits = start
        + bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
    if digits > 0 && bytes.get(digits).is_none_or(|&b| b == b'.') {
        return bytes[start..digits].iter().try_fold(0u64, |n, &b| {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        });
    }
    text.split('.').next()?.trim().parse().ok()
}

impl<S: State> Run<S> {
    /// The text of version `n` of channel `c`: as restored, or in LangGraph's format
    /// with this run's random fraction (distinct runs never collide on a blob key),
    /// shared with the texts already made for this checkpoint (`made`): the
    /// channels a step wrote all have the step's version number.
    ///
    /// A restored text is looked up first, per channel: LangGraph draws the random
    /// fraction per channel, so two channels of a Python-written checkpoint with
    /// the same number have different texts, and each keys its own blob. Only the
    /// texts this run makes (one salt) are shared by number.
    fn version_text(&self, c: usize, n: u64, made: &mut MadeVersions) -> ChannelVersion {
        if let Some(Some((v, text))) = self.persist.restored_versions.get(c)
            && *v == n
        {
            return text.clone();
        }
        if let Some((_, text)) = made.iter().find(|(v, _)| *v == n) {
            return text.clone();
        }
        let text = self.fresh_version_text(n);
        made.push((n, text.clone()));
        text
    }

    /// Version `n` in LangGraph's format with this run's salt, assembled on the
    /// stack (the shared text is the only allocation).
    fn fresh_version_text(&self, n: u64) -> ChannelVersion {
        let mut text = [0u8; 32 + super::VERSION_SALT_LEN];
        let (digits, salt) = text.split_at_mut(32);
        crate::ids::put_digits(digits, n);
        salt.copy_from_slice(&self.persist.version_salt);
        SharedStr::from(&*crate::ids::ascii_str(&text))
    }

    /// Whether channel `c` holds nothing a checkpoint must keep: an engine
    /// channel (`__start__`, `__pregel_tasks`, a branch or join) restored from
    /// no stored value would be exactly as it is. State fields always count.
    fn is_blank(&self, c: usize) -> bool {
        let graph = &self.graph;
        if c < graph.num_fields() {
            false
        } else if c == graph.start_channel() {
            self.start_input.is_none()
        } else if c == graph.tasks_channel() {
            self.sends.is_empty()
        } else {
            self.control[c - graph.control_base()].is_blank()
        }
    }

    /// A checkpoint of the live state, built in what changed since the last
    /// stored one (`new_versions`: the channels whose version changed, with
    /// their values; the saver keeps the others from earlier puts).
    ///
    /// It lists only the channels that hold something (see [`Listed`]): an
    /// engine channel that is empty again — the branch of a node that has run,
    /// a consumed join, `__start__` after the first step — is left out of
    /// `channel_versions`, and so are the `versions_seen` entries of it. Read
    /// back (by stategraph or by LangGraph), such a checkpoint behaves as the
    /// full one would:
    ///
    /// - the same tasks run: an empty channel triggers nothing, and when it is
    ///   written again its new version is above every listed one (the next
    ///   version is one more than the highest listed, and every kept
    ///   `versions_seen` entry is at most its channel's listed version);
    /// - `update_state` without `as_node` picks the same node: the nodes that
    ///   ran last keep all their `versions_seen` entries, and their triggers
    ///   stay listed, empty or not;
    /// - a static breakpoint fires as it would: `__interrupt__` entries are kept
    ///   for the listed channels, and when only unlisted channels changed since
    ///   the last resume, the checkpoint carries no `__interrupt__` entry, so
    ///   that it reads as changed.
    ///
    /// A superstep therefore costs what it changed: a 10 000-node chain stores a
    /// few entries per step, not 10 000.
    pub(crate) fn create_checkpoint(
        &mut self,
        id: String,
        with_updated: bool,
    ) -> Result<(Checkpoint, ChannelVersions, NameMap<Append>), GraphError> {
        let graph = Arc::clone(&self.graph);
        // What a checkpoint lists, brought up to date for the channels that changed.
        let Some(mut book) = self
            .persist
            .saver
            .as_mut()
            .map(|p| std::mem::take(&mut p.book))
        else {
            return Err(GraphError::NoCheckpointer("storing a checkpoint"));
        };
        book.listed
            .update(&graph.channel_rank, self.schedule.versions.changed(), |c| {
                self.schedule.versions[c] > 0
                    && (!self.is_blank(c) || book.last_ran_triggers.contains(c))
            });
        let result = self.checkpoint_of(&book.listed, id, with_updated);
        if let Some(p) = &mut self.persist.saver {
            p.book = book;
            // What the next checkpoint's appends extend: this one's values.
            if let (Ok((checkpoint, _, _)), Some(appends)) = (&result, &mut p.appends) {
                for (name, version) in &checkpoint.channel_versions {
                    if let Some(c) = S::field_index(name) {
                        appends.at(c, version.clone());
                    }
                }
            }
        }
        result
    }

    fn checkpoint_of(
        &self,
        listed: &Listed,
        id: String,
        with_updated: bool,
    ) -> Result<(Checkpoint, ChannelVersions, NameMap<Append>), GraphError> {
        let graph = &self.graph;
        let mut made = MadeVersions::new();
        // Each listed channel's current version text, made once and shared by the maps.
        let texts: SmallVec<[SharedStr; 16]> = listed
            .ids
            .iter()
            .map(|&c| self.version_text(c, self.schedule.versions[c], &mut made))
            .collect();
        let mut changed_fields = FieldSet::default();
        let mut changed = 0;
        for &c in &listed.ids {
            if self.schedule.versions.is_changed(c) {
                changed += 1;
                if c < graph.num_fields() {
                    changed_fields.insert(c);
                }
            }
        }

        let mut values: SmallVec<[Option<Blob>; 16]> =
            smallvec::smallvec![None; graph.num_fields()];
        let appends = self.persist.saver.as_ref().and_then(|p| p.appends.as_ref());
        let skips = appends.map(|a| a.skips()).unwrap_or_default();
        let mut collector = ValueCollector {
            out: &mut values,
            skips: &skips,
            appended: FieldSet::default(),
            at: "",
            error: None,
        };
        let (state, fields) = (&self.state, &self.fields);
        let visited =
            unwind::catch(|| state.visit_saved(fields, Some(&changed_fields), &mut collector));
        if let Err(panic) = visited {
            return Err(serialize_panic(
                panic,
                collector.at,
                self.persist.checkpoint_step,
            ));
        }
        if let Some(e) = collector.error {
            return Err(encode_error("a state field", e));
        }
        let appended = collector.appended;
        let mut appended_values = Vec::new();

        // The maps, built in channel-name order: already sorted.
        let mut channel_versions = Vec::with_capacity(listed.ids.len());
        let mut new_versions = Vec::with_capacity(changed);
        let mut channel_values = Vec::with_capacity(changed);
        for (&c, text) in listed.ids.iter().zip(&texts) {
            let name = SharedStr::from(&graph.channel_names[c]);
            if self.schedule.versions.is_changed(c) {
                new_versions.push((name.clone(), text.clone()));
                let value = if c < graph.num_fields() {
                    values[c].take()
                } else {
                    self.control_value(c)?
                };
                match (value, appends.and_then(|a| a.plan(c))) {
                    (Some(items), Some((keep, base))) if appended.contains(c) => {
                        appended_values.push((
                            name.clone(),
                            Append {
                                base: base.clone(),
                                keep,
                                items,
                            },
                        ));
                    }
                    (Some(blob), _) => channel_values.push((name.clone(), blob)),
                    (None, _) => {}
                }
            }
            channel_versions.push((name, text.clone()));
        }

        // A version seen is usually the channel's current one: shared, not rebuilt.
        let mut seen_text = |c: usize, v: u64| match listed.position(&graph.channel_rank, c) {
            Some(k) if self.schedule.versions[c] == v => texts[k].clone(),
            _ => self.version_text(c, v, &mut made),
        };
        static INPUT_KEY: std::sync::OnceLock<SharedStr> = std::sync::OnceLock::new();
        static INTERRUPT_KEY: std::sync::OnceLock<SharedStr> = std::sync::OnceLock::new();
        // The nodes that have seen a listed channel: those it triggers. In name
        // order; `__input__` and `__interrupt__` are inserted at their places
        // after.
        let mut nodes: SmallVec<[usize; 16]> = listed
            .ids
            .iter()
            .filter(|&&c| c >= graph.num_fields())
            .flat_map(|&c| graph.trigger_to_nodes[c].iter().copied())
            .collect();
        crate::compiled::sort_by_rank(&mut nodes, &graph.node_rank);
        nodes.dedup();
        let mut versions_seen = Vec::with_capacity(nodes.len() + 2);
        for node in nodes {
            let Some(seen) = &self.schedule.seen[node] else {
                continue;
            };
            let spec = &graph.nodes[node];
            // Triggers are sorted by channel name.
            let versions: Vec<_> = spec
                .triggers
                .iter()
                .zip(seen)
                .filter(|&(&c, &v)| v > 0 && listed.contains(c))
                .map(|(&c, &v)| (SharedStr::from(&graph.channel_names[c]), seen_text(c, v)))
                .collect();
            if !versions.is_empty() {
                versions_seen.push((SharedStr::from(&spec.name), NameMap::from_sorted(versions)));
            }
        }
        let mut versions_seen = NameMap::from_sorted(versions_seen);
        versions_seen.insert(shared_key(&INPUT_KEY, "__input__"), ChannelVersions::new());
        let interrupt_seen = |c: usize| self.interrupts.seen.get(c).copied().unwrap_or(0);
        // When only unlisted channels changed since the last resume, the entries
        // of the listed ones would read as "nothing changed": none are stored.
        let changed_unlisted = self
            .interrupts
            .changed_since_resume(self.schedule.versions.max)
            && !listed
                .ids
                .iter()
                .any(|&c| self.schedule.versions[c] > interrupt_seen(c));
        let interrupt_seen: Vec<_> = listed
            .ids
            .iter()
            .filter(|_| !changed_unlisted)
            .filter_map(|&c| {
                let v = interrupt_seen(c);
                (v > 0).then(|| (SharedStr::from(&graph.channel_names[c]), seen_text(c, v)))
            })
            .collect();
        if !interrupt_seen.is_empty() {
            versions_seen.insert(
                shared_key(&INTERRUPT_KEY, INTERRUPT),
                NameMap::from_sorted(interrupt_seen),
            );
        }
        let channel_values = NameMap::from_sorted(channel_values);
        let channel_versions = NameMap::from_sorted(channel_versions);
        let new_versions = NameMap::from_sorted(new_versions);

        let updated_channels = with_updated.then(|| {
            let mut names: Vec<SharedStr> = self
                .schedule
                .updated
                .iter()
                .map(|c| SharedStr::from(&graph.channel_names[c]))
                .collect();
            names.sort();
            names
        });
        Ok((
            Checkpoint {
                v: 4,
                id,
                ts: crate::ids::now_iso8601(),
                channel_values,
                channel_versions,
                versions_seen,
                updated_channels,
            },
            new_versions,
            NameMap::from_sorted(appended_values),
        ))
    }

    /// The checkpoint form of an engine channel, `None` when empty.
    fn control_value(&self, c: usize) -> Result<Option<Blob>, GraphError> {
        let graph = &self.graph;
        if c == graph.start_channel() {
            let Some(updates) = &self.start_input else {
                return Ok(None);
            };
            let mut pairs = Vec::new();
            let mut collector = BlobCollector::new(&mut pairs);
            let visited = unwind::catch(|| {
                for update in updates {
                    update.visit_writes(&mut collector);
                }
            });
            if let Err(panic) = visited {
                return Err(serialize_panic(
                    panic,
                    collector.at,
                    self.persist.checkpoint_step,
                ));
            }
            if let Some(e) = collector.error {
                return Err(encode_error("the input", e));
            }
            let map: BTreeMap<String, Blob> = pairs.into_iter().collect();
            return encode_channel(&map).map(Some);
        }
        if c == graph.tasks_channel() {
            let mut sends = Vec::with_capacity(self.sends.len());
            for s in &self.sends {
                let arg = encode_send(s, self.persist.checkpoint_step)?;
                sends.push(SendForm {
                    node: s.node().to_owned(),
                    arg,
                });
            }
            return encode_channel(&sends).map(Some);
        }
        let saved = match &self.control[c - graph.control_base()] {
            ControlChannel::Branch(ch) => ch.checkpoint(&()).map(|v| encode_channel(&v)),
            ControlChannel::DeferredBranch(ch) => ch.checkpoint(&()).map(|v| encode_channel(&v)),
            ControlChannel::Join(ch, seen) => ch.checkpoint(seen).map(|v| encode_channel(&v)),
            ControlChannel::DeferredJoin(ch, seen) => {
                ch.checkpoint(seen).map(|v| encode_channel(&v))
            }
        };
        saved.transpose()
    }

    /// Restores every channel, version and `versions_seen` entry from `tuple`.
    /// A `Deserialize` impl that panics is [`PanicSite::Deserializing`].
    pub(crate) fn restore(&mut self, tuple: &CheckpointTuple) -> Result<(), GraphError> {
        self.restore_from(tuple, None)
    }

    /// [`restore`](Self::restore), starting from `warm`, the state a run left
    /// in memory when it stored `tuple`: the state fields stored with a value
    /// keep it and are not decoded.
    pub(super) fn restore_from(
        &mut self,
        tuple: &CheckpointTuple,
        warm: Option<super::warm::Warm<S>>,
    ) -> Result<(), GraphError> {
        let decoded = warm.is_none();
        if let Some(warm) = warm {
            self.state = warm.state;
            self.fields = warm.fields;
        }
        let mut at = Decoding::default();
        unwind::catch(|| self.restore_channels(tuple, decoded, &mut at))
            .unwrap_or_else(|panic| Err(at.panicked(panic, tuple, &self.graph)))
    }

    fn restore_channels(
        &mut self,
        tuple: &CheckpointTuple,
        decoded: bool,
        at: &mut Decoding,
    ) -> Result<(), GraphError> {
        let graph = Arc::clone(&self.graph);
        let cp = &tuple.checkpoint;
        for (name, text) in &cp.channel_versions {
            let Some(&c) = graph.channel_ids.get(name.as_str()) else {
                tracing::warn!(channel = %name, "checkpoint has a channel this graph does not know; ignoring it");
                continue;
            };
            let n = parse_version(text).ok_or_else(|| {
                decode_error(tuple, format!("the version of channel `{name}`"), text)
            })?;
            self.schedule.versions.set(c, n);
            if let Some(p) = &mut self.persist.saver {
                p.book.listed.restored(&graph.channel_rank, c);
            }
            let restored = &mut self.persist.restored_versions;
            if restored.len() <= c {
                restored.resize(graph.num_channels(), None);
            }
            restored[c] = Some((n, text.clone()));
            if let Some(appends) = self.persist.saver.as_mut().and_then(|p| p.appends.as_mut()) {
                appends.at(c, text.clone());
            }
            let value = cp.channel_values.get(name);
            if c < graph.num_fields() && !decoded && value.is_some() {
                // The warm state holds this value already.
            } else if c < graph.num_fields() {
                let state = Arc::make_mut(&mut self.state);
                *at = Decoding::Field(c);
                let result = match value {
                    Some(blob) => {
                        let mut de = serde_json::Deserializer::from_str(blob.as_str());
                        state.restore_field(&mut self.fields, c, Some(&mut de))
                    }
                    None => state.restore_field::<&mut serde_json::Deserializer<
                        serde_json::de::StrRead<'_>,
                    >>(&mut self.fields, c, None),
                };
                *at = Decoding::Engine;
                result.map_err(|e| decode_error(tuple, format!("state field `{name}`"), e))?;
            } else if c == graph.start_channel() {
                self.start_input = match value {
                    Some(blob) => Some(self.decode_input(tuple, blob, at)?),
                    None => None,
                };
            } else if c == graph.tasks_channel() {
                self.sends = match value {
                    Some(blob) => self.decode_sends(tuple, blob, at)?,
                    None => Vec::new(),
                };
            } else {
                let what = || format!("channel `{name}`");
                let channel = &mut self.control[c - graph.control_base()];
                match channel {
                    ControlChannel::Branch(ch) => ch.restore(
                        &mut (),
                        decode_opt(value).map_err(|e| decode_error(tuple, what(), e))?,
                    ),
                    ControlChannel::DeferredBranch(ch) => ch.restore(
                        &mut (),
                        decode_opt(value).map_err(|e| decode_error(tuple, what(), e))?,
                    ),
                    ControlChannel::Join(ch, seen) => ch.restore(
                        seen,
                        decode_opt(value).map_err(|e| decode_error(tuple, what(), e))?,
                    ),
                    ControlChannel::DeferredJoin(ch, seen) => ch.restore(
                        seen,
                        decode_opt(value).map_err(|e| decode_error(tuple, what(), e))?,
                    ),
                }
                if matches!(channel, ControlChannel::Branch(_)) && channel.is_available() {
                    self.schedule.live_branches.push(c);
                }
            }
        }
        for (node_name, seen) in &cp.versions_seen {
            if node_name == INTERRUPT {
                for (name, text) in seen {
                    if let Some(&c) = graph.channel_ids.get(name.as_str()) {
                        let v = parse_version(text).unwrap_or(0);
                        if self.interrupts.seen.len() <= c {
                            self.interrupts.seen.resize(graph.num_channels(), 0);
                        }
                        self.interrupts.seen[c] = v;
                        self.interrupts.seen_max = self.interrupts.seen_max.max(v);
                    }
                }
                continue;
            }
            let Some(&node) = graph.node_by_name.get(node_name.as_str()) else {
                continue;
            };
            let triggers = &graph.nodes[node].triggers;
            let entry = self.schedule.seen_of(node, triggers.len());
            for (i, &c) in triggers.iter().enumerate() {
                if let Some(text) = seen.get(&graph.channel_names[c]) {
                    entry[i] = parse_version(text).unwrap_or(0);
                }
            }
            let latest = entry.iter().copied().max().unwrap_or(0);
            self.ran(node, latest);
        }
        // Breakpoints: did a stored channel change since the last resume?
        self.interrupts.changed = cp.channel_versions.iter().any(|(name, _)| {
            graph.channel_ids.get(name.as_str()).is_some_and(|&c| {
                self.schedule.versions[c] > self.interrupts.seen.get(c).copied().unwrap_or(0)
            })
        });
        self.schedule.updated.clear();
        self.schedule.updated_known = match &cp.updated_channels {
            Some(names) => {
                for name in names {
                    if let Some(&c) = graph.channel_ids.get(name.as_str()) {
                        self.schedule.updated.insert(c);
                    }
                }
                true
            }
            None => false,
        };
        // Every restored version is stored already.
        self.schedule.versions.clear_changed();
        Ok(())
    }

    /// The `__start__` channel's value: a map of field → write, one update per field.
    fn decode_input(
        &self,
        tuple: &CheckpointTuple,
        blob: &Blob,
        at: &mut Decoding,
    ) -> Result<Vec<S::Update>, GraphError> {
        let what = || "the pending input".to_owned();
        let map: BTreeMap<String, Blob> =
            blob.decode().map_err(|e| decode_error(tuple, what(), e))?;
        let mut updates = Vec::with_capacity(map.len());
        for (field, value) in &map {
            let Some(idx) = S::field_index(field) else {
                continue;
            };
            let mut de = serde_json::Deserializer::from_str(value.as_str());
            *at = Decoding::Field(idx);
            let update = S::Update::from_field_write(idx, &mut de);
            *at = Decoding::Engine;
            updates.push(update.map_err(|e| decode_error(tuple, what(), e))?);
        }
        Ok(updates)
    }

    fn decode_sends(
        &self,
        tuple: &CheckpointTuple,
        blob: &Blob,
        at: &mut Decoding,
    ) -> Result<Vec<crate::command::Send>, GraphError> {
        let what = || "the pending Sends".to_owned();
        let forms: Vec<SendForm> = blob.decode().map_err(|e| decode_error(tuple, what(), e))?;
        let mut sends = Vec::with_capacity(forms.len());
        for form in forms {
            let Some(&node) = self.graph.node_by_name.get(form.node.as_str()) else {
                tracing::warn!(node = %form.node, "a stored Send names a node this graph does not have; dropping it");
                continue;
            };
            let Some(runner) = &self.graph.nodes[node].runner else {
                continue;
            };
            *at = Decoding::SendPayload(node);
            let send = runner.decode_send(form.node.clone().into(), &form.arg);
            *at = Decoding::Engine;
            sends.push(send.map_err(|e| decode_error(tuple, what(), e))?);
        }
        Ok(sends)
    }

    /// A task's writes as pending-write rows (`NO_WRITES` when it wrote nothing).
    pub(crate) fn encode_writes(
        &self,
        writes: &TaskWrites<S>,
    ) -> Result<Vec<(String, Blob)>, GraphError> {
        let mut rows = Vec::new();
        let mut collector = BlobCollector::new(&mut rows);
        let visited = unwind::catch(|| {
            for u in &writes.updates {
                u.visit_writes(&mut collector);
            }
        });
        if let Err(panic) = visited {
            return Err(serialize_panic(panic, collector.at, self.schedule.step));
        }
        if let Some(e) = collector.error {
            return Err(encode_error("a node's update", e));
        }
        for w in &writes.control {
            match w {
                ControlWrite::Trigger(c) => {
                    rows.push((self.graph.channel_names[*c].to_string(), Blob::null()))
                }
                ControlWrite::Join(c, name) => rows.push((
                    self.graph.channel_names[*c].to_string(),
                    Blob::encode(&**name).map_err(|e| encode_error("a join write", e))?,
                )),
                ControlWrite::Send(s) => {
                    let arg = encode_send(s, self.schedule.step)?;
                    let form = SendForm {
                        node: s.node().to_owned(),
                        arg,
                    };
                    rows.push((
                        TASKS.to_owned(),
                        Blob::encode(&form).map_err(|e| encode_error("a Send", e))?,
                    ));
                }
            }
        }
        if rows.is_empty() {
            rows.push((NO_WRITES.to_owned(), Blob::null()));
        }
        Ok(rows)
    }

    /// Rebuilds a task's writes from its pending-write rows. A `Deserialize`
    /// impl that panics is [`PanicSite::Deserializing`].
    pub(crate) fn decode_writes(
        &self,
        tuple: &CheckpointTuple,
        rows: &[&PendingWrite],
    ) -> Result<TaskWrites<S>, GraphError> {
        let mut at = Decoding::default();
        unwind::catch(|| self.decode_rows(tuple, rows, &mut at))
            .unwrap_or_else(|panic| Err(at.panicked(panic, tuple, &self.graph)))
    }

    fn decode_rows(
        &self,
        tuple: &CheckpointTuple,
        rows: &[&PendingWrite],
        at: &mut Decoding,
    ) -> Result<TaskWrites<S>, GraphError> {
        let graph = &self.graph;
        let mut writes = TaskWrites::default();
        for row in rows {
            let what = || format!("a pending write to `{}`", row.channel);
            if row.channel == NO_WRITES || is_control(&row.channel) {
                continue;
            }
            if row.channel == TASKS {
                let form: SendForm = row
                    .value
                    .decode()
                    .map_err(|e| decode_error(tuple, what(), e))?;
                let Some(&node) = graph.node_by_name.get(form.node.as_str()) else {
                    continue;
                };
                if let Some(runner) = &graph.nodes[node].runner {
                    *at = Decoding::SendPayload(node);
                    let send = runner.decode_send(form.node.clone().into(), &form.arg);
                    *at = Decoding::Engine;
                    let send = send.map_err(|e| decode_error(tuple, what(), e))?;
                    writes.control.push(ControlWrite::Send(send));
                }
                continue;
            }
            let Some(&c) = graph.channel_ids.get(row.channel.as_str()) else {
                // Dropping it would count the task as done with part of its
                // writes lost.
                return Err(decode_error(
                    tuple,
                    format!(
                        "the pending write of task `{}` to `{}`",
                        row.task_id, row.channel
                    ),
                    format!(
                        "this graph has no channel `{}`: the write was stored by a graph with \
                         other fields or nodes; resume the thread with that graph, or move it \
                         on with update_state",
                        row.channel
                    ),
                ));
            };
            if c < graph.num_fields() {
                let mut de = serde_json::Deserializer::from_str(row.value.as_str());
                *at = Decoding::Field(c);
                let update = S::Update::from_field_write(c, &mut de);
                *at = Decoding::Engine;
                writes
                    .updates
                    .push(update.map_err(|e| decode_error(tuple, what(), e))?);
            } else if c >= graph.control_base() {
                match &self.control[c - graph.control_base()] {
                    ControlChannel::Branch(_) | ControlChannel::DeferredBranch(_) => {
                        writes.control.push(ControlWrite::Trigger(c))
                    }
                    ControlChannel::Join(..) | ControlChannel::DeferredJoin(..) => {
                        let name: String = row
                            .value
                            .decode()
                            .map_err(|e| decode_error(tuple, what(), e))?;
                        writes.control.push(ControlWrite::Join(c, Arc::from(name)));
                    }
                }
            }
        }
        Ok(writes)
    }

    /// The metadata of a checkpoint written by this run.
    pub(crate) fn metadata(&self, source: CheckpointSource, step: i64) -> CheckpointMetadata {
        let mut extra = serde_json::Map::new();
        const EXCLUDED: &[&str] = &[
            "thread_id",
            "checkpoint_id",
            "checkpoint_ns",
            "checkpoint_map",
            "langgraph_step",
            "langgraph_node",
            "langgraph_triggers",
            "langgraph_path",
            "langgraph_checkpoint_ns",
        ];
        for (k, v) in self
            .config
            .configurable()
            .iter()
            .chain(self.config.metadata().iter())
        {
            if k.starts_with("__") || EXCLUDED.contains(&k.as_str()) {
                continue;
            }
            let v = match v {
                serde_json::Value::String(s) => serde_json::Value::String(s.replace('\0', "")),
                serde_json::Value::Number(_) | serde_json::Value::Bool(_) => v.clone(),
                _ => continue,
            };
            extra.insert(k.clone(), v);
        }
        CheckpointMetadata {
            source,
            step,
            parents: self
                .nested
                .as_ref()
                .map(|n| n.parents.to_map())
                .unwrap_or_default(),
            extra,
        }
    }
}

fn decode_opt<T: serde::de::DeserializeOwned>(
    blob: Option<&Blob>,
) -> Result<Option<T>, serde_json::Error> {
    blob.map(Blob::decode).transpose()
}

/// A `Send` as stored in `__pregel_tasks`.
#[derive(Serialize, serde::Deserialize)]
struct SendForm {
    node: String,
    arg: Blob,
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_parse_like_python_int_of_the_integer_part() {
        let cases = [
            ("00000000000000000000000000000012.0.5126537890", Some(12)),
            ("00000000000000000000000000000000.0.1", Some(0)),
            ("7", Some(7)),
            ("18446744073709551615.0.1", Some(u64::MAX)),
            ("18446744073709551616.0.1", None),
            ("000000000000000000000000000000000000000000001.x", Some(1)),
            ("00000000", Some(0)),
            ("0000000000000000.0.1", Some(0)),
            (
                "00000000000000000000000000000000000000018446744073709551615",
                Some(u64::MAX),
            ),
            ("0000000018446744073709551616.0.1", None),
            ("00000000.", Some(0)),
            ("00000000x", None),
            (
                "0000000000000000000000000000000100000000.0.1",
                Some(100_000_000),
            ),
            ("+3.0.1", Some(3)),
            (" 4 .0.1", Some(4)),
            ("", None),
            ("x.0.1", None),
            ("1a.0.1", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_version(text), want, "{text:?}");
            let std = text
                .split('.')
                .next()
                .and_then(|i| i.trim().parse::<u64>().ok());
            assert_eq!(parse_version(text), std, "{text:?} differs from str::parse");
        }
    }
}
