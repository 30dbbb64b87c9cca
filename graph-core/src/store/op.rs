//! The operations a store runs ([`Op`]) and their results ([`OpResult`]), as
//! LangGraph's `GetOp`, `PutOp`, `SearchOp` and `ListNamespacesOp`.

use super::error::{json_kind, StoreError};
use super::fields::FieldPath;
use super::filter::Filter;
use super::item::{Item, SearchItem};
use super::namespace::{Namespace, NamespacePattern};
use serde_json::{Map, Value};
use std::time::Duration;

/// Reads one item.
#[derive(Clone, Debug, PartialEq)]
pub struct GetOp {
    /// The item's namespace.
    pub namespace: Namespace,
    /// The item's key.
    pub key: String,
    /// Whether the read restarts the item's TTL; `None`: the store's
    /// [`TtlConfig::refresh_on_read`](super::TtlConfig::refresh_on_read).
    pub refresh_ttl: Option<bool>,
}

impl GetOp {
    /// Reads `key` in `namespace`.
    pub fn new(namespace: Namespace, key: impl Into<String>) -> Self {
        GetOp {
            namespace,
            key: key.into(),
            refresh_ttl: None,
        }
    }

    /// Sets whether the read restarts the item's TTL.
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = Some(refresh);
        self
    }
}

/// Which texts of a put item are embedded for semantic search (LangGraph's
/// `index` argument).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PutIndex {
    /// The store's [`IndexConfig`](super::IndexConfig) fields (LangGraph's
    /// `None`); nothing when the store has no index.
    #[default]
    StoreFields,
    /// Not embedded: the item is found by `get` and by searches without a
    /// query, never by a semantic search (LangGraph's `False`).
    Off,
    /// These paths instead of the store's fields.
    Fields(Vec<FieldPath>),
}

impl PutIndex {
    /// [`PutIndex::Fields`] from path strings.
    pub fn fields<I, S>(paths: I) -> Result<Self, StoreError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        paths
            .into_iter()
            .map(|p| FieldPath::parse(p.as_ref()))
            .collect::<Result<_, _>>()
            .map(PutIndex::Fields)
    }
}

/// How long a put item lives without being read or written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ttl {
    /// The store's [`TtlConfig::default_ttl`](super::TtlConfig::default_ttl)
    /// (none when unset).
    #[default]
    StoreDefault,
    /// Never expires.
    Never,
    /// Expires this long after it was last written (or, with refresh on read,
    /// read). LangGraph counts TTLs in minutes: `Duration::from_secs(60 * m)`.
    After(Duration),
}

/// Writes (or, without a value, deletes) one item.
#[derive(Clone, Debug, PartialEq)]
pub struct PutOp {
    /// The item's namespace (not the root, not under `langgraph`).
    pub namespace: Namespace,
    /// The item's key.
    pub key: String,
    /// The new value; `None` deletes the item.
    pub value: Option<Map<String, Value>>,
    /// Which texts to embed.
    pub index: PutIndex,
    /// How long the item lives.
    pub ttl: Ttl,
}

impl PutOp {
    /// Stores `value` (a JSON object, else [`StoreError::NotAnObject`]) as `key`
    /// in `namespace`.
    pub fn put(
        namespace: Namespace,
        key: impl Into<String>,
        value: Value,
    ) -> Result<Self, StoreError> {
        let (key, map) = object_value(&namespace, key.into(), value)?;
        Ok(PutOp {
            namespace,
            key,
            value: Some(map),
            index: PutIndex::StoreFields,
            ttl: Ttl::StoreDefault,
        })
    }

    /// Stores an object value.
    pub fn put_object(
        namespace: Namespace,
        key: impl Into<String>,
        value: Map<String, Value>,
    ) -> Self {
        PutOp {
            namespace,
            key: key.into(),
            value: Some(value),
            index: PutIndex::StoreFields,
            ttl: Ttl::StoreDefault,
        }
    }

    /// Deletes `key` in `namespace` (nothing happens if it is absent).
    pub fn delete(namespace: Namespace, key: impl Into<String>) -> Self {
        PutOp {
            namespace,
            key: key.into(),
            value: None,
            index: PutIndex::StoreFields,
            ttl: Ttl::StoreDefault,
        }
    }

    /// Sets which texts to embed.
    pub fn index(mut self, index: PutIndex) -> Self {
        self.index = index;
        self
    }

    /// Sets how long the item lives.
    pub fn ttl(mut self, ttl: Ttl) -> Self {
        self.ttl = ttl;
        self
    }

    /// Checks what the types do not: a stored item's namespace is addressable
    /// ([`Namespace::check_addressable`]).
    pub fn validate(&self) -> Result<(), StoreError> {
        if self.value.is_some() {
            self.namespace.check_addressable()?;
        }
        Ok(())
    }
}

/// `key` and the object `value` of a put, or [`StoreError::NotAnObject`].
pub(super) fn object_value(
    namespace: &Namespace,
    key: String,
    value: Value,
) -> Result<(String, Map<String, Value>), StoreError> {
    match value {
        Value::Object(map) => Ok((key, map)),
        other => Err(StoreError::NotAnObject {
            namespace: namespace.clone(),
            key,
            found: json_kind(&other),
        }),
    }
}

/// Finds items under a namespace prefix: filtered, and ordered by similarity to
/// a query when there is one (most recently updated first otherwise).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchOp {
    /// Items whose namespace starts with this (the root: every item).
    pub namespace_prefix: Namespace,
    /// Conditions on the items' values.
    pub filter: Filter,
    /// Natural-language query for semantic search (ignored, as in LangGraph,
    /// when the store has no index).
    pub query: Option<String>,
    /// At most this many items (LangGraph's default: 10).
    pub limit: usize,
    /// Skipping this many first.
    pub offset: usize,
    /// Whether the search restarts the found items' TTLs; `None`: the store's
    /// default.
    pub refresh_ttl: Option<bool>,
}

impl SearchOp {
    /// Searches under `namespace_prefix`, 10 items, no filter, no query.
    pub fn new(namespace_prefix: Namespace) -> Self {
        SearchOp {
            namespace_prefix,
            filter: Filter::new(),
            query: None,
            limit: 10,
            offset: 0,
            refresh_ttl: None,
        }
    }

    /// Sets the filter.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// Sets the semantic query.
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Sets the limit.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Sets the offset.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Sets whether found items' TTLs restart.
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = Some(refresh);
        self
    }
}

/// Lists the namespaces holding items, sorted label by label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListNamespacesOp {
    /// Only namespaces starting with this pattern.
    pub prefix: Option<NamespacePattern>,
    /// Only namespaces ending with this pattern.
    pub suffix: Option<NamespacePattern>,
    /// Namespaces truncated to this many labels (duplicates merged).
    pub max_depth: Option<usize>,
    /// At most this many (LangGraph's default: 100).
    pub limit: usize,
    /// Skipping this many first.
    pub offset: usize,
}

impl Default for ListNamespacesOp {
    fn default() -> Self {
        ListNamespacesOp {
            prefix: None,
            suffix: None,
            max_depth: None,
            limit: 100,
            offset: 0,
        }
    }
}

impl ListNamespacesOp {
    /// Every namespace, 100 at most.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the prefix pattern.
    pub fn prefix(mut self, prefix: NamespacePattern) -> Self {
        self.prefix = Some(prefix);
        self
    }

    /// Sets the suffix pattern.
    pub fn suffix(mut self, suffix: NamespacePattern) -> Self {
        self.suffix = Some(suffix);
        self
    }

    /// Sets the depth namespaces are truncated to.
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = Some(depth);
        self
    }

    /// Sets the limit.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Sets the offset.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }

    /// Whether `namespace` matches the prefix and suffix patterns.
    pub fn matches(&self, namespace: &Namespace) -> bool {
        self.prefix
            .as_ref()
            .is_none_or(|p| p.matches_prefix(namespace))
            && self
                .suffix
                .as_ref()
                .is_none_or(|s| s.matches_suffix(namespace))
    }

    /// Applies the op to every namespace holding items, in any order: matches,
    /// truncation, sorting, deduplication, offset and limit (for backends that
    /// list namespaces in Rust).
    pub fn apply<I: IntoIterator<Item = Namespace>>(&self, namespaces: I) -> Vec<Namespace> {
        let mut found: Vec<Namespace> = namespaces
            .into_iter()
            .filter(|ns| self.matches(ns))
            .map(|ns| match self.max_depth {
                Some(depth) => ns.truncated(depth),
                None => ns,
            })
            .collect();
        found.sort();
        found.dedup();
        found
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect()
    }
}

/// One operation of a [`Store::batch`](super::Store::batch).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Read one item.
    Get(GetOp),
    /// Write or delete one item.
    Put(PutOp),
    /// Search.
    Search(SearchOp),
    /// List namespaces.
    ListNamespaces(ListNamespacesOp),
}

impl Op {
    /// The positions of the puts of `ops` that take effect, in order: the
    /// last put of each item (an earlier put of the same key is overwritten
    /// within the batch, as in LangGraph).
    pub fn last_puts(ops: &[Op]) -> Vec<usize> {
        let mut last: hashbrown::HashMap<(&Namespace, &str), usize> = hashbrown::HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            if let Op::Put(put) = op {
                last.insert((&put.namespace, put.key.as_str()), i);
            }
        }
        let mut puts: Vec<usize> = last.into_values().collect();
        puts.sort_unstable();
        puts
    }

    /// Checks what the types do not (see [`PutOp::validate`] and
    /// [`Filter::validate`]).
    pub fn validate(&self) -> Result<(), StoreError> {
        match self {
            Op::Put(put) => put.validate(),
            Op::Search(search) => search.filter.validate(),
            Op::Get(_) | Op::ListNamespaces(_) => Ok(()),
        }
    }
}

impl From<GetOp> for Op {
    fn from(op: GetOp) -> Self {
        Op::Get(op)
    }
}

impl From<PutOp> for Op {
    fn from(op: PutOp) -> Self {
        Op::Put(op)
    }
}

impl From<SearchOp> for Op {
    fn from(op: SearchOp) -> Self {
        Op::Search(op)
    }
}

impl From<ListNamespacesOp> for Op {
    fn from(op: ListNamespacesOp) -> Self {
        Op::ListNamespaces(op)
    }
}

/// The result of one [`Op`], in the same position of the batch's results.
#[derive(Clone, Debug, PartialEq)]
pub enum OpResult {
    /// The item read, if it exists.
    Get(Option<Item>),
    /// A put or delete was applied.
    Put,
    /// The items found, best first.
    Search(Vec<SearchItem>),
    /// The namespaces listed.
    ListNamespaces(Vec<Namespace>),
}
