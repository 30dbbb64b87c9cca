//! [`InMemorySaver`]: checkpoints in process memory, with LangGraph's blob layout.

use super::{
    metadata_matches, write_index, Blob, ChannelVersion, Checkpoint, CheckpointConfig,
    CheckpointError, CheckpointMetadata, CheckpointTuple, Checkpointer, ListOptions, PendingWrite,
    Retention, SharedStr, SPECIAL_WRITES,
};
use futures::future::BoxFuture;
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// A checkpoint as stored: values live in the blob table, keyed by version.
#[derive(Clone)]
struct Stored {
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    parent_id: Option<String>,
}

/// One pending write row.
#[derive(Clone)]
struct WriteRow {
    task_id: String,
    idx: i64,
    channel: String,
    value: Blob,
}

/// The key of a stored value: thread, namespace, channel, version. Thread and
/// namespace are shared by the keys of one put.
#[derive(PartialEq, Eq)]
struct BlobKey {
    thread: Arc<str>,
    ns: Arc<str>,
    channel: SharedStr,
    version: ChannelVersion,
}

/// A blob key as four borrowed strings: the map is read without building a key.
trait KeyView {
    fn parts(&self) -> (&str, &str, &str, &str);
}

impl KeyView for BlobKey {
    fn parts(&self) -> (&str, &str, &str, &str) {
        (&self.thread, &self.ns, &self.channel, &self.version)
    }
}

impl KeyView for (&str, &str, &str, &str) {
    fn parts(&self) -> (&str, &str, &str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn KeyView + 'a> for BlobKey {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

impl Hash for dyn KeyView + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyView + '_ {}

impl Hash for BlobKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As its `dyn KeyView` view hashes (required by `Borrow`).
        self.parts().hash(state);
    }
}

#[derive(Default)]
struct Store {
    /// thread → namespace → checkpoint id → checkpoint (ids sort by creation).
    checkpoints: BTreeMap<String, BTreeMap<String, BTreeMap<String, Stored>>>,
    /// (thread, namespace, channel, version) → value (`None`: the channel was empty).
    blobs: HashMap<BlobKey, Option<Blob>>,
    /// (thread, namespace, checkpoint id) → writes in insertion order.
    writes: HashMap<(String, String, String), Vec<WriteRow>>,
}

/// Checkpoints kept in memory, serialised (values are stored as JSON text, once per
/// channel version). Lost when the process exits; use the SQLite saver to keep them.
///
/// ```
/// use stategraph::checkpoint::InMemorySaver;
/// let saver = InMemorySaver::new();
/// # let _ = saver;
/// ```
#[derive(Default)]
pub struct InMemorySaver {
    store: Mutex<Store>,
}

impl std::fmt::Debug for InMemorySaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemorySaver").finish_non_exhaustive()
    }
}

impl InMemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        // A panic while holding the lock cannot leave the maps half-updated in a way
        // that breaks their invariants (each mutation is a single insert/remove).
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Store {
    fn tuple(&self, thread: &str, ns: &str, id: &str, stored: &Stored) -> CheckpointTuple {
        let mut checkpoint = stored.checkpoint.clone();
        for (channel, version) in &checkpoint.channel_versions {
            let key = (thread, ns, channel.as_str(), version.as_str());
            if let Some(Some(blob)) = self.blobs.get(&key as &dyn KeyView) {
                checkpoint
                    .channel_values
                    .insert(channel.clone(), blob.clone());
            }
        }
        let pending_writes = self
            .writes
            .get(&(thread.to_owned(), ns.to_owned(), id.to_owned()))
            .map(|rows| {
                rows.iter()
                    .map(|r| PendingWrite {
                        task_id: r.task_id.clone(),
                        channel: r.channel.clone(),
                        value: r.value.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let config = CheckpointConfig {
            thread_id: thread.to_owned(),
            checkpoint_ns: ns.to_owned(),
            checkpoint_id: Some(id.to_owned()),
        };
        let parent_config = stored.parent_id.as_ref().map(|p| config.at(p.clone()));
        CheckpointTuple {
            config,
            checkpoint,
            metadata: stored.metadata.clone(),
            parent_config,
            pending_writes,
        }
    }
}

impl Checkpointer for InMemorySaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        Box::pin(async move {
            let store = self.lock();
            let Some(by_id) = store
                .checkpoints
                .get(&config.thread_id)
                .and_then(|t| t.get(&config.checkpoint_ns))
            else {
                return Ok(None);
            };
            let found = match &config.checkpoint_id {
                Some(id) => by_id.get_key_value(id),
                None => by_id.iter().next_back(),
            };
            Ok(found.map(|(id, stored)| {
                store.tuple(&config.thread_id, &config.checkpoint_ns, id, stored)
            }))
        })
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        Box::pin(async move {
            let store = self.lock();
            let mut out = Vec::new();
            for (thread, namespaces) in &store.checkpoints {
                if config.is_some_and(|c| &c.thread_id != thread) {
                    continue;
                }
                for (ns, by_id) in namespaces {
                    // A config always names a namespace; "" is the root's.
                    if config.is_some_and(|c| &c.checkpoint_ns != ns) {
                        continue;
                    }
                    for (id, stored) in by_id.iter().rev() {
                        if let Some(want) = config.and_then(|c| c.checkpoint_id.as_ref()) {
                            if want != id {
                                continue;
                            }
                        }
                        if options.before.as_ref().is_some_and(|b| id >= b) {
                            continue;
                        }
                        if !metadata_matches(&stored.metadata, &options.filter) {
                            continue;
                        }
                        out.push(store.tuple(thread, ns, id, stored));
                    }
                }
            }
            out.sort_by(|a, b| b.config.checkpoint_id.cmp(&a.config.checkpoint_id));
            if let Some(limit) = options.limit {
                out.truncate(limit);
            }
            Ok(out)
        })
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: BTreeMap<SharedStr, ChannelVersion>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(async move {
            let mut store = self.lock();
            let thread = &config.thread_id;
            let ns = &config.checkpoint_ns;
            let mut values = std::mem::take(&mut checkpoint.channel_values);
            let (shared_thread, shared_ns): (Arc<str>, Arc<str>) =
                (Arc::from(thread.as_str()), Arc::from(ns.as_str()));
            for (channel, version) in new_versions {
                let blob = values.remove(&channel);
                let key = BlobKey {
                    thread: Arc::clone(&shared_thread),
                    ns: Arc::clone(&shared_ns),
                    channel,
                    version,
                };
                store.blobs.insert(key, blob);
            }
            let id = checkpoint.id.clone();
            store
                .checkpoints
                .entry(thread.clone())
                .or_default()
                .entry(ns.clone())
                .or_default()
                .insert(
                    id.clone(),
                    Stored {
                        checkpoint,
                        metadata,
                        parent_id: config.checkpoint_id.clone(),
                    },
                );
            Ok(config.at(id))
        })
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            let Some(id) = config.checkpoint_id.clone() else {
                return Err(CheckpointError::InvalidInput(format!(
                    "put_writes for thread `{}` needs a checkpoint id",
                    config.thread_id
                )));
            };
            let mut store = self.lock();
            let rows = store
                .writes
                .entry((config.thread_id.clone(), config.checkpoint_ns.clone(), id))
                .or_default();
            for (position, (channel, value)) in writes.into_iter().enumerate() {
                let idx = write_index(&channel, position);
                let special = SPECIAL_WRITES.iter().any(|(c, _)| *c == channel);
                match rows
                    .iter_mut()
                    .find(|r| r.task_id == task_id && r.idx == idx)
                {
                    Some(row) if special => {
                        row.channel = channel;
                        row.value = value;
                    }
                    Some(_) => {}
                    None => rows.push(WriteRow {
                        task_id: task_id.to_owned(),
                        idx,
                        channel,
                        value,
                    }),
                }
            }
            Ok(())
        })
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            let mut store = self.lock();
            store.checkpoints.remove(thread_id);
            store.blobs.retain(|key, _| &*key.thread != thread_id);
            store.writes.retain(|(t, ..), _| t != thread_id);
            Ok(())
        })
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move {
            let mut store = self.lock();
            let Some(namespaces) = store.checkpoints.get(thread_id) else {
                retention.select(std::iter::empty())?;
                return Ok(0);
            };
            let doomed: Vec<(String, String)> = retention
                .select(namespaces.iter().flat_map(|(ns, by_id)| {
                    by_id
                        .iter()
                        .map(move |(id, s)| (ns.as_str(), id.as_str(), s.checkpoint.created_at()))
                }))?
                .into_iter()
                .map(|(ns, id)| (ns.to_owned(), id.to_owned()))
                .collect();
            if doomed.is_empty() {
                return Ok(0);
            }
            let store = &mut *store;
            let Some(namespaces) = store.checkpoints.get_mut(thread_id) else {
                return Ok(0);
            };
            for (ns, id) in &doomed {
                if let Some(by_id) = namespaces.get_mut(ns) {
                    by_id.remove(id);
                }
                store
                    .writes
                    .remove(&(thread_id.to_owned(), ns.clone(), id.clone()));
            }
            let referenced: HashSet<(&str, &str, &str)> = namespaces
                .iter()
                .flat_map(|(ns, by_id)| {
                    by_id.values().flat_map(move |s| {
                        s.checkpoint
                            .channel_versions
                            .iter()
                            .map(move |(c, v)| (ns.as_str(), c.as_str(), v.as_str()))
                    })
                })
                .collect();
            store.blobs.retain(|key, _| {
                &*key.thread != thread_id
                    || referenced.contains(&(&*key.ns, key.channel.as_str(), key.version.as_str()))
            });
            Ok(doomed.len() as u64)
        })
    }
}
