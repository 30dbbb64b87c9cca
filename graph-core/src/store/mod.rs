//! Long-term memory shared across threads: the [`Store`] (LangGraph's
//! `BaseStore`), holding JSON objects under a [`Namespace`] and a key, found
//! again by key, by filter, or by semantic search.
//!
//! Checkpoints are a thread's short-term memory; a store holds what every
//! thread may read: a user's preferences, facts learned, documents. Items are
//! JSON objects ([`Item`]) with their creation and update times; a
//! [`search`](Store::search) filters them by field ([`Filter`]) and, when the
//! store has an [`IndexConfig`], ranks them by the cosine similarity of their
//! embedded texts to a query. Items may expire ([`TtlConfig`], [`Ttl`]).
//!
//! ```
//! use graph_core::store::{Filter, Namespace, PutOp, SearchOp};
//! use serde_json::json;
//!
//! let memories = Namespace::new(["memories", "alice"])?;
//! let put = PutOp::put(memories.clone(), "diet", json!({"fact": "vegetarian", "since": 2019}))?;
//! let search = SearchOp::new(memories)
//!     .query("what does alice eat?")
//!     .filter(Filter::new().gte("since", 2000))
//!     .limit(3);
//! assert_eq!(search.limit, 3);
//! assert!(put.validate().is_ok());
//! # Ok::<(), graph_core::store::StoreError>(())
//! ```
//!
//! The graph reaches the store it was compiled with through its context.
//! Writes to a store are not part of a thread's checkpoints: time travel
//! (resuming from an earlier checkpoint) does not undo them, as in LangGraph.

#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod conformance;
mod embed;
mod error;
mod fields;
mod filter;
mod item;
mod items;
mod memory;
mod namespace;
mod op;
mod ttl;

pub use embed::{
    cosine_similarity, indexed_texts, Embedding, EmbeddingError, Embeddings, HashEmbeddings,
    IndexConfig, IndexedText, TextPlan,
};
pub use error::StoreError;
pub use fields::FieldPath;
pub use filter::{Condition, Filter, Operator};
pub use item::{Item, SearchItem};
pub use memory::InMemoryStore;
pub use namespace::{Namespace, NamespacePattern};
pub use op::{GetOp, ListNamespacesOp, Op, OpResult, PutIndex, PutOp, SearchOp, Ttl};
pub use ttl::{TtlConfig, TtlSweeper};

use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;

/// How a store is set up: semantic search and expiry. Every backend takes one.
#[derive(Clone, Debug, Default)]
pub struct StoreConfig {
    /// Semantic search (`None`: searches ignore queries, as in LangGraph).
    pub index: Option<IndexConfig>,
    /// Expiry of items.
    pub ttl: TtlConfig,
}

impl StoreConfig {
    /// No index, items never expire.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the index.
    pub fn index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// Sets the TTL configuration.
    pub fn ttl(mut self, ttl: TtlConfig) -> Self {
        self.ttl = ttl;
        self
    }
}

/// A store of long-term memory (LangGraph's `BaseStore`).
///
/// A backend implements [`batch`](Store::batch) and
/// [`sweep_ttl`](Store::sweep_ttl); the single-operation methods run a batch
/// of one (a backend may override them with faster paths of the same
/// meaning). [`StoreExt`] adds typed access. The `conformance` module (feature
/// `test-util`) is the test suite every backend passes.
///
/// # A batch's meaning
///
/// - Every operation is checked first ([`Op::validate`]); an invalid one fails
///   the batch before anything is read or written.
/// - Reads (`Get`, `Search`, `ListNamespaces`) see the store as it was before
///   the batch's writes (as LangGraph's stores run them).
/// - Puts apply after the reads, in order; a later put of the same key wins.
///   Every embedding is computed before the first write, so a failed
///   embedding writes nothing.
/// - An updated item keeps its `created_at`; only texts that changed (or moved
///   to another field name) are embedded again.
/// - Results come back in the order of the operations.
///
/// # Searches
///
/// Without a query (or without an index), matching items come most recently
/// updated first (LangGraph's SQLite and PostgreSQL stores; its in-memory store
/// keeps insertion order). With a query, only items with embedded texts are
/// found, best first; an item's score is the highest cosine similarity of the
/// query to any of its texts.
pub trait Store: Send + Sync + 'static {
    /// Runs `ops` (see the trait's docs), returning one result per op.
    fn batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>, StoreError>>;

    /// Deletes every expired item now, returning how many.
    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>>;

    /// The item `key` in `namespace`, if there is one (and it has not expired).
    fn get<'a>(
        &'a self,
        namespace: &'a Namespace,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Item>, StoreError>> {
        self.get_with(GetOp::new(namespace.clone(), key))
    }

    /// Runs one [`GetOp`].
    fn get_with(&self, op: GetOp) -> BoxFuture<'_, Result<Option<Item>, StoreError>> {
        Box::pin(async move {
            match one(self.batch(vec![Op::Get(op)]).await?)? {
                OpResult::Get(item) => Ok(item),
                other => Err(wrong_result("get", &other)),
            }
        })
    }

    /// Stores `value` (a JSON object) as `key` in `namespace`, indexed as the
    /// store's index says, with the store's default TTL.
    fn put<'a>(
        &'a self,
        namespace: &'a Namespace,
        key: &'a str,
        value: Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let op = PutOp::put(namespace.clone(), key, value)?;
            self.put_with(op).await
        })
    }

    /// Runs one [`PutOp`] (a put with index and TTL choices, or a delete).
    fn put_with(&self, op: PutOp) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            match one(self.batch(vec![Op::Put(op)]).await?)? {
                OpResult::Put => Ok(()),
                other => Err(wrong_result("put", &other)),
            }
        })
    }

    /// Deletes `key` in `namespace` (nothing happens if it is absent).
    fn delete<'a>(
        &'a self,
        namespace: &'a Namespace,
        key: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.put_with(PutOp::delete(namespace.clone(), key))
    }

    /// Runs one [`SearchOp`].
    fn search(&self, op: SearchOp) -> BoxFuture<'_, Result<Vec<SearchItem>, StoreError>> {
        Box::pin(async move {
            match one(self.batch(vec![Op::Search(op)]).await?)? {
                OpResult::Search(items) => Ok(items),
                other => Err(wrong_result("search", &other)),
            }
        })
    }

    /// Runs one [`ListNamespacesOp`].
    fn list_namespaces(
        &self,
        op: ListNamespacesOp,
    ) -> BoxFuture<'_, Result<Vec<Namespace>, StoreError>> {
        Box::pin(async move {
            match one(self.batch(vec![Op::ListNamespaces(op)]).await?)? {
                OpResult::ListNamespaces(namespaces) => Ok(namespaces),
                other => Err(wrong_result("list_namespaces", &other)),
            }
        })
    }
}

fn one(mut results: Vec<OpResult>) -> Result<OpResult, StoreError> {
    match (results.pop(), results.is_empty()) {
        (Some(result), true) => Ok(result),
        _ => Err(StoreError::InvalidInput(
            "the store's batch returned another number of results than operations".into(),
        )),
    }
}

fn wrong_result(op: &str, got: &OpResult) -> StoreError {
    StoreError::InvalidInput(format!(
        "the store's batch answered a {op} with {got:?}; its batch returns results out of order"
    ))
}

/// A store value or a shared one (`Arc<dyn Store>`), as
/// [`CompileOptions::store`](crate::CompileOptions::store) takes it.
pub trait IntoStore {
    /// The shared store.
    fn into_store(self) -> Arc<dyn Store>;
}

impl<S: Store> IntoStore for S {
    fn into_store(self) -> Arc<dyn Store> {
        Arc::new(self)
    }
}

impl IntoStore for Arc<dyn Store> {
    fn into_store(self) -> Arc<dyn Store> {
        self
    }
}

/// Typed access to any [`Store`]: values in and out through serde.
///
/// ```
/// use graph_core::store::{Namespace, StoreExt};
/// # fn f(store: &dyn graph_core::store::Store) {}
/// // store.put_typed(&ns, "prefs", &Prefs { .. }).await?;
/// // let prefs: Option<Prefs> = store.get_typed(&ns, "prefs").await?;
/// ```
pub trait StoreExt: Store {
    /// Stores `value`, serialised to a JSON object ([`StoreError::NotAnObject`]
    /// when it serialises to anything else).
    fn put_typed<'a, T: serde::Serialize + ?Sized>(
        &'a self,
        namespace: &'a Namespace,
        key: &'a str,
        value: &T,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let value = serde_json::to_value(value).map_err(|source| StoreError::NotSerializable {
            type_name: std::any::type_name::<T>(),
            source,
        });
        Box::pin(async move { self.put(namespace, key, value?).await })
    }

    /// The item's value as a `T` ([`StoreError::DoesNotFit`] naming the item
    /// and the type when the stored value does not fit).
    fn get_typed<'a, T: serde::de::DeserializeOwned + 'a>(
        &'a self,
        namespace: &'a Namespace,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<T>, StoreError>> {
        Box::pin(async move {
            match self.get(namespace, key).await? {
                Some(item) => item.value_as().map(Some),
                None => Ok(None),
            }
        })
    }
}

impl<S: Store + ?Sized> StoreExt for S {}
