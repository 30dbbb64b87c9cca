//! [`InMemorySaver`]: checkpoints in process memory, with LangGraph's blob layout.

use super::appended::{join_items, push_items};
use super::packed::{self, Packed};
use super::{
    metadata_matches, write_index, Append, Blob, ChannelVersion, ChannelVersions, Checkpoint,
    CheckpointConfig, CheckpointError, CheckpointMetadata, CheckpointTuple, Checkpointer,
    ListOptions, NameMap, PendingWrite, Retention, SharedStr, SPECIAL_WRITES,
};
use futures::future::BoxFuture;
use hashbrown::{Equivalent, HashMap, HashSet};
use serde_json::value::RawValue;
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

/// A checkpoint's pending write rows, in insertion order.
///
/// A row is found by task and index: by a scan while there are few (most
/// checkpoints have a row or two), through a table of positions once there
/// are more. (A step of many tasks, or an entrypoint's many task calls, puts
/// a row set per task against one checkpoint: scanning every earlier row at
/// each put would cost the square of their number.)
#[derive(Default)]
struct Rows {
    list: Vec<WriteRow>,
    /// Positions in `list` by (task id, index); built at `INDEXED_FROM` rows.
    index: hashbrown::HashTable<usize>,
}

/// Rows from which [`Rows`] keeps its table of positions.
const INDEXED_FROM: usize = 16;

/// The hash of a row's key (fixed seed: it only spreads positions in one
/// checkpoint's table).
fn row_hash(task_id: &str, idx: i64) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one((task_id, idx))
}

impl Rows {
    /// The position of task `task_id`'s row `idx`.
    fn find(&mut self, task_id: &str, idx: i64) -> Option<usize> {
        if self.list.len() < INDEXED_FROM {
            return self
                .list
                .iter()
                .position(|r| r.idx == idx && r.task_id == task_id);
        }
        // Rows pushed before the table was needed are added now.
        for at in self.index.len()..self.list.len() {
            let row = &self.list[at];
            let hash = row_hash(&row.task_id, row.idx);
            let list = &self.list;
            self.index
                .insert_unique(hash, at, |&i| row_hash(&list[i].task_id, list[i].idx));
        }
        let list = &self.list;
        self.index
            .find(row_hash(task_id, idx), |&i| {
                list[i].idx == idx && list[i].task_id == task_id
            })
            .copied()
    }

    fn push(&mut self, row: WriteRow) {
        self.list.push(row);
    }
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

/// A stored version of a channel's value.
enum Value {
    /// The whole value (`None`: the channel was empty).
    Whole(Option<Packed>),
    /// The version appends to an earlier one. Boxed: most stored values are
    /// whole, and every entry of the blob table is as large as its largest
    /// variant.
    Appended(Box<Delta>),
}

/// A version stored as what it appended: the first `keep` items of version
/// `base`, then `items` (a JSON array).
struct Delta {
    base: ChannelVersion,
    keep: usize,
    items: Packed,
    /// The bytes of `items` along the chain back to the nearest whole
    /// value, and that value's bytes (as JSON text, before any
    /// compression): when the first passes the second,
    /// the next version is stored whole (so whole copies, each at least
    /// twice the previous, add up to at most twice the last one).
    chain_bytes: usize,
    whole_bytes: usize,
}

impl Value {
    fn bytes(&self) -> usize {
        match self {
            Value::Whole(value) => value.as_ref().map_or(0, Packed::bytes),
            Value::Appended(delta) => delta.items.bytes(),
        }
    }
}

/// The newest value of a list channel that grows by appends, kept whole so
/// that the next append extends it in place and reading the thread's latest
/// checkpoint assembles nothing.
struct Head {
    version: ChannelVersion,
    value: Blob,
    /// The number of items in `value`.
    items: usize,
}

/// The items of a JSON array, as the text of each.
fn array_items<'a>(text: &'a str, what: &str) -> Result<Vec<&'a RawValue>, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not a JSON array: {e}"))
}

/// What one namespace of one thread holds.
#[derive(Default)]
struct Namespace {
    checkpoints: Checkpoints,
    /// (channel, version) → value.
    blobs: HashMap<BlobKey, Value>,
    /// Channel → its newest appended value, whole.
    heads: HashMap<SharedStr, Head>,
    /// Checkpoint id → its pending writes, in insertion order.
    writes: HashMap<String, Rows>,
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
/// A value of 4 KiB or more is kept LZ4-compressed when that saves at least an
/// eighth of it (see [`with_compression`](Self::with_compression)): reads
/// return the same JSON text either way.
///
/// ```
/// use stategraph::checkpoint::InMemorySaver;
/// let saver = InMemorySaver::new();
/// # let _ = saver;
/// ```
pub struct InMemorySaver {
    store: Arc<Mutex<Store>>,
    /// Values of at least this many bytes are kept compressed (`None`: none).
    compress_from: Option<usize>,
}

impl Default for InMemorySaver {
    fn default() -> Self {
        InMemorySaver {
            store: Arc::default(),
            compress_from: Some(packed::DEFAULT_MIN_BYTES),
        }
    }
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

    /// The saver, keeping each stored value of at least `min_bytes` of JSON
    /// compressed with LZ4 (when that saves at least an eighth of it), or
    /// every value as plain JSON text with `None`. The default is
    /// `Some(4096)`. Compressing costs time when a value is written and read;
    /// it saves the memory the value would hold (and, in a process that keeps
    /// many large checkpoints, the time the kernel takes to hand that memory
    /// over).
    ///
    /// ```
    /// use stategraph::checkpoint::InMemorySaver;
    ///
    /// let plain = InMemorySaver::new().with_compression(None);
    /// let eager = InMemorySaver::new().with_compression(Some(1024));
    /// # let _ = (plain, eager);
    /// ```
    pub fn with_compression(mut self, min_bytes: Option<usize>) -> Self {
        self.compress_from = min_bytes;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        lock(&self.store)
    }

    /// The bytes of the values it holds, over every thread: the stored
    /// channel values (compressed, for those kept compressed) and pending
    /// writes, as serialised (the bookkeeping around them, ids, versions and
    /// metadata, is not counted).
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
                let blobs: usize = n.blobs.values().map(Value::bytes).sum();
                let heads: usize = n.heads.values().map(|h| h.value.as_str().len()).sum();
                let writes: usize = n
                    .writes
                    .values()
                    .flat_map(|rows| &rows.list)
                    .map(|w| w.value.as_str().len())
                    .sum();
                blobs + heads + writes
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
        appends: NameMap<Append>,
        fence: Option<u64>,
    ) -> Result<CheckpointConfig, CheckpointError> {
        {
            // Compressed before the lock is taken: other threads' runs do not
            // wait on it.
            let min = self.compress_from;
            let packed: Vec<(SharedStr, Packed)> = std::mem::take(&mut checkpoint.channel_values)
                .into_iter()
                .map(|(channel, blob)| (channel, Packed::new(blob, min)))
                .collect();
            let mut values = packed.into_iter().peekable();
            let appends: Vec<(SharedStr, Append, Packed)> = appends
                .into_iter()
                .map(|(channel, append)| {
                    let items = Packed::new(append.items.clone(), min);
                    (channel, append, items)
                })
                .collect();
            let id = std::mem::take(&mut checkpoint.id);
            // Built before the lock is taken: other threads' runs do not wait on it.
            let stored = Stored::new(checkpoint, metadata, config.checkpoint_id.as_deref());
            let mut store = self.lock();
            store.check_fence(&config.thread_id, fence)?;
            let namespace = store.namespace_mut(&config.thread_id, &config.checkpoint_ns);
            // Room for every new value at once: a new thread's table is sized
            // once, not grown (and rehashed) insert by insert.
            namespace.blobs.reserve(new_versions.len());
            let mut appends = appends.into_iter().peekable();
            for (channel, version) in new_versions {
                // The maps are sorted by channel: `channel`'s value, if any, is next.
                while appends.next_if(|(c, _, _)| *c < channel).is_some() {}
                if let Some((_, append, items)) = appends.next_if(|(c, _, _)| *c == channel) {
                    let value = namespace
                        .append(&channel, &version, append, items)
                        .map_err(|why| corrupt(&config.thread_id, &id, &channel, why))?;
                    namespace.blobs.insert(BlobKey { channel, version }, value);
                    continue;
                }
                while values.next_if(|(c, _)| *c < channel).is_some() {}
                let blob = values
                    .next_if(|(c, _)| *c == channel)
                    .map(|(_, value)| value);
                namespace.heads.remove(channel.as_str());
                namespace
                    .blobs
                    .insert(BlobKey { channel, version }, Value::Whole(blob));
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
            if rows.list.is_empty() {
                rows.list.reserve_exact(writes.len());
            }
            for (position, (channel, value)) in writes.into_iter().enumerate() {
                let idx = write_index(&channel, position);
                let special = SPECIAL_WRITES.iter().any(|(c, _)| *c == channel);
                match rows.find(task_id, idx) {
                    Some(at) if special => {
                        let row = &mut rows.list[at];
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

/// The error of a stored value that cannot be assembled.
fn corrupt(thread: &str, id: &str, channel: &str, why: String) -> CheckpointError {
    CheckpointError::Corrupt {
        thread_id: thread.to_owned(),
        checkpoint_id: id.to_owned(),
        what: format!("the value of channel `{channel}`"),
        source: why.into(),
    }
}

impl Namespace {
    /// The whole value of `channel` at `version` (which must hold one).
    fn resolve(&self, channel: &str, version: &str) -> Result<Blob, String> {
        if let Some(head) = self.heads.get(channel)
            && head.version.as_str() == version
        {
            return Ok(head.value.clone());
        }
        // The chain of appends back to a whole value, newest first.
        let mut chain: Vec<(usize, &Packed)> = Vec::new();
        let mut at = version;
        let whole = loop {
            match self.blobs.get(&(channel, at)) {
                Some(Value::Whole(Some(value))) => break value.blob()?,
                Some(Value::Whole(None)) => {
                    return Err(format!(
                        "version `{at}` is empty, and a later one appends to it"
                    ))
                }
                Some(Value::Appended(delta)) => {
                    chain.push((delta.keep, &delta.items));
                    at = &delta.base;
                }
                None => {
                    return Err(format!(
                        "version `{at}`, which a later version appends to, is not stored"
                    ))
                }
            }
        };
        // The appended items' texts, oldest first (decompressed when kept
        // compressed), held while `items` borrows from them.
        let appended: Vec<(usize, Blob)> = chain
            .into_iter()
            .rev()
            .map(|(keep, items)| items.blob().map(|blob| (keep, blob)))
            .collect::<Result<_, _>>()?;
        let mut items = array_items(whole.as_str(), "a stored value")?;
        let mut bytes = whole.as_str().len();
        for (keep, more) in &appended {
            let keep = *keep;
            if keep > items.len() {
                return Err(format!(
                    "an append keeps {keep} items of a value that has {}",
                    items.len()
                ));
            }
            items.truncate(keep);
            items.extend(array_items(more.as_str(), "appended items")?);
            bytes += more.as_str().len();
        }
        Ok(Blob::from_text(join_items(items, bytes)))
    }

    /// Stores `append` as version `version` of `channel` (its items as
    /// `packed`, the form to keep), and makes it the channel's head: its
    /// value extends the head in place when it appends to it, or the
    /// assembled value of its base otherwise.
    fn append(
        &mut self,
        channel: &SharedStr,
        version: &ChannelVersion,
        append: Append,
        packed: Packed,
    ) -> Result<Value, String> {
        let Append { base, keep, items } = append;
        let new_items = array_items(items.as_str(), "appended items")?.len();
        let (chain_bytes, whole_bytes) = match self.blobs.get(&(channel.as_str(), base.as_str())) {
            Some(Value::Whole(value)) => (0, value.as_ref().map_or(0, Packed::len)),
            Some(Value::Appended(delta)) => (delta.chain_bytes, delta.whole_bytes),
            None => {
                return Err(format!(
                    "version `{base}`, which a put appends to, is not stored"
                ))
            }
        };
        let mut head = match self.heads.remove(channel.as_str()) {
            Some(head) if head.version == base => head,
            _ => {
                let value = self.resolve(channel, &base)?;
                let items = array_items(value.as_str(), "a stored value")?.len();
                Head {
                    version: base.clone(),
                    value,
                    items,
                }
            }
        };
        if keep > head.items {
            return Err(format!(
                "a put keeps {keep} items of version `{base}`, which has {}",
                head.items
            ));
        }
        if keep < head.items {
            let text = {
                let mut kept = array_items(head.value.as_str(), "a stored value")?;
                kept.truncate(keep);
                join_items(kept, head.value.as_str().len())
            };
            head.value = Blob::from_text(text);
        }
        // In place when no reader holds the head (the usual case).
        head.value
            .edit(|text| push_items(text, keep, items.as_str()));
        head.items = keep + new_items;
        head.version = version.clone();
        let chain_bytes = chain_bytes + items.as_str().len();
        let value = if chain_bytes > whole_bytes {
            // Shared with the head, which is kept plain.
            Value::Whole(Some(Packed::Plain(head.value.clone())))
        } else {
            Value::Appended(Box::new(Delta {
                base,
                keep,
                items: packed,
                chain_bytes,
                whole_bytes,
            }))
        };
        self.heads.insert(channel.clone(), head);
        Ok(value)
    }

    /// Drops the values no remaining checkpoint refers to; a kept value that
    /// appends to a dropped one is stored whole first. On error, the channel.
    /// Values stored whole again are compressed from `compress_from` bytes.
    fn keep_referenced(&mut self, compress_from: Option<usize>) -> Result<(), (String, String)> {
        let referenced: HashSet<(SharedStr, ChannelVersion)> = self
            .checkpoints
            .iter()
            .flat_map(|(_, s)| s.channel_versions.iter().cloned())
            .collect();
        let is_referenced =
            |c: &SharedStr, v: &ChannelVersion| referenced.contains(&(c.clone(), v.clone()));
        // Kept appends whose chain reaches a dropped version.
        let mut rewrite = Vec::new();
        for (key, value) in &self.blobs {
            if !is_referenced(&key.channel, &key.version) {
                continue;
            }
            let mut at = value;
            while let Value::Appended(delta) = at {
                let base = &delta.base;
                if !is_referenced(&key.channel, base) {
                    rewrite.push((key.channel.clone(), key.version.clone()));
                    break;
                }
                match self.blobs.get(&(key.channel.as_str(), base.as_str())) {
                    Some(next) => at = next,
                    None => break,
                }
            }
        }
        for (channel, version) in rewrite {
            let whole = self
                .resolve(&channel, &version)
                .map_err(|why| (channel.to_string(), why))?;
            self.blobs.insert(
                BlobKey { channel, version },
                Value::Whole(Some(Packed::new(whole, compress_from))),
            );
        }
        self.blobs
            .retain(|k, _| is_referenced(&k.channel, &k.version));
        self.heads.retain(|c, head| is_referenced(c, &head.version));
        Ok(())
    }

    fn tuple(
        &self,
        thread: &SharedStr,
        ns: &SharedStr,
        id: &str,
        stored: &Stored,
    ) -> Result<CheckpointTuple, CheckpointError> {
        let mut checkpoint = stored.checkpoint(id);
        let mut values = Vec::with_capacity(checkpoint.channel_versions.len());
        for (channel, version) in &checkpoint.channel_versions {
            match self.blobs.get(&(channel.as_str(), version.as_str())) {
                Some(Value::Whole(Some(value))) => {
                    let blob = value
                        .blob()
                        .map_err(|why| corrupt(thread, id, channel, why))?;
                    values.push((channel.clone(), blob));
                }
                // The channel was empty at that version.
                Some(Value::Whole(None)) => {}
                Some(Value::Appended(_)) => {
                    let blob = self
                        .resolve(channel, version)
                        .map_err(|why| corrupt(thread, id, channel, why))?;
                    values.push((channel.clone(), blob));
                }
                None => {
                    return Err(CheckpointError::Corrupt {
                        thread_id: thread.to_string(),
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
                rows.list
                    .iter()
                    .map(|r| PendingWrite {
                        task_id: r.task_id.clone(),
                        channel: r.channel.clone(),
                        value: r.value.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let config = CheckpointConfig {
            thread_id: thread.clone(),
            checkpoint_ns: ns.clone(),
            checkpoint_id: Some(id.into()),
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
            // The matching checkpoints, found before any is read: only those
            // within `limit` have their values assembled.
            let namespaces: Vec<(SharedStr, SharedStr, &Namespace)> = match config {
                // A config always names a namespace; "" is the root's.
                Some(c) => store
                    .namespace(&c.thread_id, &c.checkpoint_ns)
                    .map(|n| (c.thread_id.clone(), c.checkpoint_ns.clone(), n))
                    .into_iter()
                    .collect(),
                None => store
                    .threads
                    .iter()
                    .flat_map(|(t, namespaces)| {
                        let t = SharedStr::from(t.as_str());
                        namespaces
                            .iter()
                            .map(move |(ns, n)| (t.clone(), SharedStr::from(ns), n))
                    })
                    .collect(),
            };
            let mut found: Vec<(&SharedStr, &SharedStr, &Namespace, &str, &Stored)> = Vec::new();
            for (thread, ns, namespace) in &namespaces {
                for (id, stored) in namespace.checkpoints.iter().rev() {
                    if let Some(want) = config.and_then(|c| c.checkpoint_id.as_ref())
                        && want != id
                    {
                        continue;
                    }
                    if options.before.as_deref().is_some_and(|b| id >= b) {
                        continue;
                    }
                    if !metadata_matches(&stored.metadata, &options.filter) {
                        continue;
                    }
                    found.push((thread, ns, namespace, id, stored));
                }
            }
            found.sort_by(|a, b| b.3.cmp(a.3));
            if let Some(limit) = options.limit {
                found.truncate(limit);
            }
            let out = found
                .into_iter()
                .map(|(thread, ns, namespace, id, stored)| namespace.tuple(thread, ns, id, stored))
                .collect::<Result<Vec<_>, _>>()?;
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
            NameMap::new(),
            None,
        )))
    }

    /// `true`: a list channel that grew is stored as its appended items (the
    /// value it extends is kept whole again once the appended bytes pass its
    /// size, so a thread's stored bytes grow linearly with what it appends).
    fn stores_appends(&self) -> bool {
        true
    }

    fn put_appending<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(std::future::ready(self.put_fenced(
            config,
            checkpoint,
            metadata,
            new_versions,
            appends,
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
                    namespace
                        .checkpoints
                        .0
                        .retain(|(id, _)| !doomed.contains(&(ns, &**id)));
                    namespace
                        .writes
                        .retain(|id, _| !doomed.contains(&(ns, id.as_str())));
                    namespace
                        .keep_referenced(self.compress_from)
                        .map_err(|(channel, why)| corrupt(thread_id, "", &channel, why))?;
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
                compress_from: self.compress_from,
            },
            generation,
        });
        // Released when the run ends, or when the guard is dropped unreleased.
        Ok(super::RunGuard::dropping(held).with_writer(writer))
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
                && *entry.get() == self.generation
            {
                entry.remove();
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
            NameMap::new(),
            Some(self.generation),
        )))
    }

    fn stores_appends(&self) -> bool {
        true
    }

    fn put_appending<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        Box::pin(std::future::ready(self.saver.put_fenced(
            config,
            checkpoint,
            metadata,
            new_versions,
            appends,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::CheckpointSource;

    fn metadata(step: i64) -> CheckpointMetadata {
        CheckpointMetadata {
            source: CheckpointSource::Loop,
            step,
            parents: Default::default(),
            extra: Default::default(),
        }
    }

    fn checkpoint(id: &str, version: &str, value: Option<&str>) -> Checkpoint {
        Checkpoint {
            v: 4,
            id: id.to_owned(),
            ts: "2026-12-02T00:00:00+00:00".to_owned(),
            channel_values: value
                .map(|v| (SharedStr::from("log"), Blob::from_json(v).unwrap()))
                .into_iter()
                .collect(),
            channel_versions: [(SharedStr::from("log"), SharedStr::from(version))]
                .into_iter()
                .collect(),
            versions_seen: NameMap::new(),
            updated_channels: None,
        }
    }

    fn new_version(version: &str) -> ChannelVersions {
        [(SharedStr::from("log"), SharedStr::from(version))]
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

    #[tokio::test]
    async fn many_tasks_writes_to_one_checkpoint_keep_their_first_value_and_order() {
        let saver = InMemorySaver::new();
        put(&saver, 1, None, "[1]").await;
        let at = CheckpointConfig::thread("t").at("001");
        let one = |v: usize| Blob::from_json(v.to_string()).unwrap();
        // Past the point where the rows are found through their table.
        let tasks = 3 * INDEXED_FROM;
        for t in 0..tasks {
            let writes = vec![("a".to_owned(), one(t)), ("b".to_owned(), one(t + 1000))];
            saver
                .put_writes(&at, writes, &format!("task-{t}"))
                .await
                .unwrap();
        }
        // A repeated row is ignored; a special one (an error) is replaced.
        let again = vec![("a".to_owned(), one(9999))];
        saver.put_writes(&at, again, "task-40").await.unwrap();
        for v in [7, 8] {
            let error = vec![("__error__".to_owned(), one(v))];
            saver.put_writes(&at, error, "task-41").await.unwrap();
        }
        let tuple = saver.get_tuple(&at).await.unwrap().unwrap();
        let got: Vec<(String, String, String)> = tuple
            .pending_writes
            .iter()
            .map(|w| {
                (
                    w.task_id.clone(),
                    w.channel.clone(),
                    w.value.as_str().to_owned(),
                )
            })
            .collect();
        let mut want = Vec::new();
        for t in 0..tasks {
            want.push((format!("task-{t}"), "a".to_owned(), t.to_string()));
            want.push((format!("task-{t}"), "b".to_owned(), (t + 1000).to_string()));
        }
        want.push(("task-41".to_owned(), "__error__".to_owned(), "8".to_owned()));
        assert_eq!(got, want);
    }

    /// Puts checkpoint `n` (ids "001", "002", ...) with version `n` of `log`.
    async fn put(saver: &InMemorySaver, n: u32, appends: Option<(usize, &str)>, whole: &str) {
        let config = CheckpointConfig::thread("t");
        let config = if n > 1 {
            config.at(format!("{:03}", n - 1))
        } else {
            config
        };
        let (id, version) = (format!("{n:03}"), format!("{n:03}"));
        match appends {
            Some((keep, items)) => {
                let base = format!("{:03}", n - 1);
                saver
                    .put_appending(
                        &config,
                        checkpoint(&id, &version, None),
                        metadata(n.into()),
                        new_version(&version),
                        append(&base, keep, items),
                    )
                    .await
                    .unwrap();
            }
            None => {
                saver
                    .put(
                        &config,
                        checkpoint(&id, &version, Some(whole)),
                        metadata(n.into()),
                        new_version(&version),
                    )
                    .await
                    .unwrap();
            }
        };
    }

    async fn value_at(saver: &InMemorySaver, n: u32) -> serde_json::Value {
        let config = CheckpointConfig::thread("t").at(format!("{n:03}"));
        let tuple = saver.get_tuple(&config).await.unwrap().unwrap();
        tuple.checkpoint.channel_values["log"].decode().unwrap()
    }

    // How appended values read back, prune and refuse bad appends is in the
    // conformance suite (`conformance::run_appends`, tests/conformance_memory.rs).
    #[tokio::test]
    async fn a_long_chain_of_appends_stores_linear_bytes() {
        let saver = InMemorySaver::new();
        put(&saver, 1, None, r#"["x"]"#).await;
        let item = format!("\"{}\"", "y".repeat(100));
        for n in 2..=200 {
            put(&saver, n, Some((n as usize - 1, &format!("[{item}]"))), "").await;
        }
        let whole = value_at(&saver, 200).await;
        assert_eq!(whole.as_array().map(Vec::len), Some(200));
        // Whole copies double: the stored bytes stay within a few times the
        // last value (the rewrite of every version would be ~100 times it).
        let last = serde_json::to_string(&whole).unwrap().len();
        assert!(
            saver.stored_bytes() < 5 * last,
            "{} bytes stored for a value of {last}",
            saver.stored_bytes()
        );
    }
}
