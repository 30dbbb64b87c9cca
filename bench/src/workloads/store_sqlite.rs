//! The SQLite store (a file): `store_put_10k_sqlite` puts 10 000 items one
//! `put` at a time, each with a 64-dimension vector; `store_search_10k_sqlite`
//! runs 100 semantic searches with the filter `{"kind": "fact"}` over 10 000
//! such items. The embedding model is a table lookup of precomputed vectors on
//! both sides (bench/anchor.py's `make_sqlite_store_*` draws the same LCG
//! numbers), so the model costs nothing and the store is what is measured.

use super::runtime;
use crate::harness::{expect, Workload};
use futures::future::BoxFuture;
use hashbrown::HashMap;
use stategraph::store::{
    Embedding, EmbeddingError, Embeddings, Filter, IndexConfig, Namespace, SearchOp, Store,
    StoreConfig,
};
use std::sync::Arc;

const ITEMS: usize = 10_000;
const DIMS: usize = 64;
const QUERIES: usize = 100;
const KINDS: [&str; 4] = ["note", "fact", "todo", "quote"];

/// The text of item `i` and of query `q`.
fn text(i: usize) -> String {
    format!("document {i} about topic {}", i % 97)
}

fn query(q: usize) -> String {
    format!("query {q}")
}

/// Deterministic pseudo-random vectors (a 64-bit LCG; bench/anchor.py draws
/// the same numbers).
fn vectors(count: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed;
    (0..count)
        .map(|_| {
            (0..DIMS)
                .map(|_| {
                    s = s
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                })
                .collect()
        })
        .collect()
}

/// An embedding model that looks texts up in a table (hashbrown's default
/// hasher, not std's SipHash), handing over the table's vectors as the
/// anchor's `embed` hands over its table's lists.
struct Lookup(HashMap<String, Embedding>);

impl Lookup {
    fn vectors(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbeddingError> {
        texts
            .iter()
            .map(|t| {
                self.0
                    .get(*t)
                    .cloned()
                    .ok_or_else(|| EmbeddingError::Failed(format!("no vector for {t:?}").into()))
            })
            .collect()
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
}

fn config() -> StoreConfig {
    let mut table: HashMap<String, Embedding> = (0..ITEMS)
        .map(text)
        .zip(vectors(ITEMS, 1).into_iter().map(Embedding::from))
        .collect();
    table.extend(
        (0..QUERIES)
            .map(query)
            .zip(vectors(QUERIES, 2).into_iter().map(Embedding::from)),
    );
    let index = IndexConfig::new(DIMS, Lookup(table))
        .fields(["text"])
        .unwrap_or_else(|e| panic!("index: {e}"));
    StoreConfig::new().index(index)
}

fn item(i: usize) -> serde_json::Value {
    serde_json::json!({"text": text(i), "kind": KINDS[i % KINDS.len()], "n": i})
}

async fn open(dir: &std::path::Path, run: usize) -> Arc<dyn Store> {
    Arc::new(
        stategraph::sqlite::SqliteStore::open(dir.join(format!("store-{run}.sqlite")), config())
            .await
            .unwrap_or_else(|e| panic!("sqlite store: {e}")),
    )
}

fn bench_dir() -> std::path::PathBuf {
    let dir = super::scratch_dir("store");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("bench dir: {e}"));
    dir
}

/// 10 000 puts, one at a time, into a fresh store per run.
pub fn build_put() -> Workload {
    let rt = Arc::new(runtime());
    let dir = bench_dir();
    let values: Vec<serde_json::Value> = (0..ITEMS).map(item).collect();
    let ns = Namespace::new(["bench", "docs"]).unwrap_or_else(|e| panic!("{e}"));
    let mut run = 0;
    let check_rt = Arc::clone(&rt);
    let check_ns = ns.clone();
    Workload::new(
        move || {
            run += 1;
            let values = values.clone();
            let ns = ns.clone();
            let dir = dir.clone();
            rt.block_on(async move {
                let store = open(&dir, run).await;
                for (i, value) in values.into_iter().enumerate() {
                    store
                        .put(&ns, &format!("doc-{i}"), value)
                        .await
                        .map_err(|e| e.to_string())?;
                }
                Ok(store)
            })
        },
        move |store: Arc<dyn Store>| {
            check_rt.block_on(async {
                let all = store
                    .search(SearchOp::new(check_ns.clone()).limit(ITEMS + 1))
                    .await
                    .map_err(|e| e.to_string())?;
                expect(all.len() == ITEMS, || format!("{} items", all.len()))?;
                let last = store
                    .get(&check_ns, &format!("doc-{}", ITEMS - 1))
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or("the last item is missing")?;
                expect(
                    serde_json::Value::Object(last.value) == item(ITEMS - 1),
                    || "the last item's value".to_owned(),
                )
            })
        },
    )
}

/// 100 searches (a query and a filter, 10 results each) over 10 000 items.
pub fn build_search() -> Workload {
    let rt = Arc::new(runtime());
    let dir = bench_dir();
    let ns = Namespace::new(["bench", "docs"]).unwrap_or_else(|e| panic!("{e}"));
    let store = rt.block_on(async {
        let store = open(&dir, 0).await;
        for i in 0..ITEMS {
            store
                .put(&ns, &format!("doc-{i}"), item(i))
                .await
                .unwrap_or_else(|e| panic!("fill the store: {e}"));
        }
        store
    });
    let filter = Filter::new().eq("kind", "fact");
    let check_rt = Arc::clone(&rt);
    Workload::new(
        move || {
            rt.block_on(async {
                let mut results = Vec::with_capacity(QUERIES);
                for q in 0..QUERIES {
                    let op = SearchOp::new(ns.clone())
                        .query(query(q))
                        .filter(filter.clone())
                        .limit(10);
                    results.push(store.search(op).await.map_err(|e| e.to_string())?);
                }
                Ok(results)
            })
        },
        move |results| {
            let _ = &check_rt;
            expect(results.len() == QUERIES, || {
                format!("{} searches", results.len())
            })?;
            for found in &results {
                expect(found.len() == 10, || format!("{} results", found.len()))?;
                expect(found.iter().all(|i| i.value["kind"] == "fact"), || {
                    "an item outside the filter".to_owned()
                })?;
                let scores: Vec<f64> = found.iter().filter_map(|i| i.score).collect();
                expect(
                    scores.len() == 10 && scores.windows(2).all(|w| w[0] >= w[1]),
                    || format!("scores not best first: {scores:?}"),
                )?;
            }
            Ok(())
        },
    )
}
