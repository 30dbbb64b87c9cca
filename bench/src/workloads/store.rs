//! The store: `store_put_10k_memory` (10 000 puts into a fresh in-memory store
//! with a 64-dimension index) and `store_search_10k_memory` (100 semantic
//! searches with a filter over those 10 000 items).
//!
//! A put run's inputs, the fresh store, the 10 000 keys and the 10 000 values,
//! are built before its timing starts (harness rule 1), on both sides: the run
//! is the puts alone. (Until 2026-12-03 each put built its value and key in
//! the timed loop, half of our side's instructions; docs/performance.md has
//! both.)
//!
//! The data, the same in bench/anchor.py: item `i` is key `item-{i}` in
//! namespace `("bench", "items")` with value `{"text": "item {i}", "group": i %
//! 10, "rank": i}`; text `item {i}` embeds to the vector of seed `i`, query
//! `query {k}` to that of seed `100000 + k`, component `j` of seed `s` being
//! `((s * 7919 + j * 104729) % 10007) / 10007 - 0.5`. Search `k` (0..100) asks
//! for `query {k}`, filter `{"group": k % 10}`, limit 10. The embedder looks
//! the vectors up, so both sides measure the store, not a model.

use super::runtime;
use crate::harness::{expect, Workload};
use futures::future::BoxFuture;
use indexmap::IndexMap;
use serde_json::{json, Value};
use stategraph::store::{
    cosine_similarity, Embedding, EmbeddingError, Embeddings, Filter, InMemoryStore, IndexConfig,
    Namespace, SearchOp, Store, StoreConfig,
};
use std::sync::Arc;

const ITEMS: usize = 10_000;
const QUERIES: usize = 100;
const DIMS: usize = 64;

fn vector(seed: u64) -> Vec<f32> {
    (0..DIMS as u64)
        .map(|j| ((seed * 7919 + j * 104_729) % 10_007) as f32 / 10_007.0 - 0.5)
        .collect()
}

/// Vectors looked up by text, in a table laid out as Python's `dict` (the
/// anchor's table): entries in insertion order behind a small table of
/// positions, with hashbrown's default hasher (not std's SipHash, as a
/// program looking up its own keys would). It hands over the table's
/// vectors, shared, as the anchor's `embed` hands over its table's lists.
struct Lookup(IndexMap<String, Embedding, hashbrown::DefaultHashBuilder>);

impl Lookup {
    fn vector(&self, text: &str) -> Result<Embedding, EmbeddingError> {
        self.0
            .get(text)
            .cloned()
            .ok_or_else(|| EmbeddingError::Failed(format!("no vector for {text:?}").into()))
    }

    fn vectors(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbeddingError> {
        texts.iter().map(|t| self.vector(t)).collect()
    }
}

impl Embeddings for Lookup {
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
        Box::pin(async move { self.vectors(texts) })
    }

    /// A table answers at once (as the Python side's `embed` function does):
    /// the store skips the boxed future.
    fn embed_documents_sync(
        &self,
        texts: &[&str],
    ) -> Option<Result<Vec<Embedding>, EmbeddingError>> {
        Some(self.vectors(texts))
    }

    /// One text (a put's): its vector without a list around it.
    fn embed_document_sync(&self, text: &str) -> Option<Result<Embedding, EmbeddingError>> {
        Some(self.vector(text))
    }
}

fn lookup() -> Lookup {
    let mut table = IndexMap::with_capacity_and_hasher(ITEMS + QUERIES, Default::default());
    for i in 0..ITEMS as u64 {
        table.insert(format!("item {i}"), vector(i).into());
    }
    for k in 0..QUERIES as u64 {
        table.insert(format!("query {k}"), vector(100_000 + k).into());
    }
    Lookup(table)
}

fn namespace() -> Namespace {
    Namespace::new(["bench", "items"]).unwrap_or_else(|e| panic!("namespace: {e}"))
}

fn new_store(embeddings: Arc<Lookup>) -> InMemoryStore {
    let index = IndexConfig::shared(DIMS, embeddings)
        .fields(["text"])
        .unwrap_or_else(|e| panic!("index: {e}"));
    InMemoryStore::with_config(StoreConfig::new().index(index))
}

async fn fill(store: &InMemoryStore, ns: &Namespace) -> Result<(), String> {
    for i in 0..ITEMS {
        let value = json!({"text": format!("item {i}"), "group": i % 10, "rank": i});
        store
            .put(ns, &format!("item-{i}"), value)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// One run's inputs of `store_put_10k_memory`: a fresh store, the keys and
/// the values, built before the run's timing starts (harness rule 1;
/// bench/anchor.py's `store_put_inputs` builds the same).
fn put_inputs(embeddings: &Arc<Lookup>) -> (InMemoryStore, Vec<String>, Vec<Value>) {
    let keys = (0..ITEMS).map(|i| format!("item-{i}")).collect();
    let values = (0..ITEMS)
        .map(|i| json!({"text": format!("item {i}"), "group": i % 10, "rank": i}))
        .collect();
    (new_store(Arc::clone(embeddings)), keys, values)
}

pub fn build_put() -> Workload {
    let rt = runtime();
    let embeddings = Arc::new(lookup());
    let ns = namespace();
    Workload::prepared(
        move || put_inputs(&embeddings),
        move |(store, keys, values)| {
            rt.block_on(async {
                for (key, value) in keys.into_iter().zip(values) {
                    store
                        .put(&ns, key, value)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok(store)
            })
        },
        |store| expect(store.len() == ITEMS, || format!("{} items", store.len())),
    )
}

pub fn build_search() -> Workload {
    let rt = runtime();
    let embeddings = Arc::new(lookup());
    let ns = namespace();
    let store = new_store(Arc::clone(&embeddings));
    rt.block_on(fill(&store, &ns))
        .unwrap_or_else(|e| panic!("filling the store: {e}"));
    // The best score of each search, by brute force (not timed). The store
    // computes in f32: an item within 1e-5 of the best may come first.
    let best: Vec<f64> = (0..QUERIES as u64)
        .map(|k| {
            let q = vector(100_000 + k);
            (0..ITEMS as u64)
                .filter(|i| i % 10 == k % 10)
                .map(|i| cosine_similarity(&q, &vector(i)))
                .fold(f64::MIN, f64::max)
        })
        .collect();
    let prefix = Namespace::new(["bench"]).unwrap_or_else(|e| panic!("namespace: {e}"));
    Workload::new(
        move || {
            rt.block_on(async {
                let mut results = Vec::with_capacity(QUERIES);
                for k in 0..QUERIES {
                    let op = SearchOp::new(prefix.clone())
                        .query(format!("query {k}"))
                        .filter(Filter::new().eq("group", k % 10))
                        .limit(10);
                    results.push(store.search(op).await.map_err(|e| e.to_string())?);
                }
                Ok(results)
            })
        },
        move |results| {
            expect(results.len() == QUERIES, || {
                format!("{} searches", results.len())
            })?;
            for (k, found) in results.iter().enumerate() {
                expect(found.len() == 10, || {
                    format!("search {k}: {} items", found.len())
                })?;
                let top = found[0].score.unwrap_or(f64::MIN);
                expect((top - best[k]).abs() < 1e-5, || {
                    format!("search {k}: best score {top}, expected {}", best[k])
                })?;
                let group = (k % 10) as u64;
                expect(
                    found
                        .iter()
                        .all(|i| i.value["group"].as_u64() == Some(group)),
                    || format!("search {k}: an item outside the filter"),
                )?;
                expect(found.windows(2).all(|w| w[0].score >= w[1].score), || {
                    format!("search {k}: not best first")
                })?;
            }
            Ok(())
        },
    )
}
