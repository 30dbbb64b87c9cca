//! Persistence: the [`Checkpointer`] trait, LangGraph's checkpoint structure
//! ([`Checkpoint`], [`CheckpointMetadata`], pending writes), and [`InMemorySaver`].
//!
//! Values cross this boundary serialised: every channel value and pending write is
//! JSON text ([`Blob`]), produced straight from the typed state (no intermediate
//! `serde_json::Value` tree) and only for the channels that changed.

#[doc(hidden)]
pub mod conformance;
mod memory;

pub use memory::InMemorySaver;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A serialised value: JSON text, shared cheaply.
#[derive(Clone, PartialEq, Eq)]
pub struct Blob(Arc<str>);

impl Blob {
    /// Serialises `value` to JSON.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(|s| Blob(Arc::from(s)))
    }

    /// A blob from JSON text that is known to be valid.
    pub fn from_json(text: impl Into<Arc<str>>) -> Result<Self, serde_json::Error> {
        let text = text.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(Blob(text))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Deserialises the blob.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// The JSON `null` blob.
    pub fn null() -> Self {
        Blob(Arc::from("null"))
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_str::<&RawValue>(&self.0) {
            Ok(raw) => raw.serialize(serializer),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: Box<RawValue> = Deserialize::deserialize(deserializer)?;
        Ok(Blob(Arc::from(raw.get())))
    }
}

/// A channel version: LangGraph's `"{n:032}.{random:016}"` string.
pub type ChannelVersion = String;

/// Where a checkpoint lives: thread, namespace and (optionally) its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CheckpointConfig {
    /// The thread.
    pub thread_id: String,
    /// The namespace (`""` for a root graph).
    #[serde(default)]
    pub checkpoint_ns: String,
    /// The checkpoint; `None` means the latest of the thread and namespace.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
}

impl CheckpointConfig {
    /// The latest checkpoint of a thread's root namespace.
    pub fn thread(thread_id: impl Into<String>) -> Self {
        CheckpointConfig {
            thread_id: thread_id.into(),
            checkpoint_ns: String::new(),
            checkpoint_id: None,
        }
    }

    /// The same thread and namespace, at checkpoint `id`.
    pub fn at(&self, id: impl Into<String>) -> Self {
        CheckpointConfig {
            checkpoint_id: Some(id.into()),
            ..self.clone()
        }
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
    pub channel_values: BTreeMap<String, Blob>,
    /// The version of each channel that has been written.
    pub channel_versions: BTreeMap<String, ChannelVersion>,
    /// Per node, the versions of its triggers it last ran on.
    pub versions_seen: BTreeMap<String, BTreeMap<String, ChannelVersion>>,
    /// Channels changed (and available) by the step that produced this checkpoint.
    #[serde(default)]
    pub updated_channels: Option<Vec<String>>,
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
    /// Entries copied from the run's metadata and `configurable` (§2.1).
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

/// Filters for [`Checkpointer::list`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListOptions {
    /// Only checkpoints whose metadata has all of these entries.
    pub filter: serde_json::Map<String, serde_json::Value>,
    /// Only checkpoints older than this one (by id).
    pub before: Option<String>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
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
    /// The stored data uses a newer schema or format than this library understands.
    #[error("{0}; upgrade stategraph to read it")]
    Unsupported(String),
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
        new_versions: BTreeMap<String, ChannelVersion>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>>;

    /// Stores writes of task `task_id` against checkpoint `config.checkpoint_id`.
    /// Special channels (`__error__`, `__interrupt__`, ...) replace earlier rows;
    /// ordinary writes are kept if already present.
    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// Deletes every checkpoint, blob and write of a thread, in every namespace.
    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;
}

/// Pending-write keys with a fixed index (they replace earlier rows).
pub const SPECIAL_WRITES: &[(&str, i64)] = &[
    ("__error__", -1),
    ("__scheduled__", -2),
    ("__interrupt__", -3),
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
