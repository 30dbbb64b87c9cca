//! LangGraph's table layout of checkpoints, for savers that store them in a
//! database (graph-sqlite and graph-postgres use it): what [`Checkpointer::put`]
//! and [`Checkpointer::put_writes`] store as rows, and how rows read back into a
//! [`CheckpointTuple`]. It knows nothing of SQL: each saver keeps its statements
//! and its driver's types, and passes column values in and out.
//!
//! The layout is the one LangGraph's Python savers use, so that each side reads
//! the other's threads:
//!
//! - **A checkpoint row** per checkpoint: thread id, namespace, checkpoint id,
//!   parent checkpoint id, the checkpoint as JSON with an empty `channel_values`,
//!   and the metadata as JSON ([`PutRows`]).
//! - **A blob row** per channel version a `put` introduced (its `new_versions`):
//!   `(channel, version, type, bytes)`, of type [`JSON`] with the value's JSON
//!   text, or [`EMPTY`] without bytes for a channel that has no value
//!   ([`BlobRow`]). An unchanged channel's value is the blob row an earlier `put`
//!   wrote: a checkpoint's values are the blob rows at the versions its
//!   `channel_versions` names ([`fill_values`]).
//! - **A write row** per pending write: task id, task path, `idx`, channel, type,
//!   bytes ([`WriteRow`]). `idx` is the write's position in its `put_writes` call,
//!   or the fixed negative index of a special channel ([`SPECIAL_WRITES`]); a
//!   special write replaces the row already stored at its index, any other write
//!   keeps a row already there (a retried task cannot change what it wrote).
//!   Writes read back ordered as LangGraph's `writes_sort_key`: task path, task
//!   id, `idx`.
//!
//! [`Checkpointer::put`]: super::Checkpointer::put
//! [`Checkpointer::put_writes`]: super::Checkpointer::put_writes
//! [`SPECIAL_WRITES`]: super::SPECIAL_WRITES

use super::{
    write_index, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointMetadata,
    CheckpointTuple, PendingWrite, SharedStr,
};
use std::collections::BTreeMap;

/// The newest checkpoint format (LangGraph's `v`) this layout reads.
pub const CHECKPOINT_FORMAT: u32 = 4;

/// The `type` of a value stored as JSON text.
pub const JSON: &str = "json";

/// The `type` of a blob row for a channel that has no value (no bytes).
pub const EMPTY: &str = "empty";

/// Why rows could not be written or read back. A saver adds the thread and
/// checkpoint (and its own error type) around it.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// The checkpoint or its metadata could not be serialised.
    #[error("cannot serialise {what}: {source}")]
    // Not `Serialize`: a second item of that name anywhere in the crate graph
    // makes rustc print serde's trait with its full path in users' errors.
    Encode {
        /// `"the checkpoint"` or `"the metadata"`.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A stored part could not be decoded, or a value the checkpoint names is
    /// not stored.
    #[error("cannot decode {what}: {source}")]
    Corrupt {
        /// Which part: the checkpoint, the metadata, the value of a channel, ...
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The checkpoint uses a newer format than [`CHECKPOINT_FORMAT`].
    #[error("checkpoint format v{found} is newer than v{supported}")]
    FormatTooNew {
        /// Its format version.
        found: u32,
        /// [`CHECKPOINT_FORMAT`].
        supported: u32,
    },
}

/// What a `put` stores: the checkpoint row's JSON columns and the blob rows.
#[derive(Debug, Clone, PartialEq)]
pub struct PutRows {
    /// The checkpoint's id.
    pub id: String,
    /// The checkpoint as JSON, with an empty `channel_values`.
    pub checkpoint: String,
    /// The metadata as JSON.
    pub metadata: String,
    /// One row per entry of `new_versions`, in channel order.
    pub blobs: Vec<BlobRow>,
}

/// A row of `checkpoint_blobs`: one version of one channel.
#[derive(Debug, Clone, PartialEq)]
pub struct BlobRow {
    /// The channel.
    pub channel: SharedStr,
    /// The version.
    pub version: SharedStr,
    /// The value; `None` for a channel that has none.
    pub value: Option<Blob>,
}

impl BlobRow {
    /// The `type` column: [`JSON`], or [`EMPTY`] without a value.
    pub fn type_(&self) -> &'static str {
        if self.value.is_some() {
            JSON
        } else {
            EMPTY
        }
    }

    /// The `blob` column: the value's JSON text, or `None` (SQL NULL).
    pub fn bytes(&self) -> Option<&[u8]> {
        self.value.as_ref().map(|v| v.as_str().as_bytes())
    }
}

/// The rows a `put` of `checkpoint` stores: the checkpoint row without the
/// values, and a blob row per entry of `new_versions` with that channel's value
/// in `checkpoint` (or none: [`EMPTY`]).
pub fn put_rows(
    mut checkpoint: Checkpoint,
    metadata: &CheckpointMetadata,
    new_versions: &ChannelVersions,
) -> Result<PutRows, RowError> {
    let values = std::mem::take(&mut checkpoint.channel_values);
    let serialize = |what| move |source| RowError::Encode { what, source };
    let row = serde_json::to_string(&checkpoint).map_err(serialize("the checkpoint"))?;
    let metadata = serde_json::to_string(metadata).map_err(serialize("the metadata"))?;
    let blobs = new_versions
        .iter()
        .map(|(channel, version)| BlobRow {
            channel: channel.clone(),
            version: version.clone(),
            value: values.get(channel.as_str()).cloned(),
        })
        .collect();
    Ok(PutRows {
        id: checkpoint.id,
        checkpoint: row,
        metadata,
        blobs,
    })
}

/// A row of `checkpoint_writes` (its task id and task path are the call's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteRow<'a> {
    /// The `idx` column: the write's position, or its channel's special index.
    pub idx: i64,
    /// The channel.
    pub channel: &'a str,
    /// The value.
    pub value: &'a Blob,
}

impl WriteRow<'_> {
    /// Whether the row replaces one already stored at its index (a special
    /// channel's); other rows leave a stored one as it is.
    pub fn replaces(&self) -> bool {
        self.idx < 0
    }
}

/// The rows of one `put_writes` call: one per index, in index order. A special
/// channel written twice in the call keeps its last value.
pub fn write_rows(writes: &[(String, Blob)]) -> Vec<WriteRow<'_>> {
    let mut rows: BTreeMap<i64, WriteRow<'_>> = BTreeMap::new();
    for (position, (channel, value)) in writes.iter().enumerate() {
        let idx = write_index(channel, position);
        rows.insert(
            idx,
            WriteRow {
                idx,
                channel,
                value,
            },
        );
    }
    rows.into_values().collect()
}

/// Fails if `checkpoint` has a newer format than [`CHECKPOINT_FORMAT`].
pub fn check_format(checkpoint: &Checkpoint) -> Result<(), RowError> {
    if checkpoint.v > CHECKPOINT_FORMAT {
        return Err(RowError::FormatTooNew {
            found: checkpoint.v,
            supported: CHECKPOINT_FORMAT,
        });
    }
    Ok(())
}

/// The checkpoint column of a row, as JSON (of a supported format).
pub fn read_checkpoint(json: &str) -> Result<Checkpoint, RowError> {
    let checkpoint = serde_json::from_str(json).map_err(|e| RowError::Corrupt {
        what: "the checkpoint".to_owned(),
        source: Box::new(e),
    })?;
    check_format(&checkpoint)?;
    Ok(checkpoint)
}

/// The metadata column of a row, as JSON.
pub fn read_metadata(json: &[u8]) -> Result<CheckpointMetadata, RowError> {
    serde_json::from_slice(json).map_err(|e| RowError::Corrupt {
        what: "the metadata".to_owned(),
        source: Box::new(e),
    })
}

/// Puts into `checkpoint` the values of its blob rows: `(channel, value)` for
/// each row at a version `channel_versions` names, `None` for an [`EMPTY`] one.
///
/// With `complete` (a row written by [`put_rows`], whose values all live in blob
/// rows), a version without a blob row is an error naming the channel, the
/// version and the namespace `checkpoint_ns`: a lost value, never read as an
/// empty channel. Python's savers keep some values in the checkpoint itself and
/// store no row for an empty channel; their rows are not `complete`.
pub fn fill_values<C: AsRef<str>>(
    checkpoint: &mut Checkpoint,
    checkpoint_ns: &str,
    rows: impl IntoIterator<Item = (C, Option<Blob>)>,
    complete: bool,
) -> Result<(), RowError> {
    let mut found: Vec<C> = Vec::new();
    for (channel, value) in rows {
        match value {
            Some(value) => {
                checkpoint
                    .channel_values
                    .insert(channel.as_ref().into(), value);
            }
            None => {
                checkpoint.channel_values.remove(channel.as_ref());
            }
        }
        if complete {
            found.push(channel);
        }
    }
    if !complete || found.len() >= checkpoint.channel_versions.len() {
        return Ok(());
    }
    let missing = checkpoint
        .channel_versions
        .iter()
        .find(|(channel, _)| !found.iter().any(|c| c.as_ref() == channel.as_str()));
    match missing {
        Some((channel, version)) => Err(RowError::Corrupt {
            what: format!("the value of channel `{channel}`"),
            source: format!(
                "the checkpoint names version `{version}` of it, and no value is stored for \
                 that version (in namespace `{checkpoint_ns}`): the value was deleted outside \
                 stategraph, or the database is damaged"
            )
            .into(),
        }),
        None => Ok(()),
    }
}

/// The key columns of a checkpoint row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowKey {
    /// The thread.
    pub thread_id: String,
    /// The namespace.
    pub checkpoint_ns: String,
    /// The checkpoint.
    pub checkpoint_id: String,
    /// The parent checkpoint (NULL or `""` for none).
    pub parent_checkpoint_id: Option<String>,
}

impl RowKey {
    /// The row's checkpoint with everything read back from its rows.
    pub fn into_tuple(
        self,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        pending_writes: Vec<PendingWrite>,
    ) -> CheckpointTuple {
        let config = CheckpointConfig {
            thread_id: self.thread_id.into(),
            checkpoint_ns: self.checkpoint_ns.into(),
            checkpoint_id: Some(self.checkpoint_id.into()),
        };
        let parent_config = self
            .parent_checkpoint_id
            .filter(|p| !p.is_empty())
            .map(|p| config.at(p));
        CheckpointTuple {
            config,
            checkpoint,
            metadata,
            parent_config,
            pending_writes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{CheckpointSource, NameMap};

    fn blob(json: &str) -> Blob {
        Blob::from_json(json).unwrap()
    }

    fn versions(entries: &[(&str, &str)]) -> ChannelVersions {
        entries
            .iter()
            .map(|(c, v)| ((*c).into(), (*v).into()))
            .collect()
    }

    fn checkpoint() -> Checkpoint {
        Checkpoint {
            v: 4,
            id: "1f0-1".into(),
            ts: "2026-12-01T00:00:00+00:00".into(),
            channel_values: [("a", "1"), ("b", r#"{"x": [true]}"#)]
                .into_iter()
                .map(|(c, v)| (c.into(), blob(v)))
                .collect(),
            channel_versions: versions(&[("a", "2"), ("b", "1"), ("c", "3")]),
            versions_seen: NameMap::new(),
            updated_channels: None,
        }
    }

    fn metadata() -> CheckpointMetadata {
        CheckpointMetadata {
            source: CheckpointSource::Loop,
            step: 3,
            parents: BTreeMap::new(),
            extra: serde_json::Map::new(),
        }
    }

    #[test]
    fn a_put_stores_the_checkpoint_without_values_and_a_blob_row_per_new_version() {
        let new_versions = versions(&[("a", "2"), ("c", "3")]);
        let rows = put_rows(checkpoint(), &metadata(), &new_versions).unwrap();
        assert_eq!(rows.id, "1f0-1");
        assert_eq!(
            rows.checkpoint,
            r#"{"v":4,"id":"1f0-1","ts":"2026-12-01T00:00:00+00:00","channel_values":{},"channel_versions":{"a":"2","b":"1","c":"3"},"versions_seen":{},"updated_channels":null}"#
        );
        assert_eq!(rows.metadata, r#"{"source":"loop","step":3,"parents":{}}"#);
        let blobs: Vec<_> = rows
            .blobs
            .iter()
            .map(|b| (b.channel.as_str(), b.version.as_str(), b.type_(), b.bytes()))
            .collect();
        // `b` did not change: its value is already stored under version 1.
        assert_eq!(
            blobs,
            [
                ("a", "2", "json", Some(&b"1"[..])),
                ("c", "3", "empty", None)
            ]
        );
    }

    #[test]
    fn rows_read_back_into_the_checkpoint_that_was_put() {
        let original = checkpoint();
        let rows = put_rows(original.clone(), &metadata(), &original.channel_versions).unwrap();
        let mut back = read_checkpoint(&rows.checkpoint).unwrap();
        assert!(back.channel_values.is_empty());
        let blob_rows = rows
            .blobs
            .iter()
            .map(|b| (b.channel.clone(), b.value.clone()));
        fill_values(&mut back, "", blob_rows, true).unwrap();
        assert_eq!(back, original);
        assert_eq!(read_metadata(rows.metadata.as_bytes()).unwrap(), metadata());
    }

    #[test]
    fn an_empty_row_empties_the_channel_and_a_missing_row_is_an_error() {
        let mut read = checkpoint();
        let rows = [("a", Some(blob("5"))), ("b", None), ("c", None)];
        fill_values(&mut read, "", rows, true).unwrap();
        assert_eq!(read.channel_values.len(), 1);
        assert_eq!(read.channel_values["a"].as_str(), "5");

        let mut read = checkpoint();
        let err = fill_values(&mut read, "sub:1", [("a", None), ("c", None)], true).unwrap_err();
        let RowError::Corrupt { what, source } = err else {
            panic!("expected Corrupt, got {err:?}");
        };
        assert_eq!(what, "the value of channel `b`");
        let source = source.to_string();
        assert!(
            source.contains("version `1`") && source.contains("namespace `sub:1`"),
            "{source}"
        );
        // Python's rows keep values inline and store no row for an empty channel.
        let mut read = checkpoint();
        fill_values(&mut read, "", [("a", None::<Blob>)], false).unwrap();
        assert_eq!(read.channel_values.len(), 1);
    }

    #[test]
    fn writes_take_their_position_or_their_special_index() {
        let writes: Vec<(String, Blob)> = [
            ("x", "1"),
            ("__error__", r#""first""#),
            ("y", "2"),
            ("__interrupt__", "[]"),
            ("__error__", r#""last""#),
        ]
        .into_iter()
        .map(|(c, v)| (c.to_owned(), blob(v)))
        .collect();
        let rows: Vec<_> = write_rows(&writes)
            .into_iter()
            .map(|w| (w.idx, w.channel, w.value.as_str(), w.replaces()))
            .collect();
        assert_eq!(
            rows,
            [
                (-3, "__interrupt__", "[]", true),
                (-1, "__error__", r#""last""#, true),
                (0, "x", "1", false),
                (2, "y", "2", false),
            ]
        );
        assert!(write_rows(&[]).is_empty());
    }

    #[test]
    fn a_newer_format_or_bad_json_is_an_error() {
        let mut newer = checkpoint();
        newer.v = CHECKPOINT_FORMAT + 1;
        let json = serde_json::to_string(&newer).unwrap();
        assert!(matches!(
            read_checkpoint(&json),
            Err(RowError::FormatTooNew {
                found: 5,
                supported: 4
            })
        ));
        assert!(check_format(&checkpoint()).is_ok());
        assert!(matches!(
            read_checkpoint("{oops"),
            Err(RowError::Corrupt { what, .. }) if what == "the checkpoint"
        ));
        assert!(matches!(
            read_metadata(b"[]"),
            Err(RowError::Corrupt { what, .. }) if what == "the metadata"
        ));
    }

    #[test]
    fn an_empty_or_null_parent_is_no_parent() {
        let key = |parent: Option<&str>| RowKey {
            thread_id: "t".into(),
            checkpoint_ns: "ns".into(),
            checkpoint_id: "2".into(),
            parent_checkpoint_id: parent.map(str::to_owned),
        };
        let tuple = key(Some("1")).into_tuple(checkpoint(), metadata(), Vec::new());
        assert_eq!(tuple.config.checkpoint_id.as_deref(), Some("2"));
        assert_eq!(tuple.config.checkpoint_ns, "ns");
        let parent = tuple.parent_config.unwrap();
        assert_eq!(
            (parent.thread_id.as_str(), parent.checkpoint_id.as_deref()),
            ("t", Some("1"))
        );
        for none in [None, Some("")] {
            let tuple = key(none).into_tuple(checkpoint(), metadata(), Vec::new());
            assert_eq!(tuple.parent_config, None);
        }
    }
}
