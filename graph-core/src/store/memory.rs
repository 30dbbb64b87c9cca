//! [`InMemoryStore`]: the store in a map, for tests, examples and programs
//! whose memory need not outlive them.

use super::embed::{Embedding, IndexConfig};
use super::fields::Texts;
use super::item::{Item, SearchItem};
use super::items::{NamespaceFull, Slot};
use super::namespace::Namespace;
use super::op::{GetOp, ListNamespacesOp, Op, OpResult, PutIndex, PutOp, SearchOp, Ttl};
use super::ttl::{TtlConfig, TtlSweeper};
use super::{Store, StoreConfig, StoreError};
use futures::future::BoxFuture;
use hashbrown::HashMap;
use serde_json::{Map, Value};
use smallvec::SmallVec;
use std::cmp::Ordering as CmpOrdering;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A [`Store`] in memory (LangGraph's `InMemoryStore`), with semantic search
/// when given an [`IndexConfig`] and expiry ([`TtlConfig`]). Clones share the
/// same items. Everything is lost when the process ends.
///
/// Searches scan the items under the prefix (a query search computes the
/// cosine similarity of every embedded text), which is fast for the tens of
/// thousands of items a process keeps in memory.
///
/// ```
/// use graph_core::store::{HashEmbeddings, IndexConfig, InMemoryStore, Namespace, SearchOp, Store, StoreConfig};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), graph_core::store::StoreError> {
/// let index = IndexConfig::new(64, HashEmbeddings::new(64)).fields(["text"])?;
/// let store = InMemoryStore::with_config(StoreConfig::new().index(index));
/// let ns = Namespace::new(["memories", "alice"])?;
/// store.put(&ns, "diet", json!({"text": "alice is vegetarian"})).await?;
/// store.put(&ns, "pet", json!({"text": "alice has a cat"})).await?;
///
/// let found = store.search(SearchOp::new(ns).query("is alice vegetarian?").limit(1)).await?;
/// assert_eq!(found[0].key, "diet");
/// assert!(found[0].score.unwrap() > 0.5);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct InMemoryStore {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    config: StoreConfig,
    data: RwLock<Data>,
}

/// One namespace's items (see [`items::Items`](super::items::Items) for
/// their layout).
type Items = super::items::Items<Entry>;

#[derive(Default)]
struct Data {
    namespaces: BTreeMap<Namespace, Items>,
    /// Orders writes: the most recently updated item has the highest `seq`.
    seq: u64,
}

/// One item. Kept compact (112 bytes): a put writes one into memory the
/// process has not touched yet (with `SystemTime`s, an `Option<Duration>`
/// and a hash of each vector's text it took 144 bytes).
struct Entry {
    value: Map<String, Value>,
    created_at: Stamp,
    updated_at: Stamp,
    seq: u64,
    /// The item's time to live in nanoseconds; `NEVER` when it has none.
    ttl: u64,
    /// Nanoseconds since the epoch; `NEVER` when the item does not expire.
    /// Atomic so that a read under the shared lock can restart it.
    expires_at: AtomicU64,
    /// Inline for an item with one embedded text (no list allocation).
    vectors: Vectors,
}

/// A point in time as nanoseconds since the epoch (negative before it),
/// which holds every `SystemTime` from 1678 to 2262 exactly; later or
/// earlier ones are kept as the nearest it holds.
#[derive(Clone, Copy)]
struct Stamp(i64);

impl Stamp {
    fn of(t: SystemTime) -> Self {
        let saturate = |n: u128| i64::try_from(n).unwrap_or(i64::MAX);
        Stamp(match t.duration_since(UNIX_EPOCH) {
            Ok(after) => saturate(after.as_nanos()),
            Err(before) => -saturate(before.duration().as_nanos()),
        })
    }

    fn time(self) -> SystemTime {
        let n = Duration::from_nanos(self.0.unsigned_abs());
        if self.0 >= 0 {
            UNIX_EPOCH + n
        } else {
            UNIX_EPOCH - n
        }
    }
}

/// An item's vectors.
type Vectors = SmallVec<[Vector; 1]>;

struct Vector {
    /// The field name (shared with the index's path when the path yields
    /// one text).
    field: Arc<str>,
    values: Embedding,
    /// The vector's length (L2 norm) as `f32` bits, worked out by the first
    /// search that scores the vector ([`UNKNOWN_NORM`] until then): a put
    /// does not read the model's vector, and a search reads it anyway.
    norm: AtomicU32,
}

/// A norm not worked out yet (a NaN that `sqrt` does not produce; if it
/// did, the norm would only be worked out again).
const UNKNOWN_NORM: u32 = u32::MAX;

impl Vector {
    fn norm(&self) -> f32 {
        match self.norm.load(Ordering::Relaxed) {
            UNKNOWN_NORM => {
                let n = norm(&self.values);
                self.norm.store(n.to_bits(), Ordering::Relaxed);
                n
            }
            bits => f32::from_bits(bits),
        }
    }
}

const NEVER: u64 = u64::MAX;

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(NEVER - 1))
}

fn expiry(ttl: Option<Duration>, now: SystemTime) -> u64 {
    TtlConfig::expires_at(ttl, now).map_or(NEVER, nanos)
}

/// A time to live as [`Entry::ttl`] keeps it (one of over 584 years is
/// kept as 584 years).
fn ttl_nanos(ttl: Option<Duration>) -> u64 {
    ttl.map_or(NEVER, |t| u64::try_from(t.as_nanos()).unwrap_or(NEVER - 1))
}

impl Entry {
    /// A put's item, written `now` as the store's `seq`-th write.
    fn new(
        value: Map<String, Value>,
        vectors: Vectors,
        ttl: Option<Duration>,
        seq: u64,
        now: SystemTime,
    ) -> Self {
        let stamp = Stamp::of(now);
        Entry {
            value,
            created_at: stamp,
            updated_at: stamp,
            seq,
            ttl: ttl_nanos(ttl),
            expires_at: AtomicU64::new(expiry(ttl, now)),
            vectors,
        }
    }

    /// Becomes `entry`, a put of the same key `now`. An update keeps the
    /// creation time of an item still alive (and its allocation).
    fn replace(&mut self, entry: Entry, now: SystemTime) {
        let created_at = if self.expired(nanos(now)) {
            Stamp::of(now)
        } else {
            self.created_at
        };
        *self = Entry {
            created_at,
            ..entry
        };
    }

    fn expired(&self, now: u64) -> bool {
        self.expires_at.load(Ordering::Relaxed) <= now
    }

    fn refresh(&self, now: SystemTime) {
        if self.ttl != NEVER {
            let ttl = Duration::from_nanos(self.ttl);
            self.expires_at
                .store(expiry(Some(ttl), now), Ordering::Relaxed);
        }
    }

    fn item(&self, namespace: &Namespace, key: &str) -> Item {
        Item {
            namespace: namespace.clone(),
            key: key.to_owned(),
            value: self.value.clone(),
            created_at: self.created_at.time(),
            updated_at: self.updated_at.time(),
        }
    }

    /// The best cosine similarity of `query` to this item's texts.
    fn score(&self, query: &[f32], query_norm: f32) -> Option<f64> {
        let mut best: Option<f32> = None;
        for v in &self.vectors {
            let norm = v.norm();
            let s = if norm == 0.0 || query_norm == 0.0 {
                0.0
            } else {
                dot(query, &v.values) / (norm * query_norm)
            };
            best = Some(best.map_or(s, |b| b.max(s)));
        }
        best.map(f64::from)
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Four accumulators let the compiler vectorise the loop.
    let mut acc = [0f32; 4];
    let (ca, ra) = a.as_chunks::<4>();
    let (cb, rb) = b.as_chunks::<4>();
    for (x, y) in ca.iter().zip(cb) {
        for i in 0..4 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// What a put's texts need, worked out before the model is asked: the
/// vectors it keeps (the item the put replaces has the same text under the
/// same field), and for the other texts, in order, their vector's field
/// (`pending`) and the text (`to_embed`).
struct Plan<'v> {
    kept: Vectors,
    pending: SmallVec<[Arc<str>; 1]>,
    to_embed: Texts<'v>,
}

impl<'v> Plan<'v> {
    fn new(
        index: &IndexConfig,
        stored: Option<&Entry>,
        value: &'v Map<String, Value>,
        put_index: &PutIndex,
    ) -> Self {
        let mut to_embed = Texts::new();
        let mut pending = SmallVec::<[Arc<str>; 1]>::new();
        index.push_texts(value, put_index, &mut to_embed, |field| pending.push(field));
        let mut kept = Vectors::new();
        // Which texts keep a stored vector, in order.
        let mut keeps = SmallVec::<[bool; 1]>::new();
        if let Some(stored) = stored.filter(|s| !s.vectors.is_empty()) {
            // A stored vector under a field was embedded from the text the
            // stored value has there (fields are named by their paths), so
            // the stored value's texts under the same paths say which
            // vectors still fit.
            let mut old_texts = Texts::new();
            let mut old_fields = SmallVec::<[Arc<str>; 1]>::new();
            index.push_texts(&stored.value, put_index, &mut old_texts, |field| {
                old_fields.push(field)
            });
            for (field, text) in pending.iter().zip(&to_embed) {
                let unchanged = old_fields
                    .iter()
                    .zip(&old_texts)
                    .any(|(f, t)| f == field && t == text);
                let same = unchanged
                    .then(|| stored.vectors.iter().find(|v| v.field == *field))
                    .flatten();
                keeps.push(same.is_some());
                if let Some(v) = same {
                    kept.push(Vector {
                        field: Arc::clone(field),
                        values: Arc::clone(&v.values),
                        norm: AtomicU32::new(v.norm.load(Ordering::Relaxed)),
                    });
                }
            }
        }
        // Texts whose vector is kept leave `to_embed` and `pending`.
        if !kept.is_empty() {
            let mut each = keeps.iter();
            to_embed.retain(|_| each.next().is_some_and(|k| !k));
            let mut each = keeps.iter();
            pending.retain(|_| each.next().is_some_and(|k| !k));
        }
        Plan {
            kept,
            pending,
            to_embed,
        }
    }

    /// Whether the put embeds no text at all.
    fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.pending.is_empty()
    }

    /// The item's vectors: the kept ones, and `fresh` (the model's answer
    /// for `to_embed`, in order) for the others.
    fn vectors<F>(self, fresh: F) -> Result<Vectors, StoreError>
    where
        F: IntoIterator<Item = Embedding>,
        F::IntoIter: ExactSizeIterator,
    {
        let mut fresh = fresh.into_iter();
        if fresh.len() != self.pending.len() {
            return Err(StoreError::InvalidInput(format!(
                "{} vectors for {} texts",
                fresh.len(),
                self.pending.len()
            )));
        }
        let Plan {
            kept: mut vectors,
            mut pending,
            to_embed,
        } = self;
        drop(to_embed);
        let new = |(field, values)| Vector {
            field,
            values,
            norm: AtomicU32::new(UNKNOWN_NORM),
        };
        // One new text and none kept (most puts): its vector alone, without
        // the iterators around the lists (26 instructions fewer a put).
        if vectors.is_empty()
            && pending.len() == 1
            && let (Some(field), Some(values)) = (pending.pop(), fresh.next())
        {
            return Ok(smallvec::smallvec![new((field, values))]);
        }
        vectors.extend(pending.into_iter().zip(fresh).map(new));
        Ok(vectors)
    }
}

impl InMemoryStore {
    /// An empty store without semantic search, whose items never expire.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store with semantic search and expiry as `config` says.
    pub fn with_config(config: StoreConfig) -> Self {
        InMemoryStore {
            inner: Arc::new(Inner {
                config,
                data: RwLock::default(),
            }),
        }
    }

    /// [`Store::put`] on the store itself, of the same meaning: stores `value`
    /// (a JSON object) as `key` in `namespace`, indexed as the store's index
    /// says, with the store's default TTL. Called on an `InMemoryStore` (not
    /// through `dyn Store`), a put's future is not boxed, and an owned `key`
    /// is stored as it is, not copied.
    pub async fn put(
        &self,
        namespace: &Namespace,
        key: impl Into<String>,
        value: Value,
    ) -> Result<(), StoreError> {
        let (key, value) = super::op::object_value(namespace, key.into(), value)?;
        let put = Put {
            namespace,
            key,
            value: Some(value),
            index: &PutIndex::StoreFields,
            ttl: Ttl::StoreDefault,
        };
        // `put_one`, written out: the put is done before the future's first
        // poll returns, without a second future to move it into.
        match self.put_at_once(put)? {
            None => Ok(()),
            Some(awaiting) => Box::pin(self.put_awaited(awaiting)).await,
        }
    }

    /// The store's configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// How many items the store holds (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.read().namespaces.values().map(Items::len).sum()
    }

    /// Whether the store holds no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a background task deleting expired items every
    /// [`TtlConfig::sweep_interval`] (5 minutes when unset, as in LangGraph),
    /// until the returned handle is stopped or dropped. Needs a tokio runtime.
    pub fn start_ttl_sweeper(&self) -> TtlSweeper {
        let interval = self
            .inner
            .config
            .ttl
            .sweep_interval
            .unwrap_or(Duration::from_secs(5 * 60));
        TtlSweeper::start(Arc::new(self.clone()), interval)
    }

    fn read(&self) -> RwLockReadGuard<'_, Data> {
        // Nothing below panics between the start and the end of a mutation,
        // so a poisoned lock still guards consistent data.
        self.inner.data.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Data> {
        self.inner.data.write().unwrap_or_else(|e| e.into_inner())
    }

    async fn run_batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        for op in &ops {
            op.validate()?;
        }
        let index = self.inner.config.index.as_ref();
        // Embed the queries, each distinct one once.
        let mut queries: HashMap<&str, (Embedding, f32)> = HashMap::new();
        if let Some(index) = index {
            for op in &ops {
                if let Op::Search(SearchOp { query: Some(q), .. }) = op
                    && !queries.contains_key(q.as_str())
                {
                    let v = index.embed_query(q).await?;
                    let n = norm(&v);
                    queries.insert(q.as_str(), (v, n));
                }
            }
        }
        // The puts that take effect: the last one of each key.
        let mut effective = vec![false; ops.len()];
        if let [Op::Put(_)] = ops.as_slice() {
            effective[0] = true;
        } else {
            let mut last_put: HashMap<(&Namespace, &str), usize> = HashMap::new();
            for (i, op) in ops.iter().enumerate() {
                if let Op::Put(put) = op {
                    last_put.insert((&put.namespace, put.key.as_str()), i);
                }
            }
            for i in last_put.into_values() {
                effective[i] = true;
            }
        }
        let mut vectors = match index {
            Some(index) => self.embed_puts(index, &ops, &effective).await?,
            None => Vec::new(),
        }
        .into_iter();
        let mut next_vectors = vectors.next();

        let now = SystemTime::now();
        if !effective.contains(&true) {
            let data = self.read();
            return self.read_ops(&data, &ops, &queries, now);
        }
        let mut data = self.write();
        let results = self.read_ops(&data, &ops, &queries, now)?;
        drop(queries);
        for (i, op) in ops.into_iter().enumerate() {
            if let (Op::Put(mut put), true) = (op, effective[i]) {
                let v = match next_vectors.take() {
                    Some((at, v)) if at == i => {
                        next_vectors = vectors.next();
                        v
                    }
                    other => {
                        next_vectors = other;
                        Vectors::new()
                    }
                };
                // Only a new key in a full namespace fails here (the puts
                // before it in the batch stay written).
                apply_put(&mut data, Put::of(&mut put), v, &self.inner.config.ttl, now)?;
            }
        }
        Ok(results)
    }

    /// The vectors of every effective put with a value, embedding only the
    /// texts the stored item does not already have under the same field, in
    /// one call to the model.
    async fn embed_puts(
        &self,
        index: &IndexConfig,
        ops: &[Op],
        effective: &[bool],
    ) -> Result<Vec<(usize, Vectors)>, StoreError> {
        let mut plans: Vec<(usize, Plan<'_>)> = Vec::new();
        {
            let data = self.read();
            for (i, op) in ops.iter().enumerate() {
                let Op::Put(PutOp {
                    namespace,
                    key,
                    value: Some(value),
                    index: put_index,
                    ..
                }) = op
                else {
                    continue;
                };
                if !effective[i] {
                    continue;
                }
                let plan = Plan::new(index, stored(&data, namespace, key), value, put_index);
                if !plan.is_empty() {
                    plans.push((i, plan));
                }
            }
        }
        let texts: Vec<&str> = plans
            .iter()
            .flat_map(|(_, plan)| plan.to_embed.iter().map(AsRef::as_ref))
            .collect();
        let mut fresh = index.embed_documents(&texts).await?.into_iter();
        // In op order, one entry per put with texts.
        plans
            .into_iter()
            .map(|(i, plan)| {
                let own: Vec<Embedding> = fresh.by_ref().take(plan.to_embed.len()).collect();
                Ok((i, plan.vectors(own)?))
            })
            .collect()
    }

    /// One put, without the batch around it (no op list, no results): the
    /// same steps as a batch of one. Everything but awaiting a model is done
    /// by [`put_at_once`](Self::put_at_once), outside the future, so that the
    /// future a caller moves about stays small.
    async fn put_one(&self, put: Put<'_>) -> Result<(), StoreError> {
        match self.put_at_once(put)? {
            None => Ok(()),
            Some(awaiting) => Box::pin(self.put_awaited(awaiting)).await,
        }
    }

    /// A put, written unless its texts need a model that must be awaited:
    /// then the put comes back, for [`put_awaited`](Self::put_awaited).
    ///
    /// With a model that answers at once, the whole put is one section under
    /// the write lock and one lookup of the key: the model is asked inside
    /// it, as the SQLite store asks it inside its transaction
    /// ([`Embeddings::embed_documents_sync`] says so).
    ///
    /// [`Embeddings::embed_documents_sync`]: super::Embeddings::embed_documents_sync
    fn put_at_once<'s, 'p>(&'s self, put: Put<'p>) -> Result<Option<Awaiting<'s, 'p>>, StoreError> {
        let config = &self.inner.config;
        let (index, value) = match (&config.index, put.value) {
            (Some(index), Some(value)) => (index, value),
            (_, value) => {
                if value.is_some() {
                    put.namespace.check_addressable()?;
                }
                let put = Put { value, ..put };
                let now = SystemTime::now();
                apply_put(&mut self.write(), put, Vectors::new(), &config.ttl, now)?;
                return Ok(None);
            }
        };
        put.namespace.check_addressable()?;
        let put = Put { value: None, ..put };
        let mut guard = self.write();
        let data = &mut *guard;
        let mut slot = data
            .namespaces
            .get_mut(put.namespace)
            .map(|items| items.slot(put.key.as_str()));
        let stored = match &mut slot {
            Some(Slot::Occupied(item)) => Some(&**item),
            _ => None,
        };
        let plan = Plan::new(index, stored, &value, put.index);
        // One text (most puts) is embedded without a list around its vector.
        let answer = match plan.to_embed.as_slice() {
            [] => Some(Ok(Fresh::None)),
            [text] => index.embed_document_sync(text).map(|r| r.map(Fresh::One)),
            texts => index
                .embed_documents_sync(texts)
                .map(|r| r.map(Fresh::Many)),
        };
        let Some(fresh) = answer else {
            drop(plan);
            return Ok(Some(Awaiting { index, put, value }));
        };
        let vectors = match fresh? {
            Fresh::None => plan.vectors(None)?,
            Fresh::One(vector) => plan.vectors(Some(vector))?,
            Fresh::Many(vectors) => plan.vectors(vectors)?,
        };
        let now = SystemTime::now();
        data.seq += 1;
        let entry = Entry::new(value, vectors, config.ttl.resolve(put.ttl), data.seq, now);
        match slot {
            Some(Slot::Occupied(item)) => item.replace(entry, now),
            Some(Slot::Vacant(free)) => free.insert(put.key, entry).map_err(full)?,
            // A namespace the store does not hold yet: the key is new.
            None => upsert(data, put.namespace, put.key, entry, now)?,
        }
        Ok(None)
    }

    /// A put of `value` whose model must be awaited: planned under the read
    /// lock, embedded without a lock, then written (a write to the key in
    /// between changes nothing: a kept vector is the vector of the same
    /// text).
    async fn put_awaited(&self, awaiting: Awaiting<'_, '_>) -> Result<(), StoreError> {
        let Awaiting { index, put, value } = awaiting;
        let plan = {
            let data = self.read();
            Plan::new(
                index,
                stored(&data, put.namespace, &put.key),
                &value,
                put.index,
            )
        };
        let fresh = index.embed_documents(&plan.to_embed).await?;
        let vectors = plan.vectors(fresh)?;
        let put = Put {
            value: Some(value),
            ..put
        };
        let ttl = &self.inner.config.ttl;
        apply_put(&mut self.write(), put, vectors, ttl, SystemTime::now())
    }

    fn read_ops(
        &self,
        data: &Data,
        ops: &[Op],
        queries: &HashMap<&str, (Embedding, f32)>,
        now: SystemTime,
    ) -> Result<Vec<OpResult>, StoreError> {
        let ttl = &self.inner.config.ttl;
        let now_nanos = nanos(now);
        ops.iter()
            .map(|op| {
                Ok(match op {
                    Op::Get(get) => OpResult::Get(get_in(data, get, ttl, now, now_nanos)),
                    Op::Search(search) => {
                        let query = search
                            .query
                            .as_deref()
                            .and_then(|q| queries.get(q))
                            .map(|(v, n)| (&v[..], *n));
                        OpResult::Search(search_in(data, search, query, ttl, now, now_nanos)?)
                    }
                    Op::ListNamespaces(list) => {
                        OpResult::ListNamespaces(list_in(data, list, now_nanos))
                    }
                    Op::Put(_) => OpResult::Put,
                })
            })
            .collect()
    }
}

fn get_in(
    data: &Data,
    op: &GetOp,
    ttl: &TtlConfig,
    now: SystemTime,
    now_nanos: u64,
) -> Option<Item> {
    let entry = data.namespaces.get(&op.namespace)?.get(op.key.as_str())?;
    if entry.expired(now_nanos) {
        return None;
    }
    if ttl.refresh(op.refresh_ttl) {
        entry.refresh(now);
    }
    Some(entry.item(&op.namespace, &op.key))
}

fn search_in(
    data: &Data,
    op: &SearchOp,
    query: Option<(&[f32], f32)>,
    ttl: &TtlConfig,
    now: SystemTime,
    now_nanos: u64,
) -> Result<Vec<SearchItem>, StoreError> {
    let wanted = op.offset.saturating_add(op.limit);
    // (score, seq, namespace, key, entry) of every match.
    let mut found: Vec<(Option<f64>, u64, &Namespace, &str, &Entry)> = Vec::new();
    let under_prefix = data
        .namespaces
        .range(op.namespace_prefix.clone()..)
        .take_while(|(ns, _)| ns.starts_with(&op.namespace_prefix));
    for (ns, items) in under_prefix {
        for (key, entry) in items.iter() {
            if entry.expired(now_nanos) || !op.filter.matches(ns, key, &entry.value)? {
                continue;
            }
            let score = match query {
                Some((q, qn)) => match entry.score(q, qn) {
                    Some(s) => Some(s),
                    // Items without embedded texts are not found by a query.
                    None => continue,
                },
                None => None,
            };
            found.push((score, entry.seq, ns, key, entry));
        }
    }
    // Best score first, then most recently updated first.
    let order = |a: &(Option<f64>, u64, &Namespace, &str, &Entry),
                 b: &(Option<f64>, u64, &Namespace, &str, &Entry)| {
        match (a.0, b.0) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            _ => CmpOrdering::Equal,
        }
        .then(b.1.cmp(&a.1))
    };
    if wanted < found.len() {
        if wanted == 0 {
            found.clear();
        } else {
            found.select_nth_unstable_by(wanted - 1, order);
            found.truncate(wanted);
        }
    }
    found.sort_unstable_by(order);
    let refresh = ttl.refresh(op.refresh_ttl);
    Ok(found
        .into_iter()
        .skip(op.offset)
        .map(|(score, _, ns, key, entry)| {
            if refresh {
                entry.refresh(now);
            }
            SearchItem {
                item: entry.item(ns, key),
                score,
            }
        })
        .collect())
}

fn list_in(data: &Data, op: &ListNamespacesOp, now_nanos: u64) -> Vec<Namespace> {
    op.apply(
        data.namespaces
            .iter()
            .filter(|(_, items)| items.values().any(|e| !e.expired(now_nanos)))
            .map(|(ns, _)| ns.clone()),
    )
}

/// A model's answer for a put's texts, as [`InMemoryStore::put_at_once`]
/// asked for them.
enum Fresh {
    /// No text to embed.
    None,
    /// The vector of the put's one text.
    One(Embedding),
    /// The vectors of its texts, in order.
    Many(Vec<Embedding>),
}

/// A put whose model must be awaited: the index, the put and its value.
struct Awaiting<'s, 'p> {
    index: &'s IndexConfig,
    put: Put<'p>,
    value: Map<String, Value>,
}

/// A put's parts, the namespace borrowed: a put through
/// [`InMemoryStore::put`] clones it only for a namespace the store does not
/// hold yet.
struct Put<'a> {
    namespace: &'a Namespace,
    key: String,
    value: Option<Map<String, Value>>,
    index: &'a PutIndex,
    ttl: Ttl,
}

impl<'a> Put<'a> {
    fn of(op: &'a mut PutOp) -> Self {
        Put {
            namespace: &op.namespace,
            key: std::mem::take(&mut op.key),
            value: op.value.take(),
            index: &op.index,
            ttl: op.ttl,
        }
    }
}

fn apply_put(
    data: &mut Data,
    put: Put<'_>,
    vectors: Vectors,
    ttl_config: &TtlConfig,
    now: SystemTime,
) -> Result<(), StoreError> {
    let Put {
        namespace,
        key,
        value,
        ttl,
        ..
    } = put;
    let Some(value) = value else {
        if let Some(items) = data.namespaces.get_mut(namespace) {
            items.remove(&key);
            if items.is_empty() {
                data.namespaces.remove(namespace);
            }
        }
        return Ok(());
    };
    data.seq += 1;
    let entry = Entry::new(value, vectors, ttl_config.resolve(ttl), data.seq, now);
    upsert(data, namespace, key, entry, now)
}

/// Writes `entry` as `key` in `namespace` (a new namespace made, its name
/// cloned only then); an update keeps the stored item's creation time.
fn upsert(
    data: &mut Data,
    namespace: &Namespace,
    key: String,
    entry: Entry,
    now: SystemTime,
) -> Result<(), StoreError> {
    let items = match data.namespaces.get_mut(namespace) {
        Some(items) => items,
        None => data.namespaces.entry(namespace.clone()).or_default(),
    };
    items
        .upsert(key, entry, |stored, entry| stored.replace(entry, now))
        .map_err(full)
}

/// The error of a put of a new key into a full namespace.
fn full(e: NamespaceFull) -> StoreError {
    StoreError::Storage(Box::new(e))
}

/// The item stored as `key` in `namespace`, if any.
fn stored<'d>(data: &'d Data, namespace: &Namespace, key: &str) -> Option<&'d Entry> {
    data.namespaces
        .get(namespace)
        .and_then(|items| items.get(key))
}

impl Store for InMemoryStore {
    fn batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>, StoreError>> {
        Box::pin(self.run_batch(ops))
    }

    /// [`put_with`](Store::put_with) of a plain put, in one future (the
    /// store's own [`put`](InMemoryStore::put), boxed).
    fn put<'a>(
        &'a self,
        namespace: &'a Namespace,
        key: &'a str,
        value: Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(InMemoryStore::put(self, namespace, key, value))
    }

    /// A put without the batch around it (no op list, no results): the same
    /// steps as a batch of one.
    fn put_with(&self, mut op: PutOp) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { self.put_one(Put::of(&mut op)).await })
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let now = nanos(SystemTime::now());
            let mut data = self.write();
            let mut deleted = 0u64;
            data.namespaces.retain(|_, items| {
                let before = items.len();
                items.retain(|_, e| !e.expired(now));
                deleted += (before - items.len()) as u64;
                !items.is_empty()
            });
            Ok(deleted)
        })
    }
}

impl std::fmt::Debug for InMemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryStore")
            .field("items", &self.len())
            .field("config", &self.inner.config)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{HashEmbeddings, SearchOp, StoreConfig};
    use serde_json::json;

    /// A stamp gives back the very time it was made of, before the epoch,
    /// now and at the edges of its range; beyond them, the nearest it holds.
    #[test]
    fn stamps_keep_times_exactly() {
        let now = SystemTime::now();
        let times = [
            now,
            UNIX_EPOCH,
            UNIX_EPOCH - Duration::new(3, 7),
            UNIX_EPOCH + Duration::from_nanos(i64::MAX as u64),
            UNIX_EPOCH - Duration::from_nanos(i64::MAX as u64),
        ];
        for t in times {
            assert_eq!(Stamp::of(t).time(), t);
        }
        let far = UNIX_EPOCH + Duration::from_secs(400 * 365 * 86_400);
        assert_eq!(
            Stamp::of(far).time(),
            UNIX_EPOCH + Duration::from_nanos(i64::MAX as u64)
        );
    }

    /// An update keeps the creation time and moves the update time, as the
    /// compact entry stores them.
    #[tokio::test]
    async fn an_update_keeps_its_creation_time() {
        let store = InMemoryStore::new();
        let ns = Namespace::new(["t"]).unwrap();
        store.put(&ns, "k", json!({"v": 1})).await.unwrap();
        let first = store.get(&ns, "k").await.unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(2));
        store.put(&ns, "k", json!({"v": 2})).await.unwrap();
        let second = store.get(&ns, "k").await.unwrap().unwrap();
        assert_eq!(second.created_at, first.created_at);
        assert!(second.updated_at > first.updated_at);
        assert_eq!(first.created_at, first.updated_at);
    }

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn an_entry_takes_112_bytes() {
        assert_eq!(std::mem::size_of::<Entry>(), 112);
    }

    fn best(found: &[SearchItem]) -> (String, f64) {
        let top = &found[0];
        (top.key.clone(), top.score.unwrap_or_default())
    }

    /// An update keeping some texts and changing others: each kept vector
    /// stays under its own field and each new one lands under its own, so a
    /// query for any text finds the item with a perfect score.
    #[tokio::test]
    async fn kept_and_new_vectors_stay_under_their_fields() {
        let index = IndexConfig::new(256, HashEmbeddings::new(256))
            .fields(["text", "tags[*]"])
            .unwrap();
        let store = InMemoryStore::with_config(StoreConfig::new().index(index));
        let ns = Namespace::new(["t"]).unwrap();
        let first = json!({"text": "alpha", "tags": ["beta", "gamma"]});
        // `text` changes, `tags[*].0` is kept, `tags[*].1` changes.
        let second = json!({"text": "omega", "tags": ["beta", "delta"]});
        store.put(&ns, "k", first).await.unwrap();
        store.put(&ns, "k", second).await.unwrap();
        {
            let data = store.read();
            let entry = data.namespaces[&ns].get("k").unwrap();
            // Kept vectors first (the order means nothing: a search takes
            // the best score).
            let fields: Vec<&str> = entry.vectors.iter().map(|v| &*v.field).collect();
            assert_eq!(fields, ["tags[*].0", "text", "tags[*].1"]);
        }
        for word in ["omega", "beta", "delta"] {
            let found = store
                .search(SearchOp::new(ns.clone()).query(word))
                .await
                .unwrap();
            let (key, score) = best(&found);
            assert_eq!(key, "k");
            assert!((score - 1.0).abs() < 1e-5, "{word}: {score}");
        }
        for gone in ["alpha", "gamma"] {
            let found = store
                .search(SearchOp::new(ns.clone()).query(gone))
                .await
                .unwrap();
            assert!(best(&found).1 < 0.99, "{gone} is gone: {found:?}");
        }
    }

    /// A model that keeps its vectors hands them over shared: the store
    /// keeps the model's own vector, and a put that leaves a text unchanged
    /// keeps the stored one (no copy, the model not asked again); the norm
    /// a search works out is kept with it.
    #[tokio::test]
    async fn vectors_are_kept_as_the_model_shares_them() {
        /// Hands over the vectors of a fixed table, counting the texts asked.
        struct Table {
            vectors: Vec<(&'static str, Embedding)>,
            asked: std::sync::Mutex<Vec<String>>,
        }
        impl crate::store::Embeddings for Table {
            fn embed_documents<'a>(
                &'a self,
                texts: &'a [&'a str],
            ) -> BoxFuture<'a, Result<Vec<Embedding>, crate::store::EmbeddingError>> {
                Box::pin(async move { self.embed_documents_sync(texts).unwrap() })
            }
            fn embed_documents_sync(
                &self,
                texts: &[&str],
            ) -> Option<Result<Vec<Embedding>, crate::store::EmbeddingError>> {
                let mut asked = self.asked.lock().unwrap();
                Some(Ok(texts
                    .iter()
                    .map(|t| {
                        asked.push((*t).to_owned());
                        let (_, v) = self.vectors.iter().find(|(k, _)| k == t).unwrap();
                        Arc::clone(v)
                    })
                    .collect()))
            }
        }
        let alpha: Embedding = vec![3.0, 4.0].into();
        let model = Arc::new(Table {
            vectors: vec![("alpha", alpha.clone()), ("beta", vec![1.0, 0.0].into())],
            asked: Default::default(),
        });
        let index = IndexConfig::shared(2, model.clone())
            .fields(["text"])
            .unwrap();
        let store = InMemoryStore::with_config(StoreConfig::new().index(index));
        let ns = Namespace::new(["t"]).unwrap();
        let stored = |key: &str| {
            let data = store.read();
            let v = &data.namespaces[&ns].get(key).unwrap().vectors[0];
            (Arc::clone(&v.values), v.norm.load(Ordering::Relaxed))
        };
        store.put(&ns, "a", json!({"text": "alpha"})).await.unwrap();
        let (values, norm) = stored("a");
        assert!(
            Arc::ptr_eq(&values, &alpha),
            "the model's vector, not a copy"
        );
        assert_eq!(norm, UNKNOWN_NORM, "a put does not read the vector");
        let found = store
            .search(SearchOp::new(ns.clone()).query("alpha"))
            .await
            .unwrap();
        assert!((best(&found).1 - 1.0).abs() < 1e-6);
        assert_eq!(
            f32::from_bits(stored("a").1),
            5.0,
            "the search keeps the norm"
        );
        // Another field changes, the text does not: kept, with its norm.
        store
            .put(&ns, "a", json!({"text": "alpha", "n": 2}))
            .await
            .unwrap();
        let (values, norm) = stored("a");
        assert!(Arc::ptr_eq(&values, &alpha));
        assert_eq!(f32::from_bits(norm), 5.0);
        store.put(&ns, "a", json!({"text": "beta"})).await.unwrap();
        assert_eq!(&stored("a").0[..], [1.0, 0.0]);
        assert_eq!(*model.asked.lock().unwrap(), ["alpha", "alpha", "beta"]);
    }

    /// A model answering at once is asked under the write lock; when it
    /// fails, nothing is written: no item, no namespace, the old value kept.
    #[tokio::test]
    async fn a_failing_model_answering_at_once_writes_nothing() {
        let index = IndexConfig::new(4, HashEmbeddings::new(4))
            .fields(["text"])
            .unwrap();
        let store = InMemoryStore::with_config(StoreConfig::new().index(index));
        let ns = Namespace::new(["kept"]).unwrap();
        store.put(&ns, "k", json!({"text": "old"})).await.unwrap();
        // The same items behind a model of the wrong size.
        let wrong = IndexConfig::new(8, HashEmbeddings::new(4))
            .fields(["text"])
            .unwrap();
        let wrong = InMemoryStore {
            inner: Arc::new(Inner {
                config: StoreConfig::new().index(wrong),
                data: RwLock::new(std::mem::take(&mut *store.write())),
            }),
        };
        let new_ns = Namespace::new(["new"]).unwrap();
        for (ns, key) in [(&ns, "k"), (&ns, "other"), (&new_ns, "k")] {
            let err = wrong
                .put(ns, key, json!({"text": "new"}))
                .await
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    StoreError::Embedding(crate::store::EmbeddingError::WrongDimensions { .. })
                ),
                "{err}"
            );
        }
        assert_eq!(
            wrong.get(&ns, "k").await.unwrap().unwrap().value["text"],
            "old"
        );
        assert_eq!(wrong.len(), 1);
        let namespaces = wrong
            .list_namespaces(ListNamespacesOp::default())
            .await
            .unwrap();
        assert_eq!(namespaces, [ns]);
    }

    /// A model answering at once is asked through `embed_documents_sync`
    /// (its future is never awaited); one answering `None` there is awaited.
    #[tokio::test]
    async fn a_model_answering_at_once_is_not_awaited() {
        /// `embed_documents` fails; `embed_documents_sync` answers when `now`.
        struct AtOnce {
            now: bool,
        }
        impl crate::store::Embeddings for AtOnce {
            fn embed_documents<'a>(
                &'a self,
                _texts: &'a [&'a str],
            ) -> BoxFuture<'a, Result<Vec<crate::store::Embedding>, crate::store::EmbeddingError>>
            {
                Box::pin(async { Err(crate::store::EmbeddingError::Failed("awaited".into())) })
            }
            fn embed_documents_sync(
                &self,
                texts: &[&str],
            ) -> Option<Result<Vec<crate::store::Embedding>, crate::store::EmbeddingError>>
            {
                let model = HashEmbeddings::new(8);
                self.now
                    .then(|| Ok(texts.iter().map(|t| model.embed(t).into()).collect()))
            }
        }
        let ns = Namespace::new(["t"]).unwrap();
        let store = |now| {
            let index = IndexConfig::new(8, AtOnce { now })
                .fields(["text"])
                .unwrap();
            InMemoryStore::with_config(StoreConfig::new().index(index))
        };
        let at_once = store(true);
        at_once
            .put(&ns, "k", json!({"text": "alpha"}))
            .await
            .unwrap();
        // The query too (`embed_query`'s default asks at once first).
        let found = at_once
            .search(SearchOp::new(ns.clone()).query("alpha"))
            .await
            .unwrap();
        let (key, score) = best(&found);
        assert_eq!(key, "k");
        assert!((score - 1.0).abs() < 1e-5, "{score}");
        let awaited = store(false);
        let err = awaited
            .put(&ns, "k", json!({"text": "alpha"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("awaited"), "{err}");
        assert!(awaited.is_empty());
    }

    /// The store's own `put` takes an owned key, and means what
    /// `Store::put` means (through `dyn Store`, the same item).
    #[tokio::test]
    async fn the_stores_own_put_and_the_traits_store_the_same_item() {
        let store = InMemoryStore::new();
        let ns = Namespace::new(["t"]).unwrap();
        store
            .put(&ns, String::from("own"), json!({"n": 1}))
            .await
            .unwrap();
        let shared: &dyn Store = &store;
        shared.put(&ns, "dyn", json!({"n": 1})).await.unwrap();
        let own = store.get(&ns, "own").await.unwrap().unwrap();
        let through_dyn = store.get(&ns, "dyn").await.unwrap().unwrap();
        assert_eq!(own.value, through_dyn.value);
        assert_eq!(own.key, "own");
        let err = store.put(&ns, "bad", json!([1])).await.unwrap_err();
        assert!(matches!(err, StoreError::NotAnObject { .. }), "{err}");
    }

    /// A delete moves the namespace's last item into the hole: every other
    /// item is still found by key, by search and in recency order, and a key
    /// put again after its delete is a new item.
    #[tokio::test]
    async fn deletes_in_the_middle_keep_every_other_item_reachable() {
        let store = InMemoryStore::new();
        let ns = Namespace::new(["t"]).unwrap();
        for i in 0..10 {
            store
                .put(&ns, format!("k{i}"), json!({"i": i}))
                .await
                .unwrap();
        }
        for gone in ["k3", "k9", "k0"] {
            store.delete(&ns, gone).await.unwrap();
        }
        store.put(&ns, "k3", json!({"i": 30})).await.unwrap();
        for (key, i) in [
            (1, 1),
            (2, 2),
            (3, 30),
            (4, 4),
            (5, 5),
            (6, 6),
            (7, 7),
            (8, 8),
        ] {
            let item = store.get(&ns, &format!("k{key}")).await.unwrap();
            assert_eq!(
                item.map(|it| it.value["i"].clone()),
                Some(json!(i)),
                "k{key}"
            );
        }
        for gone in ["k0", "k9"] {
            assert!(store.get(&ns, gone).await.unwrap().is_none(), "{gone}");
        }
        let found = store
            .search(SearchOp::new(ns.clone()).limit(20))
            .await
            .unwrap();
        let keys: Vec<&str> = found.iter().map(|f| f.item.key.as_str()).collect();
        assert_eq!(keys, ["k3", "k8", "k7", "k6", "k5", "k4", "k2", "k1"]);
        assert_eq!(store.len(), 8);
    }

    /// Without an index a put stores no vectors.
    #[tokio::test]
    async fn a_store_without_an_index_keeps_no_vectors() {
        let store = InMemoryStore::new();
        let ns = Namespace::new(["t"]).unwrap();
        store.put(&ns, "k", json!({"text": "alpha"})).await.unwrap();
        assert!(store.read().namespaces[&ns]
            .get("k")
            .unwrap()
            .vectors
            .is_empty());
    }

    /// A model that does not answer within the index's timeout fails the put
    /// with `EmbeddingError::Timeout`, and the item keeps its old value.
    #[tokio::test]
    async fn an_embedding_past_its_timeout_fails_the_put_and_writes_nothing() {
        struct Slow;
        impl crate::store::Embeddings for Slow {
            fn embed_documents<'a>(
                &'a self,
                texts: &'a [&'a str],
            ) -> BoxFuture<'a, Result<Vec<crate::store::Embedding>, crate::store::EmbeddingError>>
            {
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok(texts.iter().map(|_| vec![1.0; 4].into()).collect())
                })
            }
        }
        let ns = Namespace::new(["t"]).unwrap();
        let plain = IndexConfig::new(4, HashEmbeddings::new(4))
            .fields(["text"])
            .unwrap();
        let store = InMemoryStore::with_config(StoreConfig::new().index(plain));
        store.put(&ns, "k", json!({"text": "old"})).await.unwrap();
        // The same items, behind a slow model.
        let slow = IndexConfig::new(4, Slow)
            .fields(["text"])
            .unwrap()
            .timeout(Duration::from_millis(100));
        let slow_store = InMemoryStore {
            inner: Arc::new(Inner {
                config: StoreConfig::new().index(slow),
                data: RwLock::new(std::mem::take(&mut *store.write())),
            }),
        };
        let err = slow_store
            .put(&ns, "k", json!({"text": "new"}))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Embedding(crate::store::EmbeddingError::Timeout { after })
                    if after == Duration::from_millis(100)
            ),
            "{err}"
        );
        let kept = slow_store.get(&ns, "k").await.unwrap().unwrap();
        assert_eq!(kept.value["text"], "old");
        assert!(slow_store.get(&ns, "other").await.unwrap().is_none());
    }
}
