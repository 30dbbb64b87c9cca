//! [`PostgresStore`]: a [`Store`] in LangGraph's PostgreSQL store tables.
//!
//! ```no_run
//! use graph_core::store::{HashEmbeddings, IndexConfig, Namespace, SearchOp, Store, StoreConfig};
//! use graph_postgres::PostgresStore;
//! use serde_json::json;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let index = IndexConfig::new(64, HashEmbeddings::new(64)).fields(["text"])?;
//! let store = PostgresStore::connect("postgres://app@localhost/app", StoreConfig::new().index(index)).await?;
//! let alice = Namespace::new(["memories", "alice"])?;
//! store.put(&alice, "diet", json!({"text": "alice is vegetarian"})).await?;
//! let found = store.search(SearchOp::new(alice).query("what does alice eat")).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! The tables of `langgraph-checkpoint-postgres`'s `PostgresStore`, with its
//! migrations tables (`store_migrations`, `vector_migrations`) at its versions:
//! `store(prefix, key, value jsonb, created_at, updated_at, expires_at,
//! ttl_minutes)` and, with an [`IndexConfig`], `store_vectors(prefix, key,
//! field_name, embedding, ...)`. One difference: `ttl_minutes` is a float
//! (LangGraph's is `INT`, which would round TTLs shorter than a minute to
//! zero); a table LangGraph created is altered so. LangGraph reads and writes
//! it as before.
//!
//! # Vector search: pgvector, or the fallback
//!
//! When the server has the pgvector extension ([`VectorSearch::Pgvector`]),
//! the store creates it and LangGraph's layout: `embedding vector(dims)` with
//! an HNSW index for cosine distance, and a query is scored in the server as
//! LangGraph scores it, `1 - (embedding <=> query)`. LangGraph's Python store
//! then searches what this one wrote, and the other way round.
//!
//! Without pgvector ([`VectorSearch::Fallback`]) the vectors go in a `real[]`
//! column of the same table, and a query reads the vectors under its
//! namespace prefix and scores them in Rust (a scan, like a search without an
//! ANN index). Results and scores are the same; LangGraph's Python store
//! cannot search these vectors (it needs pgvector), but reads the items. A
//! database keeps the kind of vector table it was created with.
//!
//! # Transactions
//!
//! A batch is one transaction on a pooled connection: its reads, then its
//! writes. Embeddings are computed before it starts (a failing model writes
//! nothing); texts whose vector is already stored under the same field are
//! not embedded again. Writers of one key are serialised by the item's row
//! lock; times are the server's (`now()`), so workers with skewed clocks
//! agree on expiry.

mod schema;

use crate::PgError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures::future::BoxFuture;
use graph_core::store::{
    cosine_similarity, Condition, Filter, IndexConfig, IndexedText, Item, ListNamespacesOp,
    Namespace, Op, OpResult, PutOp, SearchItem, SearchOp, Store, StoreConfig, StoreError, TextPlan,
    TtlConfig,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};
use tokio_postgres::types::ToSql;
use tokio_postgres::Transaction;

/// How a [`PostgresStore`] searches vectors (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorSearch {
    /// The store has no index.
    NoIndex,
    /// pgvector: `vector(dims)` columns, scored in the server.
    Pgvector,
    /// No pgvector: `real[]` columns, scored in Rust.
    Fallback,
}

/// A [`Store`] in PostgreSQL, in the tables of LangGraph's Python
/// `PostgresStore` (see the [module docs](self)). Cloning shares the pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    index: Option<IndexConfig>,
    ttl: TtlConfig,
    vectors: VectorSearch,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore")
            .field("pool", &self.pool.status())
            .field("index", &self.index)
            .field("ttl", &self.ttl)
            .field("vectors", &self.vectors)
            .finish()
    }
}

impl PostgresStore {
    /// Connects to `url` (a `postgres://` URL or `key=value` string) without
    /// TLS, with a pool of up to 16 connections, and creates or migrates the
    /// store tables.
    pub async fn connect(url: &str, config: StoreConfig) -> Result<Self, StoreError> {
        let pg = tokio_postgres::Config::from_str(url).map_err(|e| storage(PgError::Config(e)))?;
        Self::connect_with(pg, config).await
    }

    /// As [`connect`](Self::connect), with a connection config.
    pub async fn connect_with(
        mut pg: tokio_postgres::Config,
        config: StoreConfig,
    ) -> Result<Self, StoreError> {
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(Duration::from_secs(10));
        }
        if pg.get_application_name().is_none() {
            pg.application_name("stategraph");
        }
        let manager = Manager::from_config(
            pg,
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .build()
            .map_err(|e| storage(PgError::Build(e)))?;
        Self::from_pool(pool, config).await
    }

    /// A store on connections of `pool` (a PostgresSaver's [`pool`](crate::PostgresSaver::pool),
    /// say); creates or migrates the store tables.
    pub async fn from_pool(pool: Pool, config: StoreConfig) -> Result<Self, StoreError> {
        let mut client = pool.get().await.map_err(|e| storage(PgError::Connect(e)))?;
        let dims = config.index.as_ref().map(IndexConfig::dims);
        let vectors = schema::prepare(&mut client, dims).await.map_err(storage)?;
        Ok(PostgresStore {
            pool,
            index: config.index,
            ttl: config.ttl,
            vectors,
        })
    }

    /// How this store searches vectors.
    pub fn vector_search(&self) -> VectorSearch {
        self.vectors
    }

    /// The connection pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn run_batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        for op in &ops {
            op.validate()?;
        }
        let mut queries: Vec<Option<Vec<f32>>> = Vec::with_capacity(ops.len());
        for op in &ops {
            queries.push(match (op, &self.index) {
                (Op::Search(SearchOp { query: Some(q), .. }), Some(index)) => {
                    Some(index.embed_query(q).await?.to_vec())
                }
                _ => None,
            });
        }
        let puts = Op::last_puts(&ops);
        let mut reuse = true;
        loop {
            let writes = self.plan_writes(&ops, &puts, reuse).await?;
            let mut client = self
                .pool
                .get()
                .await
                .map_err(|e| storage(PgError::Connect(e)))?;
            let tx = client
                .transaction()
                .await
                .map_err(query_failed("cannot start a transaction"))?;
            match self.run_in(&tx, &ops, &queries, &writes).await? {
                Some(results) => {
                    tx.commit()
                        .await
                        .map_err(query_failed("cannot commit the batch"))?;
                    return Ok(results);
                }
                None if reuse => reuse = false,
                None => {
                    return Err(StoreError::InvalidInput(
                        "an item changed while its batch was written; try again".into(),
                    ))
                }
            }
        }
    }

    /// The batch in `tx`; `None` when a reused vector's item changed meanwhile.
    async fn run_in(
        &self,
        tx: &Transaction<'_>,
        ops: &[Op],
        queries: &[Option<Vec<f32>>],
        writes: &[Write],
    ) -> Result<Option<Vec<OpResult>>, StoreError> {
        let mut results = Vec::with_capacity(ops.len());
        for (op, query) in ops.iter().zip(queries) {
            results.push(match op {
                Op::Get(get) => OpResult::Get(
                    read_item(
                        tx,
                        &get.namespace,
                        &get.key,
                        self.ttl.refresh(get.refresh_ttl),
                    )
                    .await?,
                ),
                Op::Search(search) => {
                    OpResult::Search(self.search_in(tx, search, query.as_deref()).await?)
                }
                Op::ListNamespaces(list) => {
                    OpResult::ListNamespaces(list_namespaces(tx, list).await?)
                }
                Op::Put(_) => OpResult::Put,
            });
        }
        for write in writes {
            let Op::Put(put) = &ops[write.op] else {
                continue;
            };
            if !self.write_put(tx, put, write).await? {
                return Ok(None);
            }
        }
        Ok(Some(results))
    }

    /// What each put writes, embedded here (reusing stored vectors of
    /// unchanged texts when `reuse`).
    async fn plan_writes(
        &self,
        ops: &[Op],
        puts: &[usize],
        reuse: bool,
    ) -> Result<Vec<Write>, StoreError> {
        let mut writes = Vec::with_capacity(puts.len());
        let mut texts: Vec<Vec<IndexedText>> = Vec::with_capacity(puts.len());
        for &i in puts {
            let Op::Put(put) = &ops[i] else { continue };
            texts.push(match (&put.value, &self.index) {
                (Some(value), Some(index)) => index.texts_to_embed(value, &put.index),
                _ => Vec::new(),
            });
            writes.push(Write {
                op: i,
                vectors: Vec::new(),
                expect_value: None,
                ttl_minutes: self.ttl.resolve(put.ttl).map(|t| t.as_secs_f64() / 60.0),
            });
        }
        let Some(index) = &self.index else {
            return Ok(writes);
        };
        let mut to_embed = Vec::new();
        let mut slots = Vec::new();
        for (w, (write, indexed)) in writes.iter_mut().zip(texts).enumerate() {
            let Op::Put(put) = &ops[write.op] else {
                continue;
            };
            let stored = if reuse && !indexed.is_empty() {
                self.read_stored(put).await?
            } else {
                None
            };
            let old = stored.as_ref();
            let plans = index.keep_or_embed(
                indexed,
                &put.index,
                old.map(|s| (&s.value, |field: &str| s.vectors.get(field))),
            );
            for plan in plans {
                match plan {
                    TextPlan::Keep { field, vector } => {
                        write.expect_value = old.map(|s| s.text.clone());
                        write.vectors.push((field, vector.clone()));
                    }
                    TextPlan::Embed(IndexedText { field, text }) => {
                        slots.push((w, field));
                        to_embed.push(text);
                    }
                }
            }
        }
        let vectors = index.embed_documents(&to_embed).await?;
        for ((w, field), vector) in slots.into_iter().zip(vectors) {
            writes[w].vectors.push((field, vector.to_vec()));
        }
        Ok(writes)
    }

    /// The live item a put replaces, with its vectors.
    async fn read_stored(&self, put: &PutOp) -> Result<Option<Stored>, StoreError> {
        if self.vectors == VectorSearch::NoIndex {
            return Ok(None);
        }
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| storage(PgError::Connect(e)))?;
        let prefix = put.namespace.to_dotted();
        let row = client
            .query_opt(
                "SELECT value::text FROM store WHERE prefix = $1 AND key = $2
                 AND (expires_at IS NULL OR expires_at > now())",
                &[&prefix, &put.key],
            )
            .await
            .map_err(query_failed("cannot read an item"))?;
        let Some(row) = row else { return Ok(None) };
        let text: String = row.get(0);
        let Ok(Value::Object(value)) = serde_json::from_str(&text) else {
            return Ok(None);
        };
        let rows = client
            .query(
                "SELECT field_name, embedding::real[] FROM store_vectors WHERE prefix = $1 AND key = $2",
                &[&prefix, &put.key],
            )
            .await
            .map_err(query_failed("cannot read an item's vectors"))?;
        let vectors = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<HashMap<String, Vec<f32>>, tokio_postgres::Error>>()
            .map_err(query_failed("cannot read an item's vectors"))?;
        Ok(Some(Stored {
            text,
            value,
            vectors,
        }))
    }

    /// Writes one put; `false` when a reused vector's item changed.
    async fn write_put(
        &self,
        tx: &Transaction<'_>,
        put: &PutOp,
        write: &Write,
    ) -> Result<bool, StoreError> {
        let prefix = put.namespace.to_dotted();
        let Some(value) = &put.value else {
            tx.execute(
                "DELETE FROM store WHERE prefix = $1 AND key = $2",
                &[&prefix, &put.key],
            )
            .await
            .map_err(query_failed("cannot delete an item"))?;
            return Ok(true);
        };
        if let Some(expected) = &write.expect_value {
            // Locks the row: writers of one key take turns from here.
            let current: Option<String> = tx
                .query_opt(
                    "SELECT value::text FROM store WHERE prefix = $1 AND key = $2 FOR UPDATE",
                    &[&prefix, &put.key],
                )
                .await
                .map_err(query_failed("cannot read an item"))?
                .map(|r| r.get(0));
            if current.as_ref() != Some(expected) {
                return Ok(false);
            }
        }
        let text = serde_json::to_string(value).map_err(|source| StoreError::NotSerializable {
            type_name: "serde_json::Map",
            source,
        })?;
        tx.execute(
            "INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
             VALUES ($1, $2, $3::text::jsonb, now(), now(),
                     now() + make_interval(secs => $4::float8 * 60), $4::float8)
             ON CONFLICT (prefix, key) DO UPDATE SET
                value = EXCLUDED.value,
                created_at = CASE WHEN store.expires_at IS NOT NULL AND store.expires_at <= now()
                    THEN EXCLUDED.created_at ELSE store.created_at END,
                updated_at = EXCLUDED.updated_at,
                expires_at = EXCLUDED.expires_at,
                ttl_minutes = EXCLUDED.ttl_minutes",
            &[&prefix, &put.key, &text, &write.ttl_minutes],
        )
        .await
        .map_err(query_failed("cannot write an item"))?;
        if self.vectors == VectorSearch::NoIndex {
            return Ok(true);
        }
        tx.execute(
            "DELETE FROM store_vectors WHERE prefix = $1 AND key = $2",
            &[&prefix, &put.key],
        )
        .await
        .map_err(query_failed("cannot replace an item's vectors"))?;
        if !write.vectors.is_empty() {
            let insert = match self.vectors {
                VectorSearch::Pgvector => {
                    "INSERT INTO store_vectors (prefix, key, field_name, embedding)
                     VALUES ($1, $2, $3, $4::real[]::vector)"
                }
                _ => {
                    "INSERT INTO store_vectors (prefix, key, field_name, embedding)
                     VALUES ($1, $2, $3, $4::real[])"
                }
            };
            let insert = tx
                .prepare(insert)
                .await
                .map_err(query_failed("cannot write an item's vectors"))?;
            for (field, vector) in &write.vectors {
                tx.execute(&insert, &[&prefix, &put.key, field, vector])
                    .await
                    .map_err(query_failed("cannot write an item's vectors"))?;
            }
        }
        Ok(true)
    }

    async fn search_in(
        &self,
        tx: &Transaction<'_>,
        op: &SearchOp,
        query: Option<&[f32]>,
    ) -> Result<Vec<SearchItem>, StoreError> {
        let refresh = self.ttl.refresh(op.refresh_ttl);
        let mut sql = Sql::default();
        let fallback = query.is_some() && self.vectors != VectorSearch::Pgvector;
        let score = match (query, self.vectors) {
            (Some(q), VectorSearch::Pgvector) => {
                let q = sql.param(q.to_vec());
                format!("max(1 - (sv.embedding <=> {q}::real[]::vector))")
            }
            // One row per vector, scored here.
            (Some(_), _) => "sv.embedding".to_owned(),
            (None, _) => "NULL::float8".to_owned(),
        };
        let join = if query.is_some() {
            "JOIN store_vectors sv ON sv.prefix = s.prefix AND sv.key = s.key"
        } else {
            ""
        };
        let mut text = format!(
            "SELECT s.prefix, s.key, s.value::text, s.created_at, s.updated_at, {score} FROM store s {join}
             WHERE (s.expires_at IS NULL OR s.expires_at > now())"
        );
        sql.namespace(&mut text, &op.namespace_prefix);
        sql.prefilter(&mut text, &op.filter);
        let exact = op.filter.is_empty() && !fallback;
        match (query, self.vectors) {
            (Some(_), VectorSearch::Pgvector) => text.push_str(
                " GROUP BY s.prefix, s.key ORDER BY 6 DESC, s.updated_at DESC, s.key DESC",
            ),
            (Some(_), _) => {}
            (None, _) => text.push_str(" ORDER BY s.updated_at DESC, s.prefix DESC, s.key DESC"),
        }
        if exact {
            text.push_str(&format!(" LIMIT {} OFFSET {}", op.limit, op.offset));
        }
        let rows = tx
            .query(text.as_str(), &sql.refs())
            .await
            .map_err(query_failed("cannot search"))?;
        let mut candidates: Vec<(Item, Option<f64>)> = Vec::with_capacity(rows.len());
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        for row in &rows {
            let (Some(q), true) = (query, fallback) else {
                let score = query.map(|_| row.get::<_, f64>(5));
                candidates.push((decode(row)?, score));
                continue;
            };
            let id: (String, String) = (row.get(0), row.get(1));
            let vector: Vec<f32> = row
                .try_get(5)
                .map_err(query_failed("cannot read a stored vector"))?;
            let at = match seen.get(&id) {
                Some(&at) => at,
                None => {
                    candidates.push((decode(row)?, Some(f64::MIN)));
                    seen.insert(id, candidates.len() - 1);
                    candidates.len() - 1
                }
            };
            let (item, best) = &mut candidates[at];
            let score = fallback_score(item, &vector, q)?;
            *best = best.map(|b| b.max(score));
        }
        if fallback {
            candidates.sort_by(|a, b| {
                let (sa, sb) = (a.1.unwrap_or(f64::MIN), b.1.unwrap_or(f64::MIN));
                sb.total_cmp(&sa)
                    .then(b.0.updated_at.cmp(&a.0.updated_at))
                    .then(b.0.key.cmp(&a.0.key))
            });
        }
        let mut skip = if exact { 0 } else { op.offset };
        let mut found = Vec::new();
        for (item, score) in candidates {
            if found.len() >= op.limit {
                break;
            }
            if !op.filter.is_empty()
                && !op.filter.matches(&item.namespace, &item.key, &item.value)?
            {
                continue;
            }
            if skip > 0 {
                skip -= 1;
                continue;
            }
            found.push(SearchItem { item, score });
        }
        if refresh {
            for item in &found {
                refresh_ttl(tx, &item.namespace.to_dotted(), &item.key).await?;
            }
        }
        Ok(found)
    }
}

impl Store for PostgresStore {
    fn batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>, StoreError>> {
        Box::pin(self.run_batch(ops))
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        Box::pin(async move {
            let client = self
                .pool
                .get()
                .await
                .map_err(|e| storage(PgError::Connect(e)))?;
            // Vectors go with their items (ON DELETE CASCADE).
            client
                .execute(
                    "DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at <= now()",
                    &[],
                )
                .await
                .map_err(query_failed("cannot sweep expired items"))
        })
    }
}

/// The cosine similarity of `query` to one stored vector of `item`.
fn fallback_score(item: &Item, vector: &[f32], query: &[f32]) -> Result<f64, StoreError> {
    if vector.len() != query.len() {
        return Err(StoreError::Corrupt {
            namespace: item.namespace.clone(),
            key: item.key.clone(),
            what: "a stored vector".into(),
            source: format!(
                "it has {} dimensions, the index {}; the table was filled with another `dims`",
                vector.len(),
                query.len()
            )
            .into(),
        });
    }
    Ok(cosine_similarity(vector, query))
}

/// A statement's text parameters, numbered as they are added.
#[derive(Default)]
struct Sql {
    params: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Sql {
    fn param(&mut self, value: impl ToSql + Sync + Send + 'static) -> String {
        self.params.push(Box::new(value));
        format!("${}", self.params.len())
    }

    fn refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.params
            .iter()
            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }

    /// `prefix` and the namespaces under it (LangGraph's condition: equal, or
    /// an escaped `LIKE 'prefix.%'`).
    fn namespace(&mut self, text: &mut String, prefix: &Namespace) {
        if prefix.is_empty() {
            return;
        }
        let dotted = prefix.to_dotted();
        let like = format!(
            "{}.%",
            dotted
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let (a, b) = (self.param(dotted), self.param(like));
        text.push_str(&format!(
            " AND (s.prefix = {a} OR s.prefix LIKE {b} ESCAPE '\\')"
        ));
    }

    /// Equality on strings, numbers and booleans, checked by the server first
    /// (a superset: the filter itself decides after).
    fn prefilter(&mut self, text: &mut String, filter: &Filter) {
        for (field, condition) in filter.conditions() {
            if let Condition::Matches(
                operand @ (Value::String(_) | Value::Number(_) | Value::Bool(_)),
            ) = condition
            {
                let (f, v) = (self.param(field.clone()), self.param(operand.to_string()));
                text.push_str(&format!(" AND s.value -> {f}::text = {v}::text::jsonb"));
            }
        }
    }
}

/// What one put writes, prepared before its transaction.
struct Write {
    op: usize,
    vectors: Vec<(String, Vec<f32>)>,
    expect_value: Option<String>,
    ttl_minutes: Option<f64>,
}

struct Stored {
    text: String,
    value: Map<String, Value>,
    vectors: HashMap<String, Vec<f32>>,
}

async fn read_item(
    tx: &Transaction<'_>,
    namespace: &Namespace,
    key: &str,
    refresh: bool,
) -> Result<Option<Item>, StoreError> {
    let prefix = namespace.to_dotted();
    let row = tx
        .query_opt(
            "SELECT prefix, key, value::text, created_at, updated_at FROM store s
             WHERE prefix = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > now())",
            &[&prefix, &key],
        )
        .await
        .map_err(query_failed("cannot read an item"))?;
    let Some(row) = row else { return Ok(None) };
    if refresh {
        refresh_ttl(tx, &prefix, key).await?;
    }
    decode(&row).map(Some)
}

async fn refresh_ttl(tx: &Transaction<'_>, prefix: &str, key: &str) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE store SET expires_at = now() + make_interval(secs => ttl_minutes * 60)
         WHERE prefix = $1 AND key = $2 AND ttl_minutes IS NOT NULL",
        &[&prefix, &key],
    )
    .await
    .map_err(query_failed("cannot refresh an item's TTL"))?;
    Ok(())
}

/// An item from `prefix, key, value::text, created_at, updated_at`.
fn decode(row: &tokio_postgres::Row) -> Result<Item, StoreError> {
    let prefix: String = row.get(0);
    let key: String = row.get(1);
    let namespace = Namespace::from_dotted(&prefix).map_err(|e| StoreError::Corrupt {
        namespace: Namespace::root(),
        key: key.clone(),
        what: format!("its namespace `{prefix}`"),
        source: Box::new(e),
    })?;
    let text: String = row.get(2);
    let value = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        other => {
            return Err(StoreError::Corrupt {
                namespace,
                key,
                what: "its value".into(),
                source: match other {
                    Err(e) => Box::new(e),
                    Ok(v) => format!("the stored value is {v}, not a JSON object").into(),
                },
            })
        }
    };
    let time = |i: usize| -> Result<SystemTime, StoreError> {
        row.try_get::<_, SystemTime>(i)
            .map_err(|e| StoreError::Corrupt {
                namespace: namespace.clone(),
                key: key.clone(),
                what: if i == 3 { "created_at" } else { "updated_at" }.into(),
                source: Box::new(e),
            })
    };
    let (created_at, updated_at) = (time(3)?, time(4)?);
    Ok(Item {
        namespace,
        key,
        value,
        created_at,
        updated_at,
    })
}

async fn list_namespaces(
    tx: &Transaction<'_>,
    op: &ListNamespacesOp,
) -> Result<Vec<Namespace>, StoreError> {
    let mut sql = Sql::default();
    let mut text = "SELECT DISTINCT s.prefix FROM store s
        WHERE (s.expires_at IS NULL OR s.expires_at > now())"
        .to_owned();
    if let Some(prefix) = op.prefix.as_ref().filter(|p| !p.has_wildcard()) {
        if let Ok(ns) = Namespace::new(prefix.labels().to_vec()) {
            sql.namespace(&mut text, &ns);
        }
    }
    let rows = tx
        .query(text.as_str(), &sql.refs())
        .await
        .map_err(query_failed("cannot list namespaces"))?;
    let namespaces = rows
        .iter()
        .map(|r| {
            let p: String = r.get(0);
            Namespace::from_dotted(&p).map_err(|e| StoreError::Corrupt {
                namespace: Namespace::root(),
                key: String::new(),
                what: format!("the namespace `{p}`"),
                source: Box::new(e),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(op.apply(namespaces))
}

fn storage(e: PgError) -> StoreError {
    StoreError::Storage(Box::new(e))
}

fn query_failed(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> StoreError {
    move |source| {
        storage(PgError::Query {
            context: context.to_owned(),
            source,
        })
    }
}
