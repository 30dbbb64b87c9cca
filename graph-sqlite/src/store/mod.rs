//! [`SqliteStore`]: a [`Store`] in LangGraph's SQLite store tables.
//!
//! ```
//! use graph_core::store::{Filter, HashEmbeddings, IndexConfig, Namespace, SearchOp, Store, StoreConfig};
//! use graph_sqlite::SqliteStore;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let index = IndexConfig::new(64, HashEmbeddings::new(64)).fields(["text"])?;
//! let store = SqliteStore::open(dir.path().join("store.sqlite"), StoreConfig::new().index(index)).await?;
//! let alice = Namespace::new(["memories", "alice"])?;
//! store.put(&alice, "diet", json!({"text": "alice is vegetarian", "kind": "fact"})).await?;
//! store.put(&alice, "pet", json!({"text": "alice has a cat", "kind": "fact"})).await?;
//! let found = store
//!     .search(SearchOp::new(alice).query("vegetarian food").filter(Filter::new().eq("kind", "fact")))
//!     .await?;
//! assert_eq!(found[0].key, "diet");
//! # Ok(())
//! # }
//! ```
//!
//! # Layout: LangGraph's, unchanged
//!
//! The tables are those of `langgraph-checkpoint-sqlite`'s `SqliteStore`, with
//! its migrations tables (`store_migrations`, `vector_migrations`) at its
//! versions, so Python's store reads, searches and writes a database this
//! store created, and the other way round:
//!
//! - `store(prefix, key, value, created_at, updated_at, expires_at,
//!   ttl_minutes)`: the namespace's labels joined by periods, the key, the
//!   value as JSON text, and the times as text. Times are UTC; this crate
//!   writes microseconds (`2026-12-02 14:40:00.123456`), LangGraph whole
//!   seconds (`CURRENT_TIMESTAMP`), and both sort as text.
//! - `store_vectors(prefix, key, field_name, embedding, ...)`: one row per
//!   embedded text, the vector as sqlite-vec's `float32` blob (little-endian
//!   floats). The table is created when the store has an [`IndexConfig`], as
//!   LangGraph does.
//!
//! LangGraph searches the vectors with the sqlite-vec extension's
//! `vec_distance_cosine`, loaded into its connection. The database itself holds
//! no sqlite-vec tables, only those blobs, so this crate needs no extension: it
//! reads the blobs and computes the same cosine distance in Rust (the same
//! `f32` arithmetic, so the scores are LangGraph's to the bit), keeping the
//! best-scoring items. A search with a query scores every vector under the
//! namespace prefix, as LangGraph's does; the vectors are kept decoded in
//! memory between searches (see [`SqliteStore::vector_cache_limit`]), checked
//! against SQLite's `PRAGMA data_version` so that writes by other connections
//! and processes are seen, and dropped by this store's own writes.
//!
//! Differences from LangGraph's store, all in what a read returns: an expired
//! item is never returned (LangGraph returns it until a sweep deletes it); an
//! update keeps the item's `created_at` (LangGraph's `INSERT OR REPLACE` resets
//! it); filters are evaluated with [`Filter`]'s semantics, the same on every
//! backend (LangGraph's SQLite store compares through `json_extract`, which
//! differs for nested objects and mixed types); deleting or re-indexing an
//! item deletes its old vectors (LangGraph leaves them, unused). LangGraph's
//! SQLite store reads the fields to embed from `index["text_fields"]`, not
//! `index["fields"]` (which its other stores use): configure both in Python
//! when sharing an indexed database.
//!
//! # Threads
//!
//! As the [`SqliteSaver`](crate::SqliteSaver), the store owns one connection
//! on a thread of its own; each batch is one job there, and one transaction.
//! Texts whose vector is already stored under the same field are not
//! embedded again, and a failing model writes nothing. A model that answers
//! at once ([`Embeddings::embed_documents_sync`](graph_core::store::Embeddings::embed_documents_sync):
//! a table, [`HashEmbeddings`](graph_core::store::HashEmbeddings)) is asked
//! inside the job, after the stored items are read, as LangGraph's store
//! embeds inside its transaction: a put is one trip to the thread. A model
//! that must be awaited is awaited before the job, between a first job that
//! reads the stored items and the one that writes (which checks that the
//! items whose vectors it keeps did not change meanwhile); the store learns
//! which kind its model is from the model's first answer.

mod row;
mod schema;
mod vector_cache;

use crate::worker::Worker;
use futures::future::BoxFuture;
use graph_core::store::{
    Embedding, Filter, IndexConfig, IndexedText, Item, ListNamespacesOp, Namespace, Op, OpResult,
    PutOp, SearchItem, SearchOp, Store, StoreConfig, StoreError, TextPlan, TtlConfig,
};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};
use vector_cache::VectorCache;

/// A [`Store`] in a SQLite file (or in memory), in the tables of LangGraph's
/// Python `SqliteStore` (see the [module docs](self)).
pub struct SqliteStore {
    worker: Worker,
    name: String,
    index: Option<Arc<IndexConfig>>,
    ttl: TtlConfig,
    vectors: bool,
    /// Whether the model answered from `embed_documents_sync` when last
    /// asked (assumed until it does not): then a put is planned, embedded and
    /// written in one job.
    answers_at_once: AtomicBool,
    /// The decoded vectors, locked only by jobs on the worker's thread (see
    /// `vector_cache.rs` for when it is valid).
    cache: Arc<Mutex<VectorCache>>,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("database", &self.name)
            .field("index", &self.index)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`, creating or migrating the
    /// store tables. A database migrated by a newer LangGraph or stategraph, or
    /// holding a `store` table LangGraph did not create, is refused
    /// ([`StoreError::InvalidInput`]) before anything is written.
    pub async fn open(path: impl AsRef<Path>, config: StoreConfig) -> Result<Self, StoreError> {
        Self::start(Some(path.as_ref().to_path_buf()), config).await
    }

    /// A fresh database in memory, gone when the store is dropped.
    pub async fn in_memory(config: StoreConfig) -> Result<Self, StoreError> {
        Self::start(None, config).await
    }

    async fn start(path: Option<PathBuf>, config: StoreConfig) -> Result<Self, StoreError> {
        let name = path
            .as_ref()
            .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string());
        let worker = Worker::start(name.clone(), crate::lease::DEFAULT_TTL, {
            let name = name.clone();
            move || match &path {
                Some(path) => Connection::open(path)
                    .map_err(|e| crate::storage(format!("cannot open `{name}`"), e)),
                None => Connection::open_in_memory()
                    .map_err(|e| crate::storage("cannot open an in-memory database".into(), e)),
            }
        })
        .await
        .map_err(|e| StoreError::Storage(Box::new(e)))?;
        let mut store = SqliteStore {
            worker,
            name: name.clone(),
            index: config.index.map(Arc::new),
            ttl: config.ttl,
            vectors: false,
            answers_at_once: AtomicBool::new(true),
            cache: Arc::new(Mutex::new(VectorCache::new())),
        };
        let with_index = store.index.is_some();
        store.vectors = store
            .run(move |conn| schema::prepare(conn, &name, with_index))
            .await?;
        Ok(store)
    }

    /// Bounds the memory of the vectors this store keeps decoded between
    /// searches with a query, in bytes (default 128 MiB; 0: keep none). A
    /// vector costs 4 bytes a dimension plus its key's bytes and 36 bytes;
    /// when the `store_vectors` table needs more, searches read the vectors
    /// from SQLite at each query instead. The cache is emptied either way.
    pub fn vector_cache_limit(self, bytes: usize) -> Self {
        lock(&self.cache).set_limit(bytes);
        self
    }

    /// Waits for queued operations, then closes the database.
    pub async fn close(self) -> Result<(), StoreError> {
        self.worker
            .close()
            .await
            .map_err(|e| StoreError::Storage(Box::new(e)))
    }

    /// Runs `f` on the connection's thread.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.worker
            .run(move |conn| Ok(f(conn)))
            .await
            .map_err(|e| StoreError::Storage(Box::new(e)))?
    }

    async fn run_batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        for op in &ops {
            op.validate()?;
        }
        // Every query embedding before the first write.
        let mut queries: Vec<Option<Embedding>> = Vec::with_capacity(ops.len());
        for op in &ops {
            queries.push(match (op, &self.index) {
                (Op::Search(SearchOp { query: Some(q), .. }), Some(index)) => {
                    Some(index.embed_query(q).await?)
                }
                _ => None,
            });
        }
        let puts = Op::last_puts(&ops);
        let (writes, texts) = self.outline(&ops, &puts);
        let ops = Arc::new(ops);
        let queries = Arc::new(queries);
        let Some(index) = self
            .index
            .as_ref()
            .filter(|_| texts.iter().any(|t| !t.is_empty()))
        else {
            // Nothing to embed: the batch is one job as it stands.
            return match self.send(self.job(&ops, &queries, writes, None)).await? {
                Outcome::Done(results) => Ok(results),
                other => Err(other.unexpected()),
            };
        };
        // A model that answers at once is asked inside the job, after the
        // stored items are read: one job, one transaction.
        let mut outlined = if self.answers_at_once.load(Ordering::Relaxed) {
            let embed = Some(InJob {
                index: Arc::clone(index),
                texts,
            });
            match self.send(self.job(&ops, &queries, writes, embed)).await? {
                Outcome::Done(results) => return Ok(results),
                // Rolled back: embed before the job, as for any model.
                Outcome::Await => {
                    self.answers_at_once.store(false, Ordering::Relaxed);
                    None
                }
                other => return Err(other.unexpected()),
            }
        } else {
            Some((writes, texts))
        };
        // A model to await: the stored items are read in a first job, the
        // texts not stored already embedded here, then written in a second.
        let mut reuse = true;
        loop {
            // The outline made above, unless a job consumed it.
            let (writes, texts) = outlined.take().unwrap_or_else(|| self.outline(&ops, &puts));
            let writes = self.plan_writes(index, &ops, writes, texts, reuse).await?;
            match self.send(self.job(&ops, &queries, writes, None)).await? {
                Outcome::Done(results) => return Ok(results),
                // A reused vector's item changed since it was read: embed anew.
                Outcome::Changed if reuse => reuse = false,
                other => return Err(other.unexpected()),
            }
        }
    }

    fn job(
        &self,
        ops: &Arc<Vec<Op>>,
        queries: &Arc<Vec<Option<Embedding>>>,
        writes: Vec<Write>,
        embed: Option<InJob>,
    ) -> Job {
        Job {
            ops: Arc::clone(ops),
            queries: Arc::clone(queries),
            writes,
            embed,
            ttl: self.ttl.clone(),
            vectors: self.vectors,
        }
    }

    /// Runs `job` on the connection's thread, dropping the vector cache when
    /// it writes; a panic of the model inside it goes on here.
    async fn send(&self, job: Job) -> Result<Outcome, StoreError> {
        let cache = self.cache.clone();
        let writing = !job.writes.is_empty();
        let outcome = self
            .run(move |conn| {
                let mut cache = lock(&cache);
                let done = job.run(conn, &mut cache);
                // Own commits leave `data_version` as it was (and a
                // failed job may have read rows it then rolled back).
                if writing {
                    cache.invalidate();
                }
                done
            })
            .await?;
        match outcome {
            Outcome::Panicked(payload) => std::panic::resume_unwind(payload),
            outcome => Ok(outcome),
        }
    }

    /// What each put writes, without its vectors yet: its row, its expiry,
    /// and the texts to embed.
    fn outline(&self, ops: &[Op], puts: &[usize]) -> (Vec<Write>, Vec<Vec<IndexedText>>) {
        let now = SystemTime::now();
        let mut writes: Vec<Write> = Vec::with_capacity(puts.len());
        let mut texts: Vec<Vec<IndexedText>> = Vec::with_capacity(puts.len());
        for &i in puts {
            let Op::Put(put) = &ops[i] else { continue };
            let indexed = match (&put.value, &self.index) {
                (Some(value), Some(index)) => index.texts_to_embed(value, &put.index),
                _ => Vec::new(),
            };
            writes.push(Write {
                op: i,
                vectors: Vec::new(),
                expect_value: None,
                expires_at: TtlConfig::expires_at(self.ttl.resolve(put.ttl), now),
                ttl: self.ttl.resolve(put.ttl),
            });
            texts.push(indexed);
        }
        (writes, texts)
    }

    /// What each put writes with a model to await (its [`outline`](Self::outline)
    /// given): its row, and its vectors, embedded here (or reused from the stored item when `reuse` and its
    /// text is unchanged, which the write then checks).
    async fn plan_writes(
        &self,
        index: &IndexConfig,
        ops: &Arc<Vec<Op>>,
        mut writes: Vec<Write>,
        texts: Vec<Vec<IndexedText>>,
        reuse: bool,
    ) -> Result<Vec<Write>, StoreError> {
        let stored: Vec<Option<Stored>> = if reuse {
            let keys = stored_keys(ops, &writes, &texts);
            let vectors = self.vectors;
            self.run(move |conn| {
                read_stored(conn, &keys, vectors, &row::timestamp(SystemTime::now()))
            })
            .await?
        } else {
            vec![None; writes.len()]
        };
        let (to_embed, slots) = plan_vectors(index, ops, &mut writes, texts, &stored, true);
        let vectors = index.embed_documents(&to_embed).await?;
        add_vectors(&mut writes, slots, vectors);
        Ok(writes)
    }
}

impl Store for SqliteStore {
    fn batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>, StoreError>> {
        Box::pin(self.run_batch(ops))
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        let vectors = self.vectors;
        let cache = self.cache.clone();
        Box::pin(self.run(move |conn| {
            // Deletes vectors on this connection: `data_version` will not say.
            lock(&cache).invalidate();
            let now = row::timestamp(SystemTime::now());
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| storage("cannot start a sweep".into(), e))?;
            if vectors {
                tx.execute(
                    "DELETE FROM store_vectors WHERE (prefix, key) IN (SELECT prefix, key \
                     FROM store WHERE expires_at IS NOT NULL AND expires_at <= ?1)",
                    [&now],
                )
                .map_err(|e| storage("cannot sweep expired vectors".into(), e))?;
            }
            let deleted = tx
                .execute(
                    "DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                    [&now],
                )
                .map_err(|e| storage("cannot sweep expired items".into(), e))?;
            tx.commit()
                .map_err(|e| storage("cannot commit a sweep".into(), e))?;
            Ok(deleted as u64)
        }))
    }
}

/// What one put writes, prepared before its transaction.
struct Write {
    /// Its position in the batch.
    op: usize,
    /// Its vectors: field name and blob.
    vectors: Vec<(String, Vec<u8>)>,
    /// With reused vectors: the stored value they were computed from, which
    /// the transaction checks is still there.
    expect_value: Option<String>,
    expires_at: Option<SystemTime>,
    ttl: Option<Duration>,
}

/// A stored item whose vectors a put may reuse.
#[derive(Clone)]
struct Stored {
    text: String,
    value: Map<String, Value>,
    vectors: HashMap<String, Vec<u8>>,
}

/// The prefix and key of each put with texts to embed (an empty prefix for
/// the others): the stored items whose vectors it may keep.
fn stored_keys(ops: &[Op], writes: &[Write], texts: &[Vec<IndexedText>]) -> Vec<(String, String)> {
    writes
        .iter()
        .zip(texts)
        .map(|(w, t)| match (&ops[w.op], t.is_empty()) {
            (Op::Put(put), false) => (put.namespace.to_dotted(), put.key.clone()),
            _ => (String::new(), String::new()),
        })
        .collect()
}

/// The live items at `keys` (empty prefix: none wanted), with their vectors.
fn read_stored(
    conn: &Connection,
    keys: &[(String, String)],
    vectors: bool,
    now_text: &str,
) -> Result<Vec<Option<Stored>>, StoreError> {
    let mut out = Vec::with_capacity(keys.len());
    for (prefix, key) in keys {
        if prefix.is_empty() || !vectors {
            out.push(None);
            continue;
        }
        let text: Option<String> = conn
            .prepare_cached(
                "SELECT value FROM store WHERE prefix = ?1 AND key = ?2 \
                 AND (expires_at IS NULL OR expires_at > ?3)",
            )
            .and_then(|mut s| {
                s.query_row(params![prefix, key, now_text], |r| value_text(r, 0))
                    .optional()
            })
            .map_err(|e| storage(format!("cannot read `{key}` in `{prefix}`"), e))?;
        let Some(text) = text else {
            out.push(None);
            continue;
        };
        let value = match serde_json::from_str(&text) {
            Ok(Value::Object(map)) => map,
            // Not reusable; the put replaces it.
            _ => {
                out.push(None);
                continue;
            }
        };
        let mut stmt = conn
            .prepare_cached(
                "SELECT field_name, embedding FROM store_vectors WHERE prefix = ?1 AND key = ?2",
            )
            .map_err(|e| storage("cannot read vectors".into(), e))?;
        let vectors = stmt
            .query_map(params![prefix, key], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect::<Result<HashMap<String, Vec<u8>>, _>>())
            .map_err(|e| {
                storage(
                    format!("cannot read the vectors of `{key}` in `{prefix}`"),
                    e,
                )
            })?;
        out.push(Some(Stored {
            text,
            value,
            vectors,
        }));
    }
    Ok(out)
}

/// Adds to each write the stored vectors it keeps (with, when `guard`, the
/// stored value the write must still find), and returns the texts to embed
/// with the write and field each vector goes to.
fn plan_vectors(
    index: &IndexConfig,
    ops: &[Op],
    writes: &mut [Write],
    texts: Vec<Vec<IndexedText>>,
    stored: &[Option<Stored>],
    guard: bool,
) -> (Vec<String>, Vec<(usize, String)>) {
    let mut to_embed: Vec<String> = Vec::new();
    let mut slots: Vec<(usize, String)> = Vec::new();
    for (w, (write, indexed)) in writes.iter_mut().zip(texts).enumerate() {
        let Op::Put(put) = &ops[write.op] else {
            continue;
        };
        let old = stored[w].as_ref();
        let plans = index.keep_or_embed(
            indexed,
            &put.index,
            old.map(|s| (&s.value, |field: &str| s.vectors.get(field))),
        );
        for plan in plans {
            match plan {
                TextPlan::Keep { field, vector } => {
                    if guard {
                        write.expect_value = old.map(|s| s.text.clone());
                    }
                    write.vectors.push((field, vector.clone()));
                }
                TextPlan::Embed(IndexedText { field, text }) => {
                    slots.push((w, field));
                    to_embed.push(text);
                }
            }
        }
    }
    (to_embed, slots)
}

/// Stores each embedded vector in its write, as the blob LangGraph stores.
fn add_vectors(writes: &mut [Write], slots: Vec<(usize, String)>, vectors: Vec<Embedding>) {
    for ((w, field), vector) in slots.into_iter().zip(vectors) {
        writes[w].vectors.push((field, row::vector_blob(&vector)));
    }
}

/// The texts a job plans and embeds itself, with a model that answers at once.
struct InJob {
    index: Arc<IndexConfig>,
    /// Each write's texts.
    texts: Vec<Vec<IndexedText>>,
}

/// How a job ended.
enum Outcome {
    /// Committed (or read): the batch's results.
    Done(Vec<OpResult>),
    /// Rolled back: a reused vector's item changed since it was read.
    Changed,
    /// Rolled back: the model asked inside the job must be awaited.
    Await,
    /// Rolled back: the model asked inside the job panicked with this.
    Panicked(Box<dyn std::any::Any + Send>),
}

impl Outcome {
    /// The error for an outcome its caller does not expect.
    fn unexpected(self) -> StoreError {
        StoreError::InvalidInput(match self {
            Outcome::Await => "the embedding model stopped answering at once; try again".into(),
            _ => "an item changed while its batch was written; try again".into(),
        })
    }
}

/// One batch, run on the connection's thread in one transaction.
struct Job {
    ops: Arc<Vec<Op>>,
    queries: Arc<Vec<Option<Embedding>>>,
    writes: Vec<Write>,
    /// The texts to plan and embed here (else `writes` has its vectors).
    embed: Option<InJob>,
    ttl: TtlConfig,
    vectors: bool,
}

impl Job {
    fn run(self, conn: &mut Connection, cache: &mut VectorCache) -> Result<Outcome, StoreError> {
        let now = SystemTime::now();
        let now_text = row::timestamp(now);
        let writing = !self.writes.is_empty()
            || self.ops.iter().any(|op| match op {
                Op::Get(get) => self.ttl.refresh(get.refresh_ttl),
                Op::Search(search) => self.ttl.refresh(search.refresh_ttl),
                _ => false,
            });
        let behavior = if writing {
            TransactionBehavior::Immediate
        } else {
            TransactionBehavior::Deferred
        };
        let tx = conn
            .transaction_with_behavior(behavior)
            .map_err(|e| storage("cannot start a transaction".into(), e))?;
        let mut results = Vec::with_capacity(self.ops.len());
        for (op, query) in self.ops.iter().zip(self.queries.iter()) {
            results.push(match op {
                Op::Get(get) => OpResult::Get(read_item(
                    &tx,
                    &get.namespace,
                    &get.key,
                    &now_text,
                    self.ttl.refresh(get.refresh_ttl).then_some(now),
                )?),
                Op::Search(search) => {
                    let refresh = self.ttl.refresh(search.refresh_ttl).then_some(now);
                    OpResult::Search(match query {
                        Some(q) => search_query(&tx, cache, search, q, &now_text, refresh)?,
                        None => search_plain(&tx, search, &now_text, refresh)?,
                    })
                }
                Op::ListNamespaces(list) => {
                    OpResult::ListNamespaces(list_namespaces(&tx, list, &now_text)?)
                }
                Op::Put(_) => OpResult::Put,
            });
        }
        let mut writes = self.writes;
        if let Some(InJob { index, texts }) = self.embed {
            // Read, embedded and written under one write lock: a kept
            // vector's item cannot change before the write.
            let keys = stored_keys(&self.ops, &writes, &texts);
            let stored = read_stored(&tx, &keys, self.vectors, &now_text)?;
            let (to_embed, slots) =
                plan_vectors(&index, &self.ops, &mut writes, texts, &stored, false);
            let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                index.embed_documents_sync(&to_embed)
            }));
            let vectors = match answer {
                Ok(Some(vectors)) => vectors?,
                Ok(None) => return Ok(Outcome::Await),
                Err(payload) => return Ok(Outcome::Panicked(payload)),
            };
            add_vectors(&mut writes, slots, vectors);
        }
        for write in &writes {
            let Op::Put(put) = &self.ops[write.op] else {
                continue;
            };
            let prefix = put.namespace.to_dotted();
            if let Some(expected) = &write.expect_value {
                let current: Option<String> = tx
                    .prepare_cached("SELECT value FROM store WHERE prefix = ?1 AND key = ?2")
                    .and_then(|mut s| {
                        s.query_row(params![prefix, put.key], |r| value_text(r, 0))
                            .optional()
                    })
                    .map_err(|e| storage(format!("cannot read `{}`", put.key), e))?;
                if current.as_ref() != Some(expected) {
                    return Ok(Outcome::Changed);
                }
            }
            write_put(&tx, put, &prefix, write, &now_text, self.vectors)?;
        }
        tx.commit()
            .map_err(|e| storage("cannot commit the batch".into(), e))?;
        Ok(Outcome::Done(results))
    }
}

/// Writes `put` (its namespace dotted: `prefix`) at `now_text`, the time
/// of its batch as stored.
fn write_put(
    tx: &Transaction<'_>,
    put: &PutOp,
    prefix: &str,
    write: &Write,
    now_text: &str,
    vectors: bool,
) -> Result<(), StoreError> {
    let fail = |what: &str, e| {
        storage(
            format!("cannot {what} `{}` in {}", put.key, put.namespace),
            e,
        )
    };
    if vectors {
        tx.prepare_cached("DELETE FROM store_vectors WHERE prefix = ?1 AND key = ?2")
            .and_then(|mut s| s.execute(params![prefix, put.key]))
            .map_err(|e| fail("delete the vectors of", e))?;
    }
    let Some(value) = &put.value else {
        tx.prepare_cached("DELETE FROM store WHERE prefix = ?1 AND key = ?2")
            .and_then(|mut s| s.execute(params![prefix, put.key]))
            .map_err(|e| fail("delete", e))?;
        return Ok(());
    };
    let text = serde_json::to_string(value).map_err(|source| StoreError::NotSerializable {
        type_name: "serde_json::Map",
        source,
    })?;
    tx.prepare_cached(
        "INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)
         ON CONFLICT (prefix, key) DO UPDATE SET
            value = excluded.value,
            created_at = CASE WHEN store.expires_at IS NOT NULL AND store.expires_at <= ?4
                THEN excluded.created_at ELSE store.created_at END,
            updated_at = excluded.updated_at,
            expires_at = excluded.expires_at,
            ttl_minutes = excluded.ttl_minutes",
    )
    .and_then(|mut s| {
        s.execute(params![
            prefix,
            put.key,
            text,
            now_text,
            write.expires_at.map(row::expiry),
            write.ttl.map(|t| t.as_secs_f64() / 60.0),
        ])
    })
    .map_err(|e| fail("write", e))?;
    if !write.vectors.is_empty() {
        let mut insert = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO store_vectors
                    (prefix, key, field_name, embedding, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            )
            .map_err(|e| fail("write the vectors of", e))?;
        for (field, blob) in &write.vectors {
            insert
                .execute(params![prefix, put.key, field, blob, now_text])
                .map_err(|e| fail("write the vectors of", e))?;
        }
    }
    Ok(())
}

/// The live item `key` in `namespace`, its TTL restarted when `refresh`.
fn read_item(
    tx: &Transaction<'_>,
    namespace: &Namespace,
    key: &str,
    now_text: &str,
    refresh: Option<SystemTime>,
) -> Result<Option<Item>, StoreError> {
    let prefix = namespace.to_dotted();
    let row = tx
        .prepare_cached(
            "SELECT value, created_at, updated_at, ttl_minutes FROM store
             WHERE prefix = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )
        .and_then(|mut s| {
            s.query_row(params![prefix, key, now_text], |r| {
                Ok((
                    value_text(r, 0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<f64>>(3)?,
                ))
            })
            .optional()
        })
        .map_err(|e| storage(format!("cannot read `{key}` in {namespace}"), e))?;
    let Some((value, created, updated, ttl_minutes)) = row else {
        return Ok(None);
    };
    if let (Some(now), Some(minutes)) = (refresh, ttl_minutes) {
        refresh_ttl(tx, &prefix, key, now, minutes)?;
    }
    decode_item(namespace.clone(), key.to_owned(), &value, created, updated).map(Some)
}

fn refresh_ttl(
    tx: &Transaction<'_>,
    prefix: &str,
    key: &str,
    now: SystemTime,
    minutes: f64,
) -> Result<(), StoreError> {
    let expires = Duration::try_from_secs_f64(minutes * 60.0)
        .ok()
        .and_then(|ttl| now.checked_add(ttl));
    tx.prepare_cached("UPDATE store SET expires_at = ?3 WHERE prefix = ?1 AND key = ?2")
        .and_then(|mut s| s.execute(params![prefix, key, expires.map(row::expiry)]))
        .map_err(|e| {
            storage(
                format!("cannot refresh the TTL of `{key}` in `{prefix}`"),
                e,
            )
        })?;
    Ok(())
}

fn decode_item(
    namespace: Namespace,
    key: String,
    value: &str,
    created: Option<String>,
    updated: Option<String>,
) -> Result<Item, StoreError> {
    let corrupt =
        |what: String, source: Box<dyn std::error::Error + Send + Sync>| StoreError::Corrupt {
            namespace: namespace.clone(),
            key: key.clone(),
            what,
            source,
        };
    let value = match serde_json::from_str::<Value>(value) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(corrupt(
                "its value".into(),
                format!("the stored value is {other}, not a JSON object").into(),
            ))
        }
        Err(e) => return Err(corrupt("its value".into(), Box::new(e))),
    };
    let time = |what: &str, text: Option<String>| -> Result<SystemTime, StoreError> {
        let text = text.unwrap_or_default();
        row::parse_timestamp(&text).ok_or_else(|| {
            corrupt(
                what.to_owned(),
                format!("`{text}` is not a `YYYY-MM-DD HH:MM:SS` UTC time").into(),
            )
        })
    };
    let created_at = time("created_at", created)?;
    let updated_at = time("updated_at", updated)?;
    Ok(Item {
        namespace,
        key,
        value,
        created_at,
        updated_at,
    })
}

/// The SQL condition on `column` selecting `prefix` and the namespaces under
/// it, with its two parameters (`None` for the root: everything).
fn prefix_condition(prefix: &Namespace, column: &str) -> Option<(String, [String; 2])> {
    if prefix.is_empty() {
        return None;
    }
    let dotted = prefix.to_dotted();
    // GLOB, not LIKE: LIKE ignores ASCII case. Its metacharacters are escaped
    // as one-character classes.
    let mut glob = String::with_capacity(dotted.len() + 2);
    for c in dotted.chars() {
        match c {
            '[' => glob.push_str("[[]"),
            '*' => glob.push_str("[*]"),
            '?' => glob.push_str("[?]"),
            c => glob.push(c),
        }
    }
    glob.push_str(".*");
    Some((format!("({column} = ? OR {column} GLOB ?)"), [dotted, glob]))
}

/// A search without a query: most recently updated first.
fn search_plain(
    tx: &Transaction<'_>,
    op: &SearchOp,
    now_text: &str,
    refresh: Option<SystemTime>,
) -> Result<Vec<SearchItem>, StoreError> {
    let mut sql = String::from(
        "SELECT prefix, key, value, created_at, updated_at, ttl_minutes FROM store
         WHERE (expires_at IS NULL OR expires_at > ?)",
    );
    let mut args: Vec<String> = vec![now_text.to_owned()];
    if let Some((condition, params)) = prefix_condition(&op.namespace_prefix, "prefix") {
        sql.push_str(" AND ");
        sql.push_str(&condition);
        args.extend(params);
    }
    sql.push_str(" ORDER BY updated_at DESC, rowid DESC");
    // Without a filter, SQLite pages; with one, rows are read until enough pass.
    if op.filter.is_empty() {
        sql.push_str(&format!(" LIMIT {} OFFSET {}", op.limit, op.offset));
    }
    let mut stmt = tx
        .prepare_cached(&sql)
        .map_err(|e| storage("cannot search".into(), e))?;
    let mut rows = stmt
        .query(rusqlite::params_from_iter(&args))
        .map_err(|e| storage("cannot search".into(), e))?;
    let mut found = Vec::new();
    let mut skip = if op.filter.is_empty() { 0 } else { op.offset };
    let mut refreshed = Vec::new();
    while found.len() < op.limit {
        let Some(row) = rows
            .next()
            .map_err(|e| storage("cannot search".into(), e))?
        else {
            break;
        };
        let raw = RawRow::read(row).map_err(|e| storage("cannot search".into(), e))?;
        let item = raw.decode()?;
        if !passes(&op.filter, &item)? {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if let (Some(_), Some(minutes)) = (refresh, raw.ttl_minutes) {
            refreshed.push((raw.prefix, item.key.clone(), minutes));
        }
        found.push(SearchItem { item, score: None });
    }
    drop(rows);
    if let Some(now) = refresh {
        for (prefix, key, minutes) in refreshed {
            refresh_ttl(tx, &prefix, &key, now, minutes)?;
        }
    }
    Ok(found)
}

fn passes(filter: &Filter, item: &Item) -> Result<bool, StoreError> {
    if filter.is_empty() {
        return Ok(true);
    }
    filter.matches(&item.namespace, &item.key, &item.value)
}

/// One `store` row as read.
struct RawRow {
    prefix: String,
    key: String,
    value: String,
    created_at: Option<String>,
    updated_at: Option<String>,
    ttl_minutes: Option<f64>,
}

impl RawRow {
    /// Reads `prefix, key, value, created_at, updated_at, ttl_minutes`.
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(RawRow {
            prefix: row.get(0)?,
            key: row.get(1)?,
            value: value_text(row, 2)?,
            created_at: row.get(3)?,
            updated_at: row.get(4)?,
            ttl_minutes: row.get(5)?,
        })
    }

    fn decode(&self) -> Result<Item, StoreError> {
        let namespace = Namespace::from_dotted(&self.prefix).map_err(|e| StoreError::Corrupt {
            namespace: Namespace::root(),
            key: self.key.clone(),
            what: format!("its namespace `{}`", self.prefix),
            source: Box::new(e),
        })?;
        decode_item(
            namespace,
            self.key.clone(),
            &self.value,
            self.created_at.clone(),
            self.updated_at.clone(),
        )
    }
}

/// A search with a query: every vector under the prefix scored (from the
/// cache of decoded vectors, or else in one pass over `store_vectors`), best
/// first; then each item at its best vector (its first in that order), if it
/// is live, filtered and paged.
fn search_query(
    tx: &Transaction<'_>,
    cache: &mut VectorCache,
    op: &SearchOp,
    query: &[f32],
    now_text: &str,
    refresh: Option<SystemTime>,
) -> Result<Vec<SearchItem>, StoreError> {
    let fail = |e| storage("cannot search".into(), e);
    let dotted = (!op.namespace_prefix.is_empty()).then(|| op.namespace_prefix.to_dotted());
    let ranked: Vec<Ranked> = match cache.score(tx, dotted.as_deref(), query).map_err(fail)? {
        Some(scored) => scored
            .into_iter()
            .map(|s| Ranked {
                score: s.score,
                rowid: s.rowid,
                at: Some(s.at),
            })
            .collect(),
        None => score_rows(tx, op, query)?,
    };
    // Best first, popped only as far as the page needs (heapify is linear).
    let mut ranked = std::collections::BinaryHeap::from(ranked);
    let mut owner = tx
        .prepare_cached("SELECT prefix, key FROM store_vectors WHERE rowid = ?1")
        .map_err(fail)?;
    let mut item_of = tx
        .prepare_cached(
            "SELECT prefix, key, value, created_at, updated_at, ttl_minutes FROM store
             WHERE prefix = ?1 AND key = ?2 AND (expires_at IS NULL OR expires_at > ?3)",
        )
        .map_err(fail)?;
    let mut seen: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
    let mut found = Vec::new();
    let mut skip = op.offset;
    let mut refreshed = Vec::new();
    while let Some(Ranked { score, rowid, at }) = ranked.pop() {
        if found.len() >= op.limit {
            break;
        }
        let id: (String, String) = match at.and_then(|at| cache.owner(at)) {
            Some((prefix, key)) => (prefix.to_owned(), key.to_owned()),
            None => owner
                .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(fail)?,
        };
        if seen.contains(&id) {
            continue;
        }
        // An item deleted by LangGraph leaves its vectors (it does not enable
        // foreign keys); an expired one is not returned.
        let raw = item_of
            .query_row(params![id.0, id.1, now_text], RawRow::read)
            .optional()
            .map_err(fail)?;
        seen.insert(id);
        let Some(raw) = raw else { continue };
        let item = raw.decode()?;
        if !passes(&op.filter, &item)? {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if let (Some(_), Some(minutes)) = (refresh, raw.ttl_minutes) {
            refreshed.push((raw.prefix, item.key.clone(), minutes));
        }
        found.push(SearchItem {
            item,
            score: Some(score),
        });
    }
    if let Some(now) = refresh {
        for (prefix, key, minutes) in refreshed {
            refresh_ttl(tx, &prefix, &key, now, minutes)?;
        }
    }
    Ok(found)
}

/// Every vector under the search's prefix scored, read from `store_vectors`
/// (one pass, no join): the search without the cache.
fn score_rows(
    tx: &Transaction<'_>,
    op: &SearchOp,
    query: &[f32],
) -> Result<Vec<Ranked>, StoreError> {
    let fail = |e| storage("cannot search".into(), e);
    let mut sql = String::from("SELECT rowid, embedding FROM store_vectors");
    let mut args: Vec<String> = Vec::new();
    if let Some((condition, params)) = prefix_condition(&op.namespace_prefix, "prefix") {
        sql.push_str(" WHERE ");
        sql.push_str(&condition);
        args.extend(params);
    }
    let mut ranked: Vec<Ranked> = Vec::new();
    let mut stmt = tx.prepare_cached(&sql).map_err(fail)?;
    let mut rows = stmt
        .query(rusqlite::params_from_iter(&args))
        .map_err(fail)?;
    while let Some(row) = rows.next().map_err(fail)? {
        let rowid: i64 = row.get(0).map_err(fail)?;
        let blob = row
            .get_ref(1)
            .and_then(|v| v.as_blob().map_err(Into::into))
            .map_err(fail)?;
        let Some(score) = row::blob_similarity(blob, query) else {
            return Err(bad_vector(tx, rowid, blob.len(), query.len()));
        };
        ranked.push(Ranked {
            score: if score.is_nan() { 0.0 } else { score },
            rowid,
            at: None,
        });
    }
    Ok(ranked)
}

/// A vector's score and rowid, ordered by score, then (ties) the later row;
/// with where the cache holds its prefix and key, when it was scored there.
struct Ranked {
    score: f64,
    rowid: i64,
    at: Option<(u32, u32)>,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then(self.rowid.cmp(&other.rowid))
    }
}

/// The error for a stored vector of another size than the query's.
fn bad_vector(tx: &Transaction<'_>, rowid: i64, bytes: usize, dims: usize) -> StoreError {
    let (prefix, key) = tx
        .query_row(
            "SELECT prefix, key FROM store_vectors WHERE rowid = ?1",
            [rowid],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .unwrap_or_default();
    StoreError::Corrupt {
        namespace: Namespace::from_dotted(&prefix).unwrap_or_else(|_| Namespace::root()),
        key,
        what: "a stored vector".into(),
        source: format!(
            "it has {bytes} bytes, the index's {dims} dimensions take {}; the database was \
             indexed with another `dims`",
            dims * 4
        )
        .into(),
    }
}

fn list_namespaces(
    tx: &Transaction<'_>,
    op: &ListNamespacesOp,
    now_text: &str,
) -> Result<Vec<Namespace>, StoreError> {
    let mut sql = String::from(
        "SELECT DISTINCT prefix FROM store WHERE (expires_at IS NULL OR expires_at > ?)",
    );
    let mut args: Vec<String> = vec![now_text.to_owned()];
    if let Some(prefix) = op.prefix.as_ref().filter(|p| !p.has_wildcard()) {
        if let Ok(ns) = Namespace::new(prefix.labels().to_vec()) {
            if let Some((condition, params)) = prefix_condition(&ns, "prefix") {
                sql.push_str(" AND ");
                sql.push_str(&condition);
                args.extend(params);
            }
        }
    }
    let mut stmt = tx
        .prepare_cached(&sql)
        .map_err(|e| storage("cannot list namespaces".into(), e))?;
    let prefixes = stmt
        .query_map(rusqlite::params_from_iter(&args), |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| storage("cannot list namespaces".into(), e))?;
    let namespaces = prefixes
        .iter()
        .map(|p| {
            Namespace::from_dotted(p).map_err(|e| StoreError::Corrupt {
                namespace: Namespace::root(),
                key: String::new(),
                what: format!("the namespace `{p}`"),
                source: Box::new(e),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(op.apply(namespaces))
}

/// The JSON text of a `value` column: TEXT as this crate writes it, or BLOB
/// as LangGraph does (`orjson.dumps` gives bytes).
fn value_text(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<String> {
    use rusqlite::types::{FromSqlError, ValueRef};
    match row.get_ref(i)? {
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            String::from_utf8(bytes.to_vec()).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    i,
                    rusqlite::types::Type::Blob,
                    Box::new(e),
                )
            })
        }
        other => Err(rusqlite::Error::FromSqlConversionFailure(
            i,
            other.data_type(),
            Box::new(FromSqlError::InvalidType),
        )),
    }
}

/// The cache, also after a job panicked while holding it (it is then
/// dropped: the panic may have left it half built).
fn lock(cache: &Mutex<VectorCache>) -> MutexGuard<'_, VectorCache> {
    cache.lock().unwrap_or_else(|poisoned| {
        cache.clear_poison();
        let mut cache = poisoned.into_inner();
        cache.invalidate();
        cache
    })
}

/// A storage failure of the store, with what was being done.
pub(crate) fn storage(context: String, source: rusqlite::Error) -> StoreError {
    StoreError::Storage(Box::new(crate::StorageError {
        context,
        source: Some(source),
    }))
}
