//! [`NameMap`]: the maps of a [`Checkpoint`](super::Checkpoint), keyed by channel or
//! node name.

use super::SharedStr;
use litemap::LiteMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A map from channel or node names to values, kept as a vector sorted by name:
/// a checkpoint's `channel_values`, `channel_versions` and `versions_seen`.
///
/// A checkpoint's maps hold a handful of entries, are built in name order and are
/// read whole, so one exactly sized vector serves where a `BTreeMap` would allocate
/// a node of a few hundred bytes and walk it to insert and to drop. Lookups are a
/// binary search; iteration is in name order. Serialised as a map (`{}` when empty),
/// as LangGraph's format has it.
///
/// ```
/// use stategraph::checkpoint::{NameMap, SharedStr};
///
/// let mut versions: NameMap<SharedStr> = NameMap::new();
/// versions.insert("messages".into(), "00000000000000000000000000000002.0.5".into());
/// versions.insert("count".into(), "00000000000000000000000000000001.0.5".into());
/// assert_eq!(versions["messages"], "00000000000000000000000000000002.0.5");
/// assert_eq!(versions.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["count", "messages"]);
/// assert_eq!(serde_json::to_string(&NameMap::<SharedStr>::new()).unwrap(), "{}");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NameMap<V>(LiteMap<SharedStr, V>);

impl<V> NameMap<V> {
    /// An empty map (no allocation).
    pub const fn new() -> Self {
        NameMap(LiteMap::new())
    }

    /// An empty map with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        NameMap(LiteMap::with_capacity(capacity))
    }

    /// A map of `pairs`, which must be sorted by name without duplicates (checked
    /// in debug builds): how the engine and the savers build maps they already
    /// hold in order.
    pub(crate) fn from_sorted(pairs: Vec<(SharedStr, V)>) -> Self {
        debug_assert!(
            pairs.windows(2).all(|w| w[0].0 < w[1].0),
            "NameMap::from_sorted needs names in strictly increasing order"
        );
        NameMap(LiteMap::from_sorted_store_unchecked(pairs))
    }

    /// The entries, sorted by name.
    pub fn into_vec(self) -> Vec<(SharedStr, V)> {
        self.0.into_tuple_vec()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&V> {
        self.0.get(name)
    }

    /// The value of `name`, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        self.0.get_mut(name)
    }

    /// Whether `name` has a value.
    pub fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Sets the value of `name`, returning the one it replaces.
    pub fn insert(&mut self, name: SharedStr, value: V) -> Option<V> {
        self.0.insert(name, value)
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<V> {
        self.0.remove(name)
    }

    /// The entries in name order.
    pub fn iter(&self) -> NameMapIter<'_, V> {
        NameMapIter(self.0.as_slice().iter())
    }

    /// The names, in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &SharedStr> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in name order.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }
}

/// The entries of a [`NameMap`], in name order.
#[derive(Clone, Debug)]
pub struct NameMapIter<'a, V>(std::slice::Iter<'a, (SharedStr, V)>);

impl<'a, V> Iterator for NameMapIter<'a, V> {
    type Item = (&'a SharedStr, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<V> DoubleEndedIterator for NameMapIter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl<V> ExactSizeIterator for NameMapIter<'_, V> {}

impl<V> std::iter::FusedIterator for NameMapIter<'_, V> {}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        NameMap::new()
    }
}

impl<V: fmt::Debug> fmt::Debug for NameMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter()).finish()
    }
}

impl<V> std::ops::Index<&str> for NameMap<V> {
    type Output = V;

    /// The value of `name`; panics if there is none (use [`NameMap::get`] to ask).
    fn index(&self, name: &str) -> &V {
        match self.0.get(name) {
            Some(v) => v,
            None => panic!("no entry named `{name}` in this map"),
        }
    }
}

/// Collects pairs in any order; for a name given twice, the last value wins.
impl<V> FromIterator<(SharedStr, V)> for NameMap<V> {
    fn from_iter<I: IntoIterator<Item = (SharedStr, V)>>(iter: I) -> Self {
        NameMap(iter.into_iter().collect())
    }
}

/// Adds pairs in any order; for a name given twice, the last value wins.
impl<V> Extend<(SharedStr, V)> for NameMap<V> {
    fn extend<I: IntoIterator<Item = (SharedStr, V)>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl<V> IntoIterator for NameMap<V> {
    type Item = (SharedStr, V);
    type IntoIter = std::vec::IntoIter<(SharedStr, V)>;

    /// The entries in name order.
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_tuple_vec().into_iter()
    }
}

impl<'a, V> IntoIterator for &'a NameMap<V> {
    type Item = (&'a SharedStr, &'a V);
    type IntoIter = NameMapIter<'a, V>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<V: Serialize> Serialize for NameMap<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter())
    }
}

/// Reads a map in any key order (sorted once if needed); for a name given twice,
/// the last value wins.
impl<'de, V: Deserialize<'de>> Deserialize<'de> for NameMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        LiteMap::deserialize(deserializer).map(NameMap)
    }
}
