//! Persistence: the [`Checkpointer`] trait, LangGraph's checkpoint structure
//! ([`Checkpoint`], [`CheckpointMetadata`], pending writes), and [`InMemorySaver`].
//!
//! Values cross this boundary serialised: every channel value and pending write is
//! JSON text ([`Blob`]), produced straight from the typed state (no intermediate
//! `serde_json::Value` tree) and only for the channels that changed.

pub mod appended;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod conformance;
mod json;
mod memory;
mod name_map;
mod packed;
pub mod rows;
mod run_guard;
mod spare;

pub use memory::InMemorySaver;
pub use name_map::{NameMap, NameMapIter};
pub use run_guard::{LastPuts, RunGuard};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// A serialised value: JSON text, shared cheaply.
///
/// A short text (up to 4 KiB, what most values and pending writes are) is kept
/// in one allocation with its reference count. A longer one is kept in the
/// `String` it was written to (not copied): a large state's blob is
/// megabytes, written once.
#[derive(Clone)]
pub struct Blob(Text);

#[derive(Clone)]
enum Text {
    Short(Arc<str>),
    Long(Arc<String>),
}

impl Blob {
    /// Serialises `value` to JSON (the same text as `serde_json::to_string`).
    ///
    /// A shared JSON value (`Arc<serde_json::Value>`) that occurs more than
    /// once in `value` (one object held in several lists, as Python states
    /// hold them) is walked once: its text is copied where the same `Arc`
    /// occurs again.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        Ok(match json::write(value)? {
            json::Written::Short(text) => Blob(Text::Short(text)),
            json::Written::Long(text) => Blob(Text::Long(Arc::new(text))),
        })
    }

    /// A blob from JSON text that is known to be valid.
    pub fn from_json(text: impl Into<String>) -> Result<Self, serde_json::Error> {
        let text = text.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(Blob::owning(text))
    }

    /// A blob of `text`, valid JSON: a short text copied into one
    /// allocation, a long one kept in its own buffer.
    fn owning(text: String) -> Self {
        if text.len() <= json::SHORT_BYTES {
            Blob(Text::Short(Arc::from(text.as_str())))
        } else {
            Blob::from_text(text)
        }
    }

    /// A blob keeping `text`, valid JSON, in its own buffer (which
    /// [`edit`](Self::edit) then changes in place).
    pub(crate) fn from_text(text: String) -> Self {
        Blob(Text::Long(Arc::new(text)))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Text::Short(text) => text,
            Text::Long(text) => text,
        }
    }

    /// Changes the text in place by `edit`: it is copied first when another
    /// blob shares it (or it is kept short).
    pub(crate) fn edit<R>(&mut self, edit: impl FnOnce(&mut String) -> R) -> R {
        match &mut self.0 {
            Text::Long(text) => edit(Arc::make_mut(text)),
            Text::Short(text) => {
                let mut text = String::from(&**text);
                let out = edit(&mut text);
                self.0 = Text::Long(Arc::new(text));
                out
            }
        }
    }

    /// The text's own buffer, when the text is long and no other blob shares it.
    pub(crate) fn into_buffer(self) -> Option<String> {
        match self.0 {
            Text::Long(text) => Arc::try_unwrap(text).ok(),
            Text::Short(_) => None,
        }
    }

    /// Deserialises the blob.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.as_str())
    }

    /// The JSON `null` blob (one shared instance: no allocation).
    pub fn null() -> Self {
        static NULL: std::sync::OnceLock<Blob> = std::sync::OnceLock::new();
        NULL.get_or_init(|| Blob(Text::Short(Arc::from("null"))))
            .clone()
    }
}

impl PartialEq for Blob {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Blob {}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_str::<&RawValue>(self.as_str()) {
            Ok(raw) => raw.serialize(serializer),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: Box<RawValue> = Deserialize::deserialize(deserializer)?;
        Ok(Blob::owning(String::from(Box::<str>::from(raw))))
    }
}

/// A list-valued channel's new value, given by what it appended to an earlier
/// version (see [`Checkpointer::put_appending`]): the first `keep` items of
/// the value stored under version `base` of the same channel, thread and
/// namespace, followed by `items`.
#[derive(Debug, Clone, PartialEq)]
pub struct Append {
    /// The version whose value the new one extends.
    pub base: ChannelVersion,
    /// How many leading items of that value the new one keeps.
    pub keep: usize,
    /// The items that follow them: a JSON array.
    pub items: Blob,
}

/// A channel version: LangGraph's `"{n:032}.{random:016}"` string.
pub type ChannelVersion = SharedStr;

/// Channel name → version: a checkpoint's `channel_versions`, each node's entry
/// in `versions_seen`, and the `new_versions` of [`Checkpointer::put`].
pub type ChannelVersions = NameMap<ChannelVersion>;

/// Text shared by reference: the channel and node names and the versions of a
/// [`Checkpoint`]. A checkpoint repeats the same few names and versions in its
/// maps, and every checkpoint of a run repeats them again; cloning one is a
/// reference-count increment, not an allocation. Serialised as a plain string.
///
/// ```
/// use stategraph::checkpoint::{ChannelVersions, SharedStr};
///
/// let mut versions = ChannelVersions::new();
/// versions.insert("messages".into(), "00000000000000000000000000000001.0.5".into());
/// assert_eq!(&*versions["messages"], "00000000000000000000000000000001.0.5");
/// assert!(versions.contains_key("messages"));
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SharedStr {
    /// The empty text (one shared instance: no allocation).
    fn default() -> Self {
        static EMPTY: std::sync::OnceLock<SharedStr> = std::sync::OnceLock::new();
        EMPTY.get_or_init(|| SharedStr(Arc::from(""))).clone()
    }
}

impl std::ops::Deref for SharedStr {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SharedStr {
    /// The text copied; the empty text is shared (no allocation).
    fn from(s: &str) -> Self {
        if s.is_empty() {
            return SharedStr::default();
        }
        SharedStr(Arc::from(s))
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> Self {
        SharedStr::from(s.as_str())
    }
}

impl From<&String> for SharedStr {
    fn from(s: &String) -> Self {
        SharedStr::from(s.as_str())
    }
}

impl From<Arc<str>> for SharedStr {
    fn from(s: Arc<str>) -> Self {
        SharedStr(s)
    }
}

impl From<&Arc<str>> for SharedStr {
    fn from(s: &Arc<str>) -> Self {
        SharedStr(Arc::clone(s))
    }
}

impl From<SharedStr> for Arc<str> {
    /// The shared text itself (no copy).
    fn from(s: SharedStr) -> Self {
        s.0
    }
}

impl From<SharedStr> for String {
    fn from(s: SharedStr) -> Self {
        s.0.to_string()
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedStr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = SharedStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SharedStr, E> {
                Ok(SharedStr::from(v))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// Where a checkpoint lives: thread, namespace and (optionally) its id.
///
/// The fields are shared text: a run's configs, and those its saver returns,
/// share one copy of the thread id.
///
/// ```
/// use stategraph::checkpoint::CheckpointConfig;
///
/// let latest = CheckpointConfig::thread("thread-1");
/// let one = latest.at("1ef4f797-8335-6428-8001-8a1503f9b875");
/// assert_eq!(one.thread_id.as_str(), "thread-1");
/// assert_eq!(one.checkpoint_id.as_deref(), Some("1ef4f797-8335-6428-8001-8a1503f9b875"));
/// assert_eq!(&*one.checkpoint_ns, "");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CheckpointConfig {
    /// The thread.
    pub thread_id: SharedStr,
    /// The namespace (`""` for a root graph).
    #[serde(default)]
    pub checkpoint_ns: SharedStr,
    /// The checkpoint; `None` means the latest of the thread and namespace.
    #[serde(default)]
    pub checkpoint_id: Option<SharedStr>,
}

impl CheckpointConfig {
    /// The latest checkpoint of a thread's root namespace.
    pub fn thread(thread_id: impl Into<SharedStr>) -> Self {
        CheckpointConfig {
            thread_id: thread_id.into(),
            checkpoint_ns: SharedStr::default(),
            checkpoint_id: None,
        }
    }

    /// The same thread and namespace, at checkpoint `id`.
    pub fn at(&self, id: impl Into<SharedStr>) -> Self {
        CheckpointConfig {
            checkpoint_id: Some(id.into()),
            ..self.clone()
        }
    }
}

/// One checkpoint of [`Checkpointer::put_chain`], with what
/// [`Checkpointer::put_with_writes`] takes for it.
#[derive(Debug, Clone)]
pub struct StepPut {
    /// Each task's pending writes `(task id, writes)`, stored against the
    /// checkpoint's parent.
    pub writes: Vec<(String, Vec<(String, Blob)>)>,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// The channels whose version changed since the parent.
    pub new_versions: ChannelVersions,
    /// The channels that only grew, by what they appended (see
    /// [`Checkpointer::put_appending`]).
    pub appends: NameMap<Append>,
}

impl StepPut {
    /// The put of `checkpoint` with what [`Checkpointer::put_with_writes`]
    /// takes for it, in its order.
    pub fn new(
        writes: Vec<(String, Vec<(String, Blob)>)>,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> Self {
        StepPut {
            writes,
            checkpoint,
            metadata,
            new_versions,
            appends,
        }
    }

    /// Stores it through `saver`'s [`put_with_writes`](Checkpointer::put_with_writes),
    /// a child of `parent`.
    pub(crate) fn put_to<'a, C: Checkpointer + ?Sized>(
        self,
        saver: &'a C,
        parent: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        saver.put_with_writes(
            parent,
            self.writes,
            self.checkpoint,
            self.metadata,
            self.new_versions,
            self.appends,
        )
    }
}

/// A snapshot of every channel at the end of a superstep (LangGraph's format v4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version (4).
    pub v: u32,
    /// UUIDv6, ordered by creation time.
    pub id: String,
    /// ISO-8601 creation time.
    pub ts: String,
    /// Serialised values of the channels that have one.
    pub channel_values: NameMap<Blob>,
    /// The version of each channel that has been written.
    pub channel_versions: ChannelVersions,
    /// Per node, the versions of its triggers it last ran on.
    pub versions_seen: NameMap<ChannelVersions>,
    /// Channels changed (and available) by the step that produced this checkpoint.
    #[serde(default)]
    pub updated_channels: Option<Vec<SharedStr>>,
}

/// Why a checkpoint was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointSource {
    /// The input of an `invoke`/`stream` call.
    Input,
    /// The end of a superstep.
    Loop,
    /// `update_state`.
    Update,
    /// A copy made to replay or fork from an earlier checkpoint.
    Fork,
}

/// Metadata stored with a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointMetadata {
    /// Why it was written.
    pub source: CheckpointSource,
    /// The superstep (`-1` for the first input).
    pub step: i64,
    /// Ancestor namespace → checkpoint id (empty for a root graph).
    #[serde(default)]
    pub parents: BTreeMap<String, String>,
    /// Entries copied from the run's metadata and `configurable` (docs/semantics.md
    /// §6.3).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A write of a task not yet folded into a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingWrite {
    /// The task (or the null task id for input/`update_state` writes).
    pub task_id: String,
    /// The channel written (or a special key such as `__error__`).
    pub channel: String,
    /// The value.
    pub value: Blob,
}

/// A checkpoint with everything needed to resume from it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointTuple {
    /// Where it lives (always with its id).
    pub config: CheckpointConfig,
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// The previous checkpoint of the same thread and namespace.
    pub parent_config: Option<CheckpointConfig>,
    /// Writes made by tasks of the next step.
    pub pending_writes: Vec<PendingWrite>,
}

/// Filters for [`Checkpointer::list`] (and
/// [`CompiledGraph::get_state_history`](crate::CompiledGraph::get_state_history)).
///
/// ```
/// use stategraph::checkpoint::{CheckpointSource, InMemorySaver, ListOptions};
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Count { n: u32 }
///
/// #[node]
/// fn bump(c: &Count) -> CountUpdate { Count::update().n(c.n + 1) }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), GraphError> {
/// let app = StateGraph::<Count>::new()
///     .add_node(bump)
///     .add_edge(START, bump)
///     .compile_with(InMemorySaver::new())?;
/// let thread = RunConfig::thread("t1");
/// app.invoke(Count::update(), &thread).await?;
/// app.invoke(Count::update(), &thread).await?;
///
/// // The two newest checkpoints made from input (newest first).
/// let inputs = ListOptions {
///     filter: [("source".to_owned(), stategraph::json!("input"))].into_iter().collect(),
///     limit: Some(2),
///     ..ListOptions::default()
/// };
/// let history = app.get_state_history(&thread, &inputs).await?;
/// assert_eq!(history.len(), 2);
/// let source = |s: &stategraph::StateSnapshot<Count>| s.metadata.as_ref().map(|m| m.source);
/// assert!(history.iter().all(|s| source(s) == Some(CheckpointSource::Input)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListOptions {
    /// Only checkpoints whose metadata has all of these entries.
    pub filter: serde_json::Map<String, serde_json::Value>,
    /// Only checkpoints older than this one (by id).
    pub before: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

/// Which checkpoints of a thread [`Checkpointer::prune`] keeps.
///
/// Checkpoint tables otherwise grow by one row per superstep forever. Each
/// namespace of the thread (the root graph's, each subgraph's) is pruned on its
/// own, and its newest checkpoint is always kept, so the thread still resumes
/// where it stands; [`Checkpointer::delete_thread`] removes a thread entirely.
///
/// ```
/// use stategraph::checkpoint::Retention;
/// use std::time::{Duration, SystemTime};
///
/// let last_ten = Retention::KeepLast(10);
/// let a_week = Retention::OlderThan(SystemTime::now() - Duration::from_secs(7 * 86_400));
/// # let _ = (last_ten, a_week);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Retention {
    /// Keep the newest `n` checkpoints (by id) of each namespace; `n` must be at
    /// least 1.
    KeepLast(usize),
    /// Delete checkpoints created (their `ts`) before this instant, except the
    /// newest of each namespace.
    OlderThan(SystemTime),
}

impl Retention {
    /// The checkpoints to delete, among all of one thread's, given as (namespace,
    /// id, creation time): the rule every saver's [`Checkpointer::prune`] applies.
    ///
    /// ```
    /// use stategraph::checkpoint::Retention;
    ///
    /// let all = [("", "1", None), ("", "2", None), ("", "3", None), ("sub:1", "1", None)];
    /// assert_eq!(Retention::KeepLast(2).select(all).unwrap(), [("", "1")]);
    /// ```
    pub fn select<'a>(
        self,
        checkpoints: impl IntoIterator<Item = (&'a str, &'a str, Option<SystemTime>)>,
    ) -> Result<Vec<(&'a str, &'a str)>, CheckpointError> {
        let keep = match self {
            Retention::KeepLast(0) => {
                return Err(CheckpointError::InvalidInput(
                    "Retention::KeepLast(0) would delete the thread's current state; keep at \
                     least 1, or use delete_thread"
                        .to_owned(),
                ))
            }
            Retention::KeepLast(n) => n,
            Retention::OlderThan(_) => 1,
        };
        let mut by_ns: BTreeMap<&str, Vec<(&str, Option<SystemTime>)>> = BTreeMap::new();
        for (ns, id, created) in checkpoints {
            by_ns.entry(ns).or_default().push((id, created));
        }
        let mut doomed = Vec::new();
        for (ns, mut list) in by_ns {
            list.sort_unstable_by(|a, b| b.0.cmp(a.0));
            for (id, created) in list.into_iter().skip(keep) {
                let delete = match self {
                    Retention::KeepLast(_) => true,
                    Retention::OlderThan(cutoff) => created.is_some_and(|t| t < cutoff),
                };
                if delete {
                    doomed.push((ns, id));
                }
            }
        }
        Ok(doomed)
    }
}

impl Checkpoint {
    /// When the checkpoint was created: its `ts` (ISO-8601 / RFC 3339, as LangGraph
    /// writes it) as a [`SystemTime`]; `None` if `ts` is not such a timestamp.
    pub fn created_at(&self) -> Option<SystemTime> {
        parse_timestamp(&self.ts)
    }
}

/// Parses a checkpoint's `ts`: RFC 3339, `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`
/// (LangGraph writes `2024-07-31T20:14:19.804150+00:00`), fractions past
/// nanoseconds cut off. `None` if it is not one.
pub fn parse_timestamp(ts: &str) -> Option<SystemTime> {
    let at = time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339);
    at.ok().map(SystemTime::from)
}

/// Errors of a checkpointer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The storage failed (I/O, database).
    #[error("checkpoint storage failed: {0}")]
    Storage(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A stored value could not be read back.
    #[error("thread `{thread_id}`, checkpoint `{checkpoint_id}`: cannot decode {what}: {source}")]
    Corrupt {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint_id: String,
        /// Which part could not be decoded.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The call itself is invalid (e.g. writes without a checkpoint id).
    #[error("invalid checkpointer call: {0}")]
    InvalidInput(String),
    /// The database holds tables of the saver's names that the saver did not
    /// create and cannot migrate (another program's, or an older layout); it
    /// was left exactly as it was.
    #[error(
        "database `{database}`: {problem}; stategraph changed nothing in it — keep the \
         checkpoints in a database (or file) of their own"
    )]
    ForeignSchema {
        /// The database (a path, or a description).
        database: String,
        /// Which table, and what about it is not the saver's.
        problem: String,
    },
    /// The saver was opened read-only; it does not write.
    #[error("{saver} was opened read-only and cannot {operation}; open it for writing to do that")]
    ReadOnly {
        /// The saver and its database.
        saver: String,
        /// What was asked of it.
        operation: &'static str,
    },
    /// The stored data uses a newer schema or format than this library understands.
    #[error("{0}; upgrade stategraph to read it")]
    Unsupported(String),
    /// Another run holds the thread (see [`Checkpointer::begin_run`]); the
    /// engine reports it as `GraphError::ThreadBusy`.
    #[error("thread `{thread_id}` is being run by another process")]
    ThreadBusy {
        /// The thread.
        thread_id: String,
    },
    /// A write of a run that no longer holds its thread's lease: another run
    /// (usually in another process, after this one's lock was lost) has taken
    /// the thread over, or the thread was deleted or pruned meanwhile. Nothing
    /// was written; the engine stops the run with `GraphError::LeaseLost`.
    #[error(
        "thread `{thread_id}`: this run (lease owner `{owner}`) no longer holds the thread: \
         {reason}; nothing more was stored by this run, and the thread goes on from its latest \
         checkpoint when invoked again"
    )]
    LeaseLost {
        /// The thread.
        thread_id: String,
        /// The lease owner id of the run that lost it.
        owner: String,
        /// What happened to the lease (who holds the thread now, when known).
        reason: String,
    },
    /// The addressed checkpoint does not exist.
    #[error(
        "thread `{thread_id}` has no checkpoint `{checkpoint_id}` in namespace `{checkpoint_ns}`"
    )]
    NotFound {
        /// The thread.
        thread_id: String,
        /// The namespace.
        checkpoint_ns: String,
        /// The missing id.
        checkpoint_id: String,
    },
}

/// Storage for checkpoints and pending writes (LangGraph's `BaseCheckpointSaver`).
///
/// Implementations must be safe to share between runs (`Send + Sync`).
///
/// A write whose future is dropped once polled should still complete (the
/// savers of this workspace do: in memory it is done at once, SQLite runs a
/// queued job, PostgreSQL runs it on a task of its own): a cancelled run
/// relies on it to keep the steps its caller was shown (docs/semantics.md
/// §2.10).
pub trait Checkpointer: Send + Sync + 'static {
    /// The checkpoint addressed by `config` (its id, or the latest in its thread and
    /// namespace), with its pending writes; `None` if there is none.
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>>;

    /// Checkpoints of `config`'s thread and namespace (of every thread and namespace
    /// when `config` is `None`; only `config.checkpoint_id` when it is set), newest
    /// first.
    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>>;

    /// Stores `checkpoint` as the child of `config.checkpoint_id`. `new_versions`
    /// are the channels whose version changed since the parent; `checkpoint`'s
    /// `channel_values` holds (at least) their values. Returns the new config.
    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>>;

    /// Whether [`put_appending`](Self::put_appending) stores appended values
    /// (the engine then hands list channels that only grew to it as
    /// [`Append`]s instead of whole values). `false` by default.
    fn stores_appends(&self) -> bool {
        false
    }

    /// [`put`](Self::put), with some of the new values given by what they
    /// appended to an earlier version: each channel of `appends` is in
    /// `new_versions` and not in `checkpoint.channel_values`. Reads return
    /// whole values, as if `put` had stored them. Called only on a saver whose
    /// [`stores_appends`](Self::stores_appends) is `true`; the default refuses.
    fn put_appending<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        if appends.is_empty() {
            return self.put(config, checkpoint, metadata, new_versions);
        }
        let _ = (checkpoint, metadata, new_versions);
        Box::pin(std::future::ready(Err(CheckpointError::InvalidInput(
            "this saver does not store appended values (its stores_appends is false); pass \
             whole values to put"
                .to_owned(),
        ))))
    }

    /// Stores writes of task `task_id` against checkpoint `config.checkpoint_id`.
    /// Special channels (`__error__`, `__interrupt__`, ...) replace earlier rows;
    /// ordinary writes are kept if already present.
    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// A step's whole store: each task's pending writes `(task id, writes)`,
    /// in order, against `config.checkpoint_id` (as
    /// [`put_writes`](Self::put_writes)), then the step's checkpoint (as
    /// [`put_appending`](Self::put_appending)). The engine calls this when a
    /// step ends with tasks whose writes are not stored yet.
    ///
    /// The default makes those calls one after the other and stops at the
    /// first error (with no writes, it is `put_appending`'s future itself); a
    /// saver that keeps it must not make `put_appending` call this. A saver may
    /// store them all in one transaction (the SQLite saver does): a step then
    /// costs one round trip to the database, and a crash stores either all of
    /// it or none of it.
    fn put_with_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Vec<(String, Blob)>)>,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        if writes.is_empty() {
            return self.put_appending(config, checkpoint, metadata, new_versions, appends);
        }
        Box::pin(async move {
            for (task_id, rows) in writes {
                self.put_writes(config, rows, &task_id).await?;
            }
            self.put_appending(config, checkpoint, metadata, new_versions, appends)
                .await
        })
    }

    /// Several checkpoints in a row, each the child of the one before (the
    /// first of `config.checkpoint_id`), each stored as
    /// [`put_with_writes`](Self::put_with_writes) stores one: its
    /// [`StepPut::writes`] against its parent, then the checkpoint. Returns
    /// the config of the last (`config` itself when `puts` is empty).
    ///
    /// The engine calls this under durability `sync` for checkpoints with no
    /// node run between them: a run's `input` checkpoint and that of the
    /// `__start__` step after it; a run's last checkpoint, when its guard does
    /// not store it itself ([`RunGuard::release_after`]). The default makes the calls one after
    /// the other and stops at the first error; a saver may store them all in
    /// one transaction (the SQLite saver does): the pair then costs one round
    /// trip to the database, and a crash stores all of them or none.
    fn put_chain<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        puts: Vec<StepPut>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(async move {
            let mut parent = config.clone();
            for put in puts {
                parent = put.put_to(self, &parent).await?;
            }
            Ok(parent)
        })
    }

    /// Deletes every checkpoint, blob and write of a thread, in every namespace.
    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// Deletes the checkpoints of a thread that `retention` does not keep (in every
    /// namespace, each on its own; the newest of each is always kept), with their
    /// pending writes and the stored values no remaining checkpoint refers to.
    /// Returns how many checkpoints were deleted.
    ///
    /// What remains reads back exactly as before; the oldest remaining checkpoint's
    /// `parent_config` may name a deleted one. [`Retention::KeepLast`]`(0)` is
    /// [`CheckpointError::InvalidInput`]; a checkpoint whose `ts` cannot be read is
    /// kept by [`Retention::OlderThan`].
    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>>;

    /// Called by the engine when a run of a root graph (an `invoke`, a stream,
    /// an `update_state`) starts on `thread_id` (`checkpoint_ns` is `""`, or a
    /// subgraph's namespace for an `update_state` of that subgraph), after
    /// the in-process check that no other run of this saver holds the thread and
    /// before the thread is read. The returned guard is held until the run ends.
    ///
    /// A saver shared by several processes takes a lock here, without waiting:
    /// [`CheckpointError::ThreadBusy`] when another process runs the thread (the
    /// caller gets `GraphError::ThreadBusy` at once, as for a second run in one
    /// process). Such a saver should also fence the run's writes: return a guard
    /// [`with_writer`](RunGuard::with_writer), a view of the saver whose `put`
    /// and `put_writes` check, atomically with the write, that the run still
    /// holds the thread, and fail with [`CheckpointError::LeaseLost`] when
    /// another run has taken it over since. Its `delete_thread` and `prune`
    /// should refuse a thread a run holds ([`CheckpointError::ThreadBusy`]).
    ///
    /// The default holds nothing: runs of one thread in different processes are
    /// not detected.
    fn begin_run<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_ns: &'a str,
    ) -> BoxFuture<'a, Result<RunGuard, CheckpointError>> {
        let _ = (thread_id, checkpoint_ns);
        Box::pin(std::future::ready(Ok(RunGuard::none())))
    }

    /// [`begin_run`](Self::begin_run) on `config`'s thread and namespace, then
    /// the checkpoint `config` addresses ([`get_tuple`](Self::get_tuple),
    /// through the guard's writer when it has one), as one call: the engine
    /// starts every root run this way. A saver may answer both in one round
    /// trip to its database (the SQLite saver does).
    ///
    /// The default makes the two calls; when the read fails, it releases the
    /// guard before returning the error.
    fn begin_run_and_load<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<(RunGuard, Option<CheckpointTuple>), CheckpointError>> {
        Box::pin(async move {
            let guard = self
                .begin_run(&config.thread_id, &config.checkpoint_ns)
                .await?;
            let loaded = match guard.writer() {
                Some(writer) => writer.get_tuple(config).await,
                None => self.get_tuple(config).await,
            };
            match loaded {
                Ok(tuple) => Ok((guard, tuple)),
                Err(e) => {
                    guard.release().await;
                    Err(e)
                }
            }
        })
    }
}

/// A new, unique owner id for a run's lease on a thread, readable in a lease
/// table: the host name, the process id and a random part
/// (`"worker-7:4242:9f86d081884c7d65"`). Savers that hold threads for their runs
/// (see [`Checkpointer::begin_run`]) name the owner with it in
/// [`CheckpointError::LeaseLost`].
pub fn lease_owner_id() -> String {
    // Read once per process: a run starts with this, and the name is a label.
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown-host".to_owned())
    });
    format!("{host}:{}:{:016x}", std::process::id(), fastrand::u64(..))
}

/// The pending-write channel of a task's interrupts (a list of `Interrupt`s).
pub const INTERRUPT_CHANNEL: &str = "__interrupt__";
/// The channel of `Send`s (pending writes of `{node, arg}` objects).
pub const TASKS_CHANNEL: &str = "__pregel_tasks";

/// Pending-write keys with a fixed index (they replace earlier rows).
pub const SPECIAL_WRITES: &[(&str, i64)] = &[
    ("__error__", -1),
    ("__scheduled__", -2),
    (INTERRUPT_CHANNEL, -3),
    ("__resume__", -4),
];

/// The index a write is stored under: its special index, or its position.
pub fn write_index(channel: &str, position: usize) -> i64 {
    SPECIAL_WRITES
        .iter()
        .find(|(c, _)| *c == channel)
        .map_or(position as i64, |(_, i)| *i)
}

/// Whether `metadata` has every entry of `filter`.
pub fn metadata_matches(
    metadata: &CheckpointMetadata,
    filter: &serde_json::Map<String, serde_json::Value>,
) -> bool {
    if filter.is_empty() {
        return true;
    }
    let Ok(serde_json::Value::Object(map)) = serde_json::to_value(metadata) else {
        return false;
    };
    filter.iter().all(|(k, v)| map.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: u64, nanos: u32) -> Option<SystemTime> {
        Some(UNIX_EPOCH + Duration::new(secs, nanos))
    }

    #[test]
    fn short_and_long_blobs_read_alike_and_edit_in_place() {
        let short = Blob::encode(&serde_json::json!({"a": [1, "x"]})).unwrap();
        assert_eq!(short.as_str(), r#"{"a":[1,"x"]}"#);
        assert!(matches!(short.0, Text::Short(_)));
        let long_text = "y".repeat(json::SHORT_BYTES + 1);
        let long = Blob::encode(&long_text).unwrap();
        assert!(matches!(long.0, Text::Long(_)));
        assert_eq!(long.as_str(), serde_json::to_string(&long_text).unwrap());
        // Equal by text, whatever the form.
        assert_eq!(short, Blob::from_text(r#"{"a":[1,"x"]}"#.to_owned()));
        assert_eq!(
            Blob::from_json("[1]").unwrap(),
            Blob::from_text("[1]".to_owned())
        );
        let read: Blob = serde_json::from_str(r#" {"b": 2} "#).unwrap();
        assert_eq!(read.as_str(), r#"{"b": 2}"#);
        // A short text is copied into a buffer of its own to be edited; a
        // shared long one is copied, and the other blob keeps the old text.
        let mut edited = short.clone();
        edited.edit(|text| text.push(' '));
        assert_eq!(edited.as_str(), r#"{"a":[1,"x"]} "#);
        assert_eq!(short.as_str(), r#"{"a":[1,"x"]}"#);
        let mut grown = long.clone();
        grown.edit(|text| text.push(' '));
        assert_eq!(grown.as_str().len(), long.as_str().len() + 1);
        assert!(short.into_buffer().is_none());
        assert!(long.clone().into_buffer().is_none(), "shared with `long`");
        assert_eq!(
            grown.into_buffer().map(|t| t.len()),
            Some(long.as_str().len() + 1)
        );
    }

    #[test]
    fn empty_maps_are_written_as_json_objects() {
        let mut versions_seen = NameMap::new();
        versions_seen.insert(SharedStr::from("__input__"), ChannelVersions::new());
        let checkpoint = Checkpoint {
            v: 4,
            id: "1".into(),
            ts: "2026-12-01T00:00:00+00:00".into(),
            channel_values: NameMap::new(),
            channel_versions: ChannelVersions::new(),
            versions_seen,
            updated_channels: None,
        };
        let json = serde_json::to_value(&checkpoint).unwrap();
        assert_eq!(json["channel_values"], serde_json::json!({}));
        assert_eq!(json["channel_versions"], serde_json::json!({}));
        assert_eq!(json["versions_seen"], serde_json::json!({"__input__": {}}));
        let back: Checkpoint = serde_json::from_value(json).unwrap();
        assert_eq!(back, checkpoint);
    }

    #[test]
    fn maps_read_in_any_key_order_come_back_sorted_and_last_wins() {
        let json = r#"{
            "v": 4, "id": "1", "ts": "2026-12-01T00:00:00+00:00",
            "channel_values": {"b": 2, "a": 1, "b": 3},
            "channel_versions": {"b": "2", "a": "1"},
            "versions_seen": {"n": {"b": "2", "a": "1"}, "__input__": {}}
        }"#;
        let checkpoint: Checkpoint = serde_json::from_str(json).unwrap();
        let names = |m: &ChannelVersions| m.keys().map(|k| k.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&checkpoint.channel_versions), ["a", "b"]);
        assert_eq!(names(&checkpoint.versions_seen["n"]), ["a", "b"]);
        assert_eq!(
            checkpoint.versions_seen.keys().collect::<Vec<_>>(),
            ["__input__", "n"]
        );
        assert_eq!(checkpoint.channel_values["b"].as_str(), "3");
        assert_eq!(checkpoint.channel_values.len(), 2);
    }

    #[test]
    fn name_maps_insert_remove_and_collect_in_name_order() {
        let mut map: NameMap<u32> = [("c", 3), ("a", 1), ("c", 30)]
            .into_iter()
            .map(|(k, v)| (k.into(), v))
            .collect();
        assert_eq!(
            map.iter()
                .map(|(k, v)| (k.as_str(), *v))
                .collect::<Vec<_>>(),
            [("a", 1), ("c", 30)]
        );
        assert_eq!(map.insert("b".into(), 2), None);
        assert_eq!(map.insert("a".into(), 10), Some(1));
        assert_eq!(map.remove("c"), Some(30));
        assert_eq!(map.remove("c"), None);
        map.extend([("z".into(), 26), ("d".into(), 4)]);
        assert_eq!(
            map.into_iter()
                .map(|(k, v)| (String::from(k), v))
                .collect::<Vec<_>>(),
            [
                ("a".into(), 10),
                ("b".into(), 2),
                ("d".into(), 4),
                ("z".into(), 26)
            ]
        );
        let map: NameMap<u32> = NameMap::from_sorted(vec![("x".into(), 1), ("y".into(), 2)]);
        assert_eq!(format!("{map:?}"), r#"{"x": 1, "y": 2}"#);
        assert!(map.contains_key("y") && !map.contains_key("z"));
    }

    #[test]
    #[should_panic(expected = "no entry named `missing` in this map")]
    fn indexing_a_name_map_by_a_missing_name_says_which() {
        let versions = ChannelVersions::new();
        let _ = &versions["missing"];
    }

    #[test]
    fn timestamps_parse_as_langgraph_writes_them() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00+00:00"), at(0, 0));
        assert_eq!(
            parse_timestamp("2024-07-31T20:14:19.804150+00:00"),
            at(1_722_456_859, 804_150_000)
        );
        assert_eq!(
            parse_timestamp("2024-02-29T12:00:00Z"),
            at(1_709_208_000, 0)
        );
        assert_eq!(
            parse_timestamp("2024-02-29T14:30:00.5+02:30"),
            at(1_709_208_000, 500_000_000)
        );
        assert_eq!(
            parse_timestamp("2000-03-01T00:00:00.123456789123-00:00"),
            at(951_868_800, 123_456_789)
        );
    }

    #[test]
    fn malformed_timestamps_are_none() {
        for bad in [
            "",
            "2024-07-31",
            "2024-07-31T20:14:19",
            "2024-13-01T00:00:00Z",
            "2024-07-31T25:00:00Z",
            "2024-07-31T20:14:19.+00:00",
            "2024-07-31T20:14:19+0000",
            "2024-07-31T20:14:19.5",
            "yyyy-07-31T20:14:19Z",
            "2024-07-31T20:14:19Zjunk",
            "2024-07-31T20:14:1é+00:00",
            "2024-02-30T00:00:00Z",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn retention_selects_per_namespace_and_keeps_the_newest() {
        let t = |s| Some(UNIX_EPOCH + Duration::from_secs(s));
        let all = [
            ("", "1", t(10)),
            ("", "2", t(20)),
            ("", "3", t(30)),
            ("sub", "1", t(5)),
            ("sub", "2", None),
            ("sub", "3", t(6)),
        ];
        let mut last1 = Retention::KeepLast(1).select(all).unwrap();
        last1.sort();
        assert_eq!(last1, [("", "1"), ("", "2"), ("sub", "1"), ("sub", "2")]);
        let mut old = Retention::OlderThan(UNIX_EPOCH + Duration::from_secs(25))
            .select(all)
            .unwrap();
        old.sort();
        // "sub"/"2" has no readable time: kept; "sub"/"3" is the newest: kept.
        assert_eq!(old, [("", "1"), ("", "2"), ("sub", "1")]);
        assert!(Retention::KeepLast(0).select(all).is_err());
        assert_eq!(Retention::KeepLast(9).select(all).unwrap(), []);
    }
}
