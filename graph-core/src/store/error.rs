//! What a store operation can fail with.

use super::embed::EmbeddingError;
use super::filter::Operator;
use super::namespace::Namespace;

/// Errors of a [`Store`](super::Store) operation.
///
/// Nothing is written by an operation (or a batch) that fails: the store
/// validates every operation and computes every embedding before it writes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A namespace LangGraph rejects: empty where an item is addressed, a label
    /// that is empty or holds a period or a NUL byte, or the reserved root label
    /// `langgraph`.
    #[error("invalid namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The labels given.
        namespace: Vec<String>,
        /// What is wrong with them, and what to do instead.
        reason: String,
    },
    /// An item's value must be a JSON object (a map of field names to values).
    #[error(
        "the value of `{key}` in namespace {namespace} is {found}, not a JSON object; \
         store an object (a struct or a map), e.g. {{\"value\": ...}}"
    )]
    NotAnObject {
        /// The item's namespace.
        namespace: Namespace,
        /// The item's key.
        key: String,
        /// What the value was instead (`"a string"`, `"an array"`, ...).
        found: &'static str,
    },
    /// A search filter that cannot be applied: not an object, an unknown
    /// operator, or an operand the operator cannot compare with.
    #[error("invalid search filter on field `{field}`: {reason}")]
    InvalidFilter {
        /// The filtered field (`""` when the filter as a whole is wrong).
        field: String,
        /// What is wrong, and what is accepted.
        reason: String,
    },
    /// A comparison filter (`$gt`, `$gte`, `$lt`, `$lte`) met a stored value of
    /// another kind than its operand (e.g. a string compared with a number).
    #[error(
        "search filter `{field}` {operator} {operand} cannot compare with the stored value \
         {found} of `{key}` in namespace {namespace}; compare numbers with numbers and strings \
         with strings"
    )]
    FilterType {
        /// The filtered field.
        field: String,
        /// The operator (`$gt`, ...).
        operator: Operator,
        /// The filter's operand, as JSON.
        operand: String,
        /// The stored value, as JSON.
        found: String,
        /// The item's namespace.
        namespace: Namespace,
        /// The item's key.
        key: String,
    },
    /// A field path of an index configuration or a put's `index` that does not
    /// parse (see [`FieldPath`](super::FieldPath) for the syntax).
    #[error("invalid field path `{path}`: {reason}")]
    InvalidFieldPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The embedding model failed, timed out, or returned vectors of the wrong
    /// number or size; nothing was written.
    #[error("embedding failed, nothing was written: {0}")]
    Embedding(#[source] EmbeddingError),
    /// A stored value does not deserialise into the type asked for
    /// ([`StoreExt::get_typed`](super::StoreExt::get_typed)).
    #[error(
        "the value of `{key}` in namespace {namespace} does not fit `{type_name}`: {source}; \
         read it as a serde_json::Value (get) to see what is stored"
    )]
    DoesNotFit {
        /// The item's namespace.
        namespace: Namespace,
        /// The item's key.
        key: String,
        /// The Rust type asked for.
        type_name: &'static str,
        /// Why it does not fit.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be serialised to JSON
    /// ([`StoreExt::put_typed`](super::StoreExt::put_typed)).
    #[error("cannot serialise a `{type_name}` for the store: {source}")]
    NotSerializable {
        /// The Rust type given.
        type_name: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The storage failed (I/O, database).
    #[error("store storage failed: {0}")]
    Storage(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A stored row could not be read back.
    #[error("`{key}` in namespace {namespace}: cannot decode {what}: {source}")]
    Corrupt {
        /// The item's namespace.
        namespace: Namespace,
        /// The item's key.
        key: String,
        /// Which part could not be decoded.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A node asked for the store of a graph compiled without one.
    #[error(
        "this graph has no store; compile it with one: \
         `compile_with(CompileOptions::new().store(InMemoryStore::new()))`"
    )]
    NoStore,
    /// The call itself is invalid (for the store it was made on).
    #[error("invalid store call: {0}")]
    InvalidInput(String),
}

/// How a JSON value is named in error messages.
pub(crate) fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
