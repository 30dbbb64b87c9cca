//! [`InMemorySaver`]: checkpoints in process memory, with LangGraph's blob layout.

use super::{
    metadata_matches, write_index, Blob, ChannelVersion, ChannelVersions, Checkpoint,
    CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointTuple, Checkpointer,
    ListOptions, NameMap, PendingWrite, Retention, SharedStr, SPECIAL_WRITES,
};
use futures::future::BoxFuture;
use hashbrown::{Equivalent, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};

/// Channel → version pairs as stored: sorted by channel, exactly sized.
type Versions = Box<[(SharedStr, ChannelVersion)]>;

/// `versions_seen` as stored, flat: one entry per (node, channel) sorted by node
/// then channel, and a `None` entry for a node that has seen nothing.
type Seen = Box<[(SharedStr, Option<(SharedStr, ChannelVersion)>)]>;

/// A checkpoint as stored: values live in the blob table, keyed by version, and
/// the id is the key it is stored under. Its maps are kept as exactly sized
/// sorted slices, `versions_seen` flattened into one: a thread keeps one
/// allocation per map however many nodes the graph has.
struct Stored {
    v: u32,
    ts: Box<str>,
    channel_versions: Versions,
    versions_seen: Seen,
    updated_channels: Option<Box<[SharedStr]>>,
    metadata: CheckpointMetadata,
    parent_id: Option<Box<str>>,
}

/// `versions_seen` flattened: one allocation however many nodes it has.
fn seen(map: NameMap<ChannelVersions>) -> Seen {
    let mut out = Vec::with_capacity(map.values().map(|m| m.len().max(1)).sum());
    for (node, versions) in map {
        if versions.is_empty() {
            out.push((node, None));
        } else {
            out.extend(versions.into_iter().map(|pair| (node.clone(), Some(pair))));
        }
    }
    out.into_boxed_slice()
}

/// The `versions_seen` map of stored `seen` entries.
fn seen_map(seen: &[(SharedStr, Option<(SharedStr, ChannelVersion)>)]) -> NameMap<ChannelVersions> {
    let groups = seen.chunk_by(|a, b| a.0 == b.0);
    let mut out = Vec::with_capacity(groups.clone().count());
    for group in groups {
        let versions: Vec<_> = group.iter().filter_map(|(_, pair)| pair.clone()).collect();
        out.push((group[0].0.clone(), NameMap::from_sorted(versions)));
    }
    NameMap::from_sorted(out)
}

impl Stored {
    /// `checkpoint` without its values (they go to the blob table).
    fn new(checkpoint: Checkpoint, metadata: CheckpointMetadata, parent_id: Option<&str>) -> Self {
        Stored {
            v: checkpoint.v,
            ts: checkpoint.ts.into_boxed_str(),
            channel_versions: checkpoint.channel_versions.into_vec().into_boxed_slice(),
            versions_seen: seen(checkpoint.versions_seen),
            updated_channels: checkpoint.updated_channels.map(Vec::into_boxed_slice),
            metadata,
            parent_id: parent_id.map(Box::from),
        }
    }

    /// The checkpoint stored under `id`, without its values.
    fn checkpoint(&self, id: &str) -> Checkpoint {
        Checkpoint {
            v: self.v,
            id: id.to_owned(),
            ts: self.ts.to_string(),
            channel_values: NameMap::new(),
            channel_versions: NameMap::from_sorted(self.channel_versions.to_vec()),
            versions_seen: seen_map(&self.versions_seen),
            updated_channels: self.updated_channels.as_ref().map(|u| u.to_vec()),
        }
    }

    fn created_at(&self) -> Option<std::time::SystemTime> {
        super::parse_timestamp(&self.ts)
    }
}

/// One pending write row.
#[derive(Clone)]
struct WriteRow {
    task_id: String,
    idx: i64,
    channel: String,
    value: Blob,
}

/// The key of a stored value within its thread and namespace: channel and version.
#[derive(PartialEq, Eq)]
struct BlobKey {
    channel: SharedStr,
    version: ChannelVersion,
}

impl Hash for BlobKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As `(&str, &str)` hashes: the map is read with borrowed pairs.
        (self.channel.as_str(), self.version.as_str()).hash(state);
    }
}

impl Equivalent<BlobKey> for (&str, &str) {
    fn equivalent(&self, key: &BlobKey) -> bool {
        self.0 == key.channel.as_str() && self.1 == key.version.as_str()
    }
}

/// A namespace's checkpoints, sorted by id (ids sort by creation, so a new one is
/// appended). A vector, not a `BTreeMap`: a B-tree leaf of checkpoints is ~3 KB
/// even for a thread of two.
#[derive(Default)]
struct Checkpoints(Vec<(Box<str>, Stored)>);

impl Checkpoints {
    fn position(&self, id: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| (**k).cmp(id))
    }

    fn get(&self, id: &str) -> Option<(&str, &Stored)> {
        let i = self.position(id).ok()?;
        let (k, v) = &self.0[i];
        Some((k, v))
    }

    fn latest(&self) -> Option<(&str, &Stored)> {
        self.0.last().map(|(k, v)| (&**k, v))
    }

    /// Oldest first.
    fn iter(&self) -> impl DoubleEndedIterator<Item = (&str, &Stored)> {
        self.0.iter().map(|(k, v)| (&**k, v))
    }

    fn insert(&mut self, id: &str, stored: Stored) {
        match self.position(id) {
            Ok(i) => self.0[i].1 = stored,
            Err(i) => {
                // Most threads hold a checkpoint or two: grow one slot at a time
                // until four, not straight to four.
                if self.0.len() < 4 {
                    self.0.reserve_exact(1);
                }
                self.0.insert(i, (Box::from(id), stored));
            }
        }
    }
}

/// What one namespace of one thread holds.
#[derive(Default)]
struct Namespace {
    checkpoints: Checkpoints,
    /// (channel, version) → value (`None`: the channel was empty).
    blobs: HashMap<BlobKey, Option<Blob>>,
    /// Checkpoint id → its pending writes, in insertion order.
    writes: HashMap<String, Vec<WriteRow>>,
}

/// One thread's namespaces: the root graph's inline (most threads have no other),
/// subgraphs' in a map allocated on first use.
#[derive(Default)]
struct Thread {
    root: Namespace,
    nested: HashMap<String, Namespace>,
}

impl Thread {
    fn get(&self, ns: &str) -> Option<&Namespace> {
        if ns.is_empty() {
            Some(&self.root)
        } else {
            self.nested.get(ns)
        }
    }

    /// The namespace's entry, created on first use (its key is copied only then).
    fn get_mut(&mut self, ns: &str) -> &mut Namespace {
        if ns.is_empty() {
            &mut self.root
        } else {
            self.nested.entry_ref(ns).or_default()
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &Namespace)> {
        let nested = self.nested.iter().map(|(ns, n)| (ns.as_str(), n));
        std::iter::once(("", &self.root)).chain(nested)
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Namespace)> {
        let nested = self.nested.iter_mut().map(|(ns, n)| (ns.as_str(), n));
        std::iter::once(("", &mut self.root)).chain(nested)
    }
}

/// Thread → namespace → what it holds. A thread's data is in one place, so reading,
/// deleting or pruning it never scans other threads'. The maps hash with foldhash
/// (hashbrown's default, seeded per process) rather than SipHash: their keys are
/// short ids and names, hashed several times per run.
#[derive(Default)]
struct Store {
    threads: HashMap<String, Thread>,
    /// Thread → the generation of the run that holds it (see `begin_run`).
    /// Only held threads are here: a run's writes check that its generation
    /// still is, so a run whose thread was deleted, pruned or given to another
    /// run (after it was cancelled) stores nothing more.
    leases: HashMap<Arc<str>, u64>,
    /// The last generation granted (never reused).
    generation: u64,
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
    store: Arc<Mutex<Store>>,
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
        lock(&self.store)
    }

    /// The bytes of the values it holds, over every thread: the stored
    /// channel values and pending writes, as serialised (the bookkeeping
    /// around them, ids, versions and metadata, is not counted).
    ///
    /// ```
    /// use stategraph::checkpoint::InMemorySaver;
    ///
    /// assert_eq!(InMemorySaver::new().stored_bytes(), 0);
    /// ```
    pub fn stored_bytes(&self) -> usize {
        let store = self.lock();
        let namespaces = store
            .threads
            .values()
            .flat_map(|t| t.iter().map(|(_, n)| n));
        namespaces
            .map(|n| {
                let blobs: usize = n.blobs.values().flatten().map(|b| b.as_str().len()).sum();
                let writes: usize = n
                    .writes
                    .values()
                    .flatten()
                    .map(|w| w.value.as_str().len())
                    .sum();
                blobs + writes
            })
            .sum()
    }
}

impl InMemorySaver {
    /// `put`, for the run holding lease `fence` when given.
    fn put_fenced(
        &self,
        config: &CheckpointConfig,
        mut checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        fence: Option<u64>,
    ) -> Result<CheckpointConfig, CheckpointError> {
        {
            let mut values = std::mem::take(&mut checkpoint.channel_values)
                .into_iter()
                .peekable();
            let id = std::mem::take(&mut checkpoint.id);
            // Built before the lock is taken: other threads' runs do not wait on it.
            let stored = Stored::new(checkpoint, metadata, config.checkpoint_id.as_deref());
            let mut store = self.lock();
            store.check_fence(&config.thread_id, fence)?;
            let namespace = store.namespace_mut(&config.thread_id, &config.checkpoint_ns);
            for (channel, version) in new_versions {
                // Both maps are sorted by channel: `channel`'s value, if any, is next.
                while values.next_if(|(c, _)| *c < channel).is_some() {}
                let blob = values.next_if(|(c, _)| *c == channel).map(|(_, blob)| blob);
                namespace.blobs.insert(BlobKey { channel, version }, blob);
            }
            namespace.checkpoints.insert(&id, stored);
            drop(store);
            Ok(config.at(id))
        }
    }

    /// `put_writes`, for the run holding lease `fence` when given.
    fn put_writes_fenced(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &str,
        fence: Option<u64>,
    ) -> Result<(), CheckpointError> {
        {
            let Some(id) = config.checkpoint_id.as_deref() else {
                return Err(CheckpointError::InvalidInput(format!(
                    "put_writes for thread `{}` needs a checkpoint id",
                    config.thread_id
                )));
            };
            let mut store = self.lock();
            store.check_fence(&config.thread_id, fence)?;
            let rows = store
                .namespace_mut(&config.thread_id, &config.checkpoint_ns)
                .writes
                .entry_ref(id)
                .or_default();
            // Usually one task's writes per checkpoint: no spare slots for more.
            if rows.is_empty() {
                rows.reserve_exact(writes.len());
            }
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
        }
    }
}

fn lock(store: &Mutex<Store>) -> std::sync::MutexGuard<'_, Store> {
    // A panic while holding the lock cannot leave the maps half-updated in a way
    // that breaks their invariants (each mutation is a single insert/remove).
    store.lock().unwrap_or_else(|p| p.into_inner())
}

/// The owner a lost in-memory lease names: this process, and the run's
/// generation.
fn owner(generation: u64) -> String {
    format!("process {}, run {generation}", std::process::id())
}

impl Store {
    /// Whether a write of the run with lease `fence` on `thread` may proceed
    /// (always, without a fence).
    fn check_fence(&self, thread: &str, fence: Option<u64>) -> Result<(), CheckpointError> {
        let Some(generation) = fence else {
            return Ok(());
        };
        match self.leases.get(thread) {
            Some(&held) if held == generation => Ok(()),
            Some(&other) => Err(CheckpointError::LeaseLost {
                thread_id: thread.to_owned(),
                owner: owner(generation),
                reason: format!("another run ({}) holds the thread now", owner(other)),
            }),
            None => Err(CheckpointError::LeaseLost {
                thread_id: thread.to_owned(),
                owner: owner(generation),
                reason: "the run's lease was released (the run was cancelled), or the thread \
                         was deleted or pruned"
                    .to_owned(),
            }),
        }
    }

    /// Refuses to delete checkpoints of a thread a run holds.
    fn check_free(&self, thread: &str) -> Result<(), CheckpointError> {
        if self.leases.contains_key(thread) {
            return Err(CheckpointError::ThreadBusy {
                thread_id: thread.to_owned(),
            });
        }
        Ok(())
    }

    fn namespace(&self, thread: &str, ns: &str) -> Option<&Namespace> {
        self.threads.get(thread)?.get(ns)
    }

    /// The namespace's entry, created on first use (its keys are copied only then).
    fn namespace_mut(&mut self, thread: &str, ns: &str) -> &mut Namespace {
        self.threads.entry_ref(thread).or_default().get_mut(ns)
    }
}

impl Namespace {
    fn tuple(
        &self,
        thread: &str,
        ns: &str,
        id: &str,
        stored: &Stored,
    ) -> Result<CheckpointTuple, CheckpointError> {
        let mut checkpoint = stored.checkpoint(id);
        let mut values = Vec::with_capacity(checkpoint.channel_versions.len());
        for (channel, version) in &checkpoint.channel_versions {
            match self.blobs.get(&(channel.as_str(), version.as_str())) {
                Some(Some(blob)) => values.push((channel.clone(), blob.clone())),
                // The channel was empty at that version.
                Some(None) => {}
                None => {
                    return Err(CheckpointError::Corrupt {
                        thread_id: thread.to_owned(),
                        checkpoint_id: id.to_owned(),
                        what: format!("the value of channel `{channel}`"),
                        source: format!(
                            "the checkpoint names version `{version}` of it, and no value was \
                             stored for that version (in namespace `{ns}`): a put named the \
                             version in channel_versions without listing it in new_versions"
                        )
                        .into(),
                    })
                }
            }
        }
        // In `channel_versions`' order: sorted by channel.
        checkpoint.channel_values = NameMap::from_sorted(values);
        let pending_writes = self
            .writes
            .get(id)
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
        let parent_config = stored.parent_id.as_deref().map(|p| config.at(p));
        Ok(CheckpointTuple {
            config,
            checkpoint,
            metadata: stored.metadata.clone(),
            parent_config,
            pending_writes,
        })
    }
}

impl Checkpointer for InMemorySaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        Box::pin(async move {
            let store = self.lock();
            let Some(namespace) = store.namespace(&config.thread_id, &config.checkpoint_ns) else {
                return Ok(None);
            };
            let found = match &config.checkpoint_id {
                Some(id) => namespace.checkpoints.get(id),
                None => namespace.checkpoints.latest(),
            };
            found
                .map(|(id, stored)| {
                    namespace.tuple(&config.thread_id, &config.checkpoint_ns, id, stored)
                })
                .transpose()
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
            let mut add =
                |thread: &str, ns: &str, namespace: &Namespace| -> Result<(), CheckpointError> {
                    for (id, stored) in namespace.checkpoints.iter().rev() {
                        if let Some(want) = config.and_then(|c| c.checkpoint_id.as_ref()) {
                            if want != id {
                                continue;
                            }
                        }
                        if options.before.as_deref().is_some_and(|b| id >= b) {
                            continue;
                        }
                        if !metadata_matches(&stored.metadata, &options.filter) {
                            continue;
                        }
                        out.push(namespace.tuple(thread, ns, id, stored)?);
                    }
                    Ok(())
                };
            match config {
                // A config always names a namespace; "" is the root's.
                Some(c) => {
                    if let Some(namespace) = store.namespace(&c.thread_id, &c.checkpoint_ns) {
                        add(&c.thread_id, &c.checkpoint_ns, namespace)?;
                    }
                }
                None => {
                    for (thread, namespaces) in &store.threads {
                        for (ns, namespace) in namespaces.iter() {
                            add(thread, ns, namespace)?;
                        }
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
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(std::future::ready(self.put_fenced(
            config,
            checkpoint,
            metadata,
            new_versions,
            None,
        )))
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(std::future::ready(
            self.put_writes_fenced(config, writes, task_id, None),
        ))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            let mut store = self.lock();
            store.check_free(thread_id)?;
            let removed = store.threads.remove(thread_id);
            drop(store);
            // Freed outside the lock.
            drop(removed);
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
            store.check_free(thread_id)?;
            let Some(namespaces) = store.threads.get_mut(thread_id) else {
                retention.select(std::iter::empty())?;
                return Ok(0);
            };
            let doomed: Vec<(String, String)> = retention
                .select(namespaces.iter().flat_map(|(ns, namespace)| {
                    namespace
                        .checkpoints
                        .iter()
                        .map(move |(id, s)| (ns, id, s.created_at()))
                }))?
                .into_iter()
                .map(|(ns, id)| (ns.to_owned(), id.to_owned()))
                .collect();
            let count = doomed.len() as u64;
            if !doomed.is_empty() {
                let doomed: HashSet<(&str, &str)> = doomed
                    .iter()
                    .map(|(ns, id)| (ns.as_str(), id.as_str()))
                    .collect();
                for (ns, namespace) in namespaces.iter_mut() {
                    let Namespace {
                        checkpoints,
                        blobs,
                        writes,
                    } = namespace;
                    checkpoints
                        .0
                        .retain(|(id, _)| !doomed.contains(&(ns, &**id)));
                    writes.retain(|id, _| !doomed.contains(&(ns, id.as_str())));
                    // Keep the blobs a remaining checkpoint of the namespace refers to.
                    let referenced: HashSet<(&str, &str)> = checkpoints
                        .iter()
                        .flat_map(|(_, s)| {
                            s.channel_versions
                                .iter()
                                .map(|(c, v)| (c.as_str(), v.as_str()))
                        })
                        .collect();
                    blobs.retain(|k, _| {
                        referenced.contains(&(k.channel.as_str(), k.version.as_str()))
                    });
                }
            }
            Ok(count)
        })
    }

    /// Holds the thread for the run: a second run of it (through another graph
    /// sharing this saver) fails with [`CheckpointError::ThreadBusy`], and so do
    /// `delete_thread` and `prune` of it. The run writes through a view that
    /// checks it still holds the thread: after the run was cancelled (its
    /// future dropped; a checkpoint it was storing in the background may still
    /// arrive) or the thread given to a newer run, its writes fail with
    /// [`CheckpointError::LeaseLost`] instead of landing beside the newer run's.
    fn begin_run<'a>(
        &'a self,
        thread_id: &'a str,
        _checkpoint_ns: &'a str,
    ) -> BoxFuture<'a, Result<super::RunGuard, CheckpointError>> {
        Box::pin(std::future::ready(self.lease(thread_id)))
    }
}

impl InMemorySaver {
    fn lease(&self, thread_id: &str) -> Result<super::RunGuard, CheckpointError> {
        // One copy of the id, shared by the map and the lease.
        let key: Arc<str> = Arc::from(thread_id);
        let mut store = self.lock();
        let generation = store.generation + 1;
        match store.leases.entry(Arc::clone(&key)) {
            hashbrown::hash_map::Entry::Occupied(_) => {
                return Err(CheckpointError::ThreadBusy {
                    thread_id: thread_id.to_owned(),
                })
            }
            hashbrown::hash_map::Entry::Vacant(entry) => {
                entry.insert(generation);
            }
        }
        store.generation = generation;
        drop(store);
        let held = Lease {
            store: Arc::downgrade(&self.store),
            thread_id: key,
            generation,
        };
        let writer = Arc::new(LeasedWriter {
            saver: InMemorySaver {
                store: Arc::clone(&self.store),
            },
            generation,
        });
        // Released when the run ends, or when the guard is dropped unreleased.
        Ok(super::RunGuard::new(move || async move { drop(held) }).with_writer(writer))
    }
}

/// A run's hold on a thread of an [`InMemorySaver`]; released on drop.
struct Lease {
    store: Weak<Mutex<Store>>,
    thread_id: Arc<str>,
    generation: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(store) = self.store.upgrade() {
            let mut store = lock(&store);
            if let hashbrown::hash_map::EntryRef::Occupied(entry) =
                store.leases.entry_ref(&*self.thread_id)
            {
                if *entry.get() == self.generation {
                    entry.remove();
                }
            }
        }
    }
}

/// The saver as a run that holds a thread sees it: writes fenced by the run's
/// lease generation.
struct LeasedWriter {
    saver: InMemorySaver,
    generation: u64,
}

impl Checkpointer for LeasedWriter {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        self.saver.get_tuple(config)
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        self.saver.list(config, options)
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(std::future::ready(self.saver.put_fenced(
            config,
            checkpoint,
            metadata,
            new_versions,
            Some(self.generation),
        )))
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(std::future::ready(self.saver.put_writes_fenced(
            config,
            writes,
            task_id,
            Some(self.generation),
        )))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.saver.delete_thread(thread_id)
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        self.saver.prune(thread_id, retention)
    }
}
