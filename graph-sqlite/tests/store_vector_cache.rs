//! The SQLite store's cache of decoded vectors: a search with a query answers
//! from it exactly as from the table, and sees every write — its own, another
//! store's on the same file, and a plain SQLite connection's.

use graph_core::store::{
    HashEmbeddings, IndexConfig, Namespace, Op, PutOp, SearchItem, SearchOp, Store, StoreConfig,
    Ttl,
};
use graph_sqlite::SqliteStore;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const DIMS: usize = 16;

fn config() -> StoreConfig {
    let index = IndexConfig::new(DIMS, HashEmbeddings::new(DIMS))
        .fields(["text"])
        .expect("index fields");
    StoreConfig::new().index(index)
}

async fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, config()).await.expect("open")
}

/// A store on the same file that keeps no vectors: every search reads them.
async fn open_uncached(path: &Path) -> SqliteStore {
    open(path).await.vector_cache_limit(0)
}

fn ns(labels: &[&str]) -> Namespace {
    Namespace::new(labels.iter().copied()).expect("namespace")
}

/// What a search returned, scores to the bit.
fn summary(found: &[SearchItem]) -> Vec<(String, String, Option<u64>)> {
    found
        .iter()
        .map(|i| {
            (
                i.item.namespace.to_dotted(),
                i.item.key.clone(),
                i.score.map(f64::to_bits),
            )
        })
        .collect()
}

async fn search(store: &SqliteStore, prefix: &Namespace, query: &str) -> Vec<SearchItem> {
    store
        .search(SearchOp::new(prefix.clone()).query(query).limit(10))
        .await
        .expect("search")
}

fn keys(found: &[SearchItem]) -> Vec<&str> {
    found.iter().map(|i| i.item.key.as_str()).collect()
}

/// Fills `namespace` with `n` items about fruit, then searches once, so the
/// cache is built.
async fn warm(store: &SqliteStore, namespace: &Namespace, n: usize) {
    for i in 0..n {
        store
            .put(
                namespace,
                &format!("k{i}"),
                json!({"text": format!("fruit apple {i}")}),
            )
            .await
            .expect("put");
    }
    assert_eq!(search(store, namespace, "apple").await.len(), n.min(10));
}

#[tokio::test]
async fn a_second_store_on_the_file_is_seen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.sqlite");
    let first = open(&path).await;
    let second = open(&path).await;
    let docs = ns(&["docs"]);
    warm(&first, &docs, 5).await;

    second
        .put(&docs, "boat", json!({"text": "sailing boat harbour"}))
        .await
        .expect("put through the second store");
    let found = search(&first, &docs, "sailing boat harbour").await;
    assert_eq!(keys(&found)[0], "boat", "the other store's put is found");
    assert_eq!(
        found[0].score.map(|s| (s - 1.0).abs() < 1e-6),
        Some(true),
        "and scored with its vector"
    );

    // Re-indexed elsewhere: the new vector, not the one the cache held.
    second
        .put(&docs, "boat", json!({"text": "mountain cabin"}))
        .await
        .expect("update through the second store");
    let found = search(&first, &docs, "mountain cabin").await;
    assert_eq!(keys(&found)[0], "boat");
    let found = search(&first, &docs, "sailing boat harbour").await;
    assert!(
        found[0].score.is_some_and(|s| s < 0.9),
        "the old vector is gone: {:?}",
        summary(&found)
    );

    second.delete(&docs, "boat").await.expect("delete");
    assert!(!keys(&search(&first, &docs, "mountain cabin").await).contains(&"boat"));
}

/// A plain connection changes a vector in place (as Python's store, or
/// anything else, may): only `data_version` can tell the cache.
#[tokio::test]
async fn a_plain_connection_changing_a_vector_is_seen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.sqlite");
    let store = open(&path).await;
    let docs = ns(&["docs"]);
    warm(&store, &docs, 5).await;
    let query = "zebra stripes";
    assert!(search(&store, &docs, query).await[0]
        .score
        .is_some_and(|s| s < 0.9));

    let blob: Vec<u8> = HashEmbeddings::new(DIMS)
        .embed(query)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let conn = rusqlite::Connection::open(&path).expect("open a plain connection");
    let changed = conn
        .execute(
            "UPDATE store_vectors SET embedding = ?1 WHERE key = 'k3'",
            [&blob],
        )
        .expect("update a vector");
    assert_eq!(changed, 1);
    drop(conn);

    let found = search(&store, &docs, query).await;
    assert_eq!(keys(&found)[0], "k3", "{:?}", summary(&found));
    assert_eq!(found[0].score.map(|s| (s - 1.0).abs() < 1e-6), Some(true));
    assert_eq!(
        summary(&found),
        summary(&search(&open_uncached(&path).await, &docs, query).await)
    );
}

#[tokio::test]
async fn own_puts_deletes_and_expiry_are_seen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.sqlite");
    let store = open(&path).await;
    let uncached = open_uncached(&path).await;
    let docs = ns(&["docs"]);
    warm(&store, &docs, 5).await;
    let same = |a: &[SearchItem], b: &[SearchItem]| assert_eq!(summary(a), summary(b));

    store
        .put(&docs, "boat", json!({"text": "sailing boat"}))
        .await
        .expect("put");
    let found = search(&store, &docs, "sailing boat").await;
    assert_eq!(keys(&found)[0], "boat", "own put found");
    same(&found, &search(&uncached, &docs, "sailing boat").await);

    store
        .put(&docs, "boat", json!({"text": "mountain cabin"}))
        .await
        .expect("update");
    let found = search(&store, &docs, "sailing boat").await;
    same(&found, &search(&uncached, &docs, "sailing boat").await);
    assert_eq!(
        keys(&search(&store, &docs, "mountain cabin").await)[0],
        "boat"
    );

    store.delete(&docs, "boat").await.expect("delete");
    let found = search(&store, &docs, "mountain cabin").await;
    assert!(!keys(&found).contains(&"boat"), "own delete seen");
    same(&found, &search(&uncached, &docs, "mountain cabin").await);

    // Expiry: found while live, never after, swept or not.
    store
        .put_with(
            PutOp::put_object(
                docs.clone(),
                "brief",
                json!({"text": "comet tail"})
                    .as_object()
                    .cloned()
                    .expect("object"),
            )
            .ttl(Ttl::After(Duration::from_millis(150))),
        )
        .await
        .expect("put with a TTL");
    assert_eq!(keys(&search(&store, &docs, "comet tail").await)[0], "brief");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!keys(&search(&store, &docs, "comet tail").await).contains(&"brief"));
    assert_eq!(store.sweep_ttl().await.expect("sweep"), 1);
    let found = search(&store, &docs, "comet tail").await;
    assert!(!keys(&found).contains(&"brief"));
    same(&found, &search(&uncached, &docs, "comet tail").await);
    store
        .put(&docs, "brief", json!({"text": "comet tail again"}))
        .await
        .expect("put again");
    let found = search(&store, &docs, "comet tail again").await;
    assert_eq!(keys(&found)[0], "brief");
    same(&found, &search(&uncached, &docs, "comet tail again").await);
}

/// Random puts, deletes and searches (one LCG stream) through two caching
/// stores and one with a cache too small to hold the table, all on one file:
/// every search answers as a store without a cache does, to the score's bit.
#[tokio::test]
async fn cached_searches_equal_uncached_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.sqlite");
    let cached = [open(&path).await, open(&path).await];
    let small = open(&path).await.vector_cache_limit(2_000);
    let uncached = open_uncached(&path).await;
    // Prefixes that share leading bytes without being nested ("a" and "ab").
    let spaces = [
        ns(&["a"]),
        ns(&["a", "b"]),
        ns(&["a", "b", "c"]),
        ns(&["ab"]),
        ns(&["b"]),
    ];
    let prefixes = [
        Namespace::root(),
        ns(&["a"]),
        ns(&["a", "b"]),
        ns(&["ab"]),
        ns(&["b"]),
        ns(&["c"]),
    ];
    let words = [
        "apple", "boat", "cloud", "dune", "ember", "fjord", "grove", "harbor",
    ];
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) % n as u64) as usize
    };
    let mut searches = 0;
    for step in 0..400 {
        let writer = &cached[next(2)];
        let namespace = &spaces[next(spaces.len())];
        let key = format!("k{}", next(12));
        match next(10) {
            0..=4 => {
                let text = format!(
                    "{} {} {}",
                    words[next(words.len())],
                    words[next(words.len())],
                    words[next(words.len())]
                );
                writer
                    .put(namespace, &key, json!({"text": text, "n": step}))
                    .await
                    .expect("put");
            }
            5 => writer.delete(namespace, &key).await.expect("delete"),
            6 => {
                // Two puts and a search in one batch.
                let ops = vec![
                    Op::Put(PutOp::put_object(
                        namespace.clone(),
                        key.clone(),
                        json!({"text": words[next(words.len())]})
                            .as_object()
                            .cloned()
                            .expect("object"),
                    )),
                    Op::Search(SearchOp::new(namespace.clone()).query(words[next(words.len())])),
                    Op::Put(PutOp::delete(namespace.clone(), format!("k{}", next(12)))),
                ];
                writer.batch(ops).await.expect("batch");
            }
            _ => {
                let prefix = &prefixes[next(prefixes.len())];
                let op = SearchOp::new(prefix.clone())
                    .query(format!(
                        "{} {}",
                        words[next(words.len())],
                        words[next(words.len())]
                    ))
                    .limit(1 + next(6))
                    .offset(next(3));
                let expected = summary(&uncached.search(op.clone()).await.expect("search"));
                for store in cached.iter().chain([&small]) {
                    let found = summary(&store.search(op.clone()).await.expect("search"));
                    assert_eq!(found, expected, "step {step}: search under {prefix}");
                }
                searches += 1;
            }
        }
    }
    assert!(searches > 50, "{searches} searches");
}
