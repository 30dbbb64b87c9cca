//! What the store holds and returns: items and search results.

use super::error::StoreError;
use super::namespace::Namespace;
use serde_json::{Map, Value};
use std::time::SystemTime;

/// A stored item: a JSON object under a namespace and a key, with the times it
/// was first stored and last updated.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The namespace the item lives under.
    pub namespace: Namespace,
    /// The key, unique within the namespace.
    pub key: String,
    /// The value (always a JSON object).
    pub value: Map<String, Value>,
    /// When the item was first stored (kept when it is updated).
    pub created_at: SystemTime,
    /// When the item was last stored.
    pub updated_at: SystemTime,
}

impl Item {
    /// The value as a `T`, or [`StoreError::DoesNotFit`] naming the item and
    /// the type when it does not fit.
    pub fn value_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, StoreError> {
        T::deserialize(&self.value).map_err(|source| StoreError::DoesNotFit {
            namespace: self.namespace.clone(),
            key: self.key.clone(),
            type_name: std::any::type_name::<T>(),
            source,
        })
    }
}

/// An item found by a search, with its relevance when the search had a query.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchItem {
    /// The item.
    pub item: Item,
    /// The cosine similarity of the query to the item's best-matching embedded
    /// text (`None` for a search without a query).
    pub score: Option<f64>,
}

impl std::ops::Deref for SearchItem {
    type Target = Item;

    fn deref(&self) -> &Item {
        &self.item
    }
}
