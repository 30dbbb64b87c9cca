//! Node result caching (docs/semantics.md §11.3): a node with a [`CachePolicy`]
//! whose input was seen before (same serialised input, within the TTL) does not
//! run; its earlier output is used, and its edges and routers run as usual.
//!
//! ```
//! use stategraph::prelude::*;
//! use stategraph::cache::{CachePolicy, InMemoryCache};
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Q { question: String, answer: String }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let calls = Arc::new(AtomicUsize::new(0));
//! let counted = Arc::clone(&calls);
//! let app = StateGraph::<Q>::new()
//!     .add_node(node_fn("expensive", move |q: &Q| {
//!         counted.fetch_add(1, Ordering::SeqCst);
//!         Q::update().answer(q.question.to_uppercase())
//!     }))
//!     .cache_policy("expensive", CachePolicy::new())
//!     .add_edge(START, "expensive")
//!     .compile_with(CompileOptions::new().cache(InMemoryCache::new()))?;
//!
//! for _ in 0..3 {
//!     let out = app.invoke(Q::update().question("hi".into()), &RunConfig::new()).await?;
//!     assert_eq!(out.answer, "HI");
//! }
//! assert_eq!(calls.load(Ordering::SeqCst), 1);
//! # Ok::<(), GraphError>(())
//! # }).unwrap();
//! ```

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How a node's results are cached: for how long (`None`: until cleared). The key
/// is a hash of the node's input serialised to JSON (fields in declaration order;
/// use ordered maps in inputs for stable keys).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CachePolicy {
    ttl: Option<Duration>,
}

impl CachePolicy {
    /// Results kept until the cache is cleared.
    pub fn new() -> Self {
        Self::default()
    }

    /// Results kept for `ttl`.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// How long results are kept (`None`: until cleared).
    pub fn get_ttl(&self) -> Option<Duration> {
        self.ttl
    }
}

/// A store of node results, shared by the runs of a compiled graph
/// ([`CompiledGraph::with_cache`](crate::CompiledGraph::with_cache)). Values are
/// the node outputs themselves, typed by the graph's state.
pub trait Cache: Send + Sync + 'static {
    /// The value stored for `key` in the namespace of node `node`, if still fresh.
    fn get(&self, node: &str, key: u128) -> Option<Arc<dyn Any + Send + Sync>>;
    /// Stores `value`, fresh for `ttl` (`None`: until cleared).
    fn set(&self, node: &str, key: u128, value: Arc<dyn Any + Send + Sync>, ttl: Option<Duration>);
    /// Drops the values of `nodes` (every node when `None`).
    fn clear(&self, nodes: Option<&[&str]>);
}

type Entry = (Arc<dyn Any + Send + Sync>, Option<Instant>);

/// A [`Cache`] in process memory.
#[derive(Default)]
pub struct InMemoryCache {
    entries: Mutex<HashMap<String, HashMap<u128, Entry>>>,
}

impl InMemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<u128, Entry>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for InMemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries: usize = self.lock().values().map(HashMap::len).sum();
        f.debug_struct("InMemoryCache")
            .field("entries", &entries)
            .finish()
    }
}

impl Cache for InMemoryCache {
    fn get(&self, node: &str, key: u128) -> Option<Arc<dyn Any + Send + Sync>> {
        let mut entries = self.lock();
        let by_key = entries.get_mut(node)?;
        match by_key.get(&key) {
            Some((_, Some(expiry))) if *expiry <= Instant::now() => {
                by_key.remove(&key);
                None
            }
            Some((value, _)) => Some(Arc::clone(value)),
            None => None,
        }
    }

    fn set(&self, node: &str, key: u128, value: Arc<dyn Any + Send + Sync>, ttl: Option<Duration>) {
        let expiry = ttl.and_then(|t| Instant::now().checked_add(t));
        self.lock()
            .entry(node.to_owned())
            .or_default()
            .insert(key, (value, expiry));
    }

    fn clear(&self, nodes: Option<&[&str]>) {
        let mut entries = self.lock();
        match nodes {
            None => entries.clear(),
            Some(nodes) => {
                for node in nodes {
                    entries.remove(*node);
                }
            }
        }
    }
}

/// Streams serialised input into xxh3-128.
pub(crate) struct KeyHasher(xxhash_rust::xxh3::Xxh3);

impl KeyHasher {
    pub(crate) fn new() -> Self {
        KeyHasher(xxhash_rust::xxh3::Xxh3::new())
    }

    pub(crate) fn finish(&self) -> u128 {
        self.0.digest128()
    }
}

impl std::io::Write for KeyHasher {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_after_their_ttl_and_clear_by_node() {
        let cache = InMemoryCache::new();
        cache.set("a", 1, Arc::new(1u32), Some(Duration::ZERO));
        assert!(cache.get("a", 1).is_none(), "expired at once");
        cache.set("a", 1, Arc::new(2u32), None);
        cache.set("b", 1, Arc::new(3u32), None);
        let got = cache
            .get("a", 1)
            .and_then(|v| v.downcast_ref::<u32>().copied());
        assert_eq!(got, Some(2));
        cache.clear(Some(&["a"]));
        assert!(cache.get("a", 1).is_none());
        assert!(cache.get("b", 1).is_some());
        cache.clear(None);
        assert!(cache.get("b", 1).is_none());
    }

    #[test]
    fn the_key_hash_is_xxh3_of_the_bytes() {
        use std::io::Write;
        let mut h = KeyHasher::new();
        h.write_all(b"{\"a\":1}").unwrap();
        assert_eq!(h.finish(), xxhash_rust::xxh3::xxh3_128(b"{\"a\":1}"));
    }
}
