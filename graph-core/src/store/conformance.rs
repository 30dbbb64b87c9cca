//! A conformance suite for [`Store`] implementations, written once and run
//! against every backend (memory, SQLite, PostgreSQL, and yours): put / get
//! round trips, timestamps, bad input, namespaces and their listing, filters,
//! search order, limits and scores, per-item index choices, re-embedding only
//! what changed, failed embeddings writing nothing, batches, concurrent writers
//! to one key, and TTL expiry, refresh and sweeping.
//!
//! Every property is its own `pub async fn` taking the store (opened with the
//! configuration its docs name), and [`run_all`] opens the stores it needs with
//! the `open` function it is given and runs every property. Each property works
//! under a fresh, randomly named namespace, so the suite can run on a store
//! that already holds data. Failures panic with a message naming the property.
//!
//! # Testing a store of your own
//!
//! Enable the `test-util` feature for your tests (see
//! [`checkpoint::conformance`](crate::checkpoint::conformance)) and run:
//!
//! ```
//! use graph_core::store::{conformance, InMemoryStore};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // In a test file: #[tokio::test] async fn passes_the_conformance_suite() { ... }
//! conformance::run_all(|config| async move { InMemoryStore::with_config(config) }).await;
//! # }
//! ```

use super::{
    cosine_similarity, Embedding, EmbeddingError, Embeddings, Filter, GetOp, HashEmbeddings,
    IndexConfig, ListNamespacesOp, Namespace, NamespacePattern, Op, OpResult, PutIndex, PutOp,
    SearchOp, Store, StoreConfig, StoreError, StoreExt, Ttl, TtlConfig,
};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The vectors' size of [`index_config`].
pub const DIMS: usize = 32;

/// Runs every property against stores opened by `open`: one with
/// `StoreConfig::new()`, one with [`index_config`], one with [`ttl_config`].
pub async fn run_all<F, Fut, S>(open: F)
where
    F: Fn(StoreConfig) -> Fut,
    Fut: Future<Output = S>,
    S: Store,
{
    let plain = open(StoreConfig::new()).await;
    put_get_round_trip(&plain).await;
    update_keeps_created_at(&plain).await;
    delete_and_missing(&plain).await;
    bad_input_is_rejected(&plain).await;
    typed_access(&plain).await;
    namespaces_isolated(&plain).await;
    search_prefix_and_recency_order(&plain).await;
    search_limit_offset(&plain).await;
    search_filters(&plain).await;
    query_without_index_is_ignored(&plain).await;
    list_namespaces(&plain).await;
    batch_reads_before_writes(&plain).await;
    concurrent_writers_one_key(&plain).await;

    let (config, calls) = index_config();
    let indexed = open(StoreConfig::new().index(config)).await;
    search_by_query(&indexed).await;
    several_texts_score_their_best(&indexed).await;
    index_choices(&indexed).await;
    reembed_only_changed(&indexed, &calls).await;
    failed_embedding_writes_nothing(&indexed).await;
    query_search_with_filter_and_offset(&indexed).await;

    let expiring = open(StoreConfig::new().ttl(ttl_config())).await;
    ttl_expiry_and_sweep(&expiring).await;
    default_ttl(&expiring).await;
    refresh_on_read(&expiring).await;
}

/// The index every indexed property expects: [`DIMS`] dimensions, fields
/// `["text", "tags[*]"]`, embedded by [`ConformanceEmbeddings`]; and its
/// count of embedded texts.
pub fn index_config() -> (IndexConfig, Arc<AtomicUsize>) {
    let embeddings = ConformanceEmbeddings::default();
    let calls = embeddings.texts.clone();
    let config = IndexConfig::new(DIMS, embeddings)
        .fields(["text", "tags[*]"])
        .unwrap_or_else(|e| panic!("conformance: {e}"));
    (config, calls)
}

/// The TTL configuration of the TTL properties: a default TTL of 300 ms,
/// refresh on read, no background sweeper.
pub fn ttl_config() -> TtlConfig {
    TtlConfig {
        default_ttl: Some(Duration::from_millis(300)),
        refresh_on_read: true,
        sweep_interval: None,
    }
}

/// [`HashEmbeddings`] of [`DIMS`] dimensions, counting the texts it embeds,
/// failing on any text containing `<fail>` and returning a vector of the wrong
/// size for `<wrong-dims>`.
#[derive(Clone, Debug, Default)]
pub struct ConformanceEmbeddings {
    texts: Arc<AtomicUsize>,
}

impl Embeddings for ConformanceEmbeddings {
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
        Box::pin(async move {
            if texts.iter().any(|t| t.contains("<fail>")) {
                return Err(EmbeddingError::Failed(
                    "conformance: the model is down".into(),
                ));
            }
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            let model = HashEmbeddings::new(DIMS);
            Ok(texts
                .iter()
                .map(|t| {
                    if t.contains("<wrong-dims>") {
                        vec![0.5; DIMS + 1].into()
                    } else {
                        model.embed(t).into()
                    }
                })
                .collect())
        })
    }
}

/// A namespace no other property (or earlier run) uses.
fn fresh(property: &str) -> Namespace {
    let root = format!("conf-{property}-{:012x}", fastrand::u64(..) >> 16);
    Namespace::new([root]).unwrap_or_else(|e| panic!("conformance {property}: {e}"))
}

fn child(ns: &Namespace, labels: &[&str]) -> Namespace {
    let mut all: Vec<String> = ns.labels().to_vec();
    all.extend(labels.iter().map(|l| (*l).to_owned()));
    Namespace::new(all).unwrap_or_else(|e| panic!("conformance: {e}"))
}

fn ok<T>(property: &str, result: Result<T, StoreError>) -> T {
    result.unwrap_or_else(|e| panic!("conformance {property}: store error: {e}"))
}

fn obj(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("conformance: not an object: {other}"),
    }
}

async fn pause(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn keys(items: &[super::SearchItem]) -> Vec<&str> {
    items.iter().map(|i| i.key.as_str()).collect()
}

/// What is put is read back: namespace, key, value (nested, unicode, numbers).
pub async fn put_get_round_trip(store: &dyn Store) {
    let p = "put_get_round_trip";
    let ns = fresh(p);
    let value = json!({"text": "héllo ✓", "n": 3, "f": 0.5, "ok": true, "none": null,
                       "nested": {"list": [1, "two", {"three": 3}]}});
    ok(p, store.put(&ns, "k", value.clone()).await);
    let item = ok(p, store.get(&ns, "k").await).unwrap_or_else(|| panic!("{p}: item missing"));
    assert_eq!(item.namespace, ns, "{p}: namespace");
    assert_eq!(item.key, "k", "{p}: key");
    assert_eq!(Value::Object(item.value.clone()), value, "{p}: value");
    assert!(
        item.created_at <= item.updated_at,
        "{p}: created_at after updated_at"
    );
}

/// An update replaces the value and `updated_at`, and keeps `created_at`.
pub async fn update_keeps_created_at(store: &dyn Store) {
    let p = "update_keeps_created_at";
    let ns = fresh(p);
    ok(p, store.put(&ns, "k", json!({"v": 1})).await);
    let first = ok(p, store.get(&ns, "k").await).unwrap_or_else(|| panic!("{p}: missing"));
    pause(5).await;
    ok(p, store.put(&ns, "k", json!({"v": 2})).await);
    let second = ok(p, store.get(&ns, "k").await).unwrap_or_else(|| panic!("{p}: missing"));
    assert_eq!(second.value["v"], 2, "{p}: value not replaced");
    assert_eq!(
        second.created_at, first.created_at,
        "{p}: created_at changed"
    );
    assert!(
        second.updated_at > first.updated_at,
        "{p}: updated_at did not advance"
    );
}

/// A missing item reads as `None`; a delete removes an item; deleting what is
/// not there is no error.
pub async fn delete_and_missing(store: &dyn Store) {
    let p = "delete_and_missing";
    let ns = fresh(p);
    assert!(
        ok(p, store.get(&ns, "nothing").await).is_none(),
        "{p}: phantom item"
    );
    ok(p, store.put(&ns, "k", json!({"v": 1})).await);
    ok(p, store.delete(&ns, "k").await);
    assert!(
        ok(p, store.get(&ns, "k").await).is_none(),
        "{p}: deleted item still there"
    );
    ok(p, store.delete(&ns, "k").await);
    let found = ok(p, store.search(SearchOp::new(ns)).await);
    assert!(found.is_empty(), "{p}: deleted item found by search");
}

/// LangGraph's rejections: an empty namespace, the reserved `langgraph` root,
/// labels with periods, a value that is not an object — each a typed error,
/// with nothing written.
pub async fn bad_input_is_rejected(store: &dyn Store) {
    let p = "bad_input_is_rejected";
    let root = Namespace::root();
    assert!(
        matches!(
            store.put(&root, "k", json!({"v": 1})).await,
            Err(StoreError::InvalidNamespace { .. })
        ),
        "{p}: empty namespace accepted"
    );
    let reserved = Namespace::new(["langgraph", "x"]).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert!(
        matches!(
            store.put(&reserved, "k", json!({"v": 1})).await,
            Err(StoreError::InvalidNamespace { .. })
        ),
        "{p}: `langgraph` root accepted"
    );
    assert!(
        matches!(
            Namespace::new(["a.b"]),
            Err(StoreError::InvalidNamespace { .. })
        ),
        "{p}: a label with a period accepted"
    );
    let ns = fresh(p);
    for value in [json!("text"), json!([1, 2]), json!(3), Value::Null] {
        assert!(
            matches!(
                store.put(&ns, "k", value.clone()).await,
                Err(StoreError::NotAnObject { .. })
            ),
            "{p}: non-object value {value} accepted"
        );
    }
    // A batch with one invalid op writes nothing.
    let batch = vec![
        Op::Put(PutOp::put_object(ns.clone(), "good", obj(json!({"v": 1})))),
        Op::Put(PutOp::put_object(root.clone(), "bad", obj(json!({"v": 1})))),
    ];
    assert!(
        store.batch(batch).await.is_err(),
        "{p}: batch with an invalid put succeeded"
    );
    assert!(
        ok(p, store.get(&ns, "good").await).is_none(),
        "{p}: failed batch wrote an item"
    );
    let bad_filter = SearchOp::new(ns).filter(Filter::new().gt("v", json!([1])));
    assert!(
        matches!(
            store.search(bad_filter).await,
            Err(StoreError::InvalidFilter { .. })
        ),
        "{p}: a comparison with an array accepted"
    );
}

/// `put_typed` / `get_typed` round-trip a struct; a stored value that does not
/// fit the type is [`StoreError::DoesNotFit`]; a type that is not an object
/// is [`StoreError::NotAnObject`].
pub async fn typed_access(store: &dyn Store) {
    #[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
    struct Prefs {
        diet: String,
        spice: u8,
    }
    let p = "typed_access";
    let ns = fresh(p);
    let prefs = Prefs {
        diet: "vegetarian".into(),
        spice: 2,
    };
    ok(p, store.put_typed(&ns, "prefs", &prefs).await);
    let back: Option<Prefs> = ok(p, store.get_typed(&ns, "prefs").await);
    assert_eq!(back, Some(prefs), "{p}: typed round trip");
    ok(p, store.put(&ns, "other", json!({"diet": 1})).await);
    assert!(
        matches!(
            store.get_typed::<Prefs>(&ns, "other").await,
            Err(StoreError::DoesNotFit { .. })
        ),
        "{p}: a value of another shape read as Prefs"
    );
    assert!(
        matches!(
            store.put_typed(&ns, "n", &5u32).await,
            Err(StoreError::NotAnObject { .. })
        ),
        "{p}: a number stored"
    );
}

/// The same key in two namespaces is two items; a search under one prefix does
/// not see the other.
pub async fn namespaces_isolated(store: &dyn Store) {
    let p = "namespaces_isolated";
    let ns = fresh(p);
    let (a, b) = (child(&ns, &["a"]), child(&ns, &["b"]));
    ok(p, store.put(&a, "k", json!({"v": "a"})).await);
    ok(p, store.put(&b, "k", json!({"v": "b"})).await);
    let got = ok(p, store.get(&a, "k").await).unwrap_or_else(|| panic!("{p}: missing"));
    assert_eq!(got.value["v"], "a", "{p}: namespaces share an item");
    let found = ok(p, store.search(SearchOp::new(b.clone())).await);
    assert_eq!(found.len(), 1, "{p}: search under b");
    assert_eq!(
        found[0].namespace, b,
        "{p}: search under b found another namespace"
    );
    assert!(
        ok(p, store.get(&ns, "k").await).is_none(),
        "{p}: parent namespace has the item"
    );
}

/// A search finds the items whose namespace starts with the prefix (label by
/// label: `("ab",)` is not under `("a",)`), most recently updated first, with
/// no score.
pub async fn search_prefix_and_recency_order(store: &dyn Store) {
    let p = "search_prefix_and_recency_order";
    let ns = fresh(p);
    let a = child(&ns, &["a"]);
    let deep = child(&ns, &["a", "deep"]);
    let ab = child(&ns, &["ab"]);
    for (n, key) in [
        (&a, "first"),
        (&deep, "second"),
        (&ab, "elsewhere"),
        (&a, "third"),
    ] {
        ok(p, store.put(n, key, json!({"k": key})).await);
        pause(5).await;
    }
    // Updating `first` makes it the most recent.
    ok(
        p,
        store
            .put(&a, "first", json!({"k": "first", "again": true}))
            .await,
    );
    let found = ok(p, store.search(SearchOp::new(a)).await);
    assert_eq!(
        keys(&found),
        ["first", "third", "second"],
        "{p}: order or prefix"
    );
    assert!(
        found.iter().all(|i| i.score.is_none()),
        "{p}: scores without a query"
    );
    let all = ok(p, store.search(SearchOp::new(ns)).await);
    assert_eq!(all.len(), 4, "{p}: whole subtree");
}

/// `limit` and `offset` page through the results in order.
pub async fn search_limit_offset(store: &dyn Store) {
    let p = "search_limit_offset";
    let ns = fresh(p);
    for i in 0..5 {
        ok(p, store.put(&ns, &format!("k{i}"), json!({"i": i})).await);
        pause(3).await;
    }
    let page = ok(
        p,
        store
            .search(SearchOp::new(ns.clone()).limit(2).offset(1))
            .await,
    );
    assert_eq!(keys(&page), ["k3", "k2"], "{p}: second page");
    let tail = ok(p, store.search(SearchOp::new(ns.clone()).offset(4)).await);
    assert_eq!(keys(&tail), ["k0"], "{p}: last page");
    let none = ok(p, store.search(SearchOp::new(ns).offset(10)).await);
    assert!(none.is_empty(), "{p}: past the end");
}

/// Filters with LangGraph's operators; a missing field matches no comparison;
/// a comparison with a value of another kind is [`StoreError::FilterType`].
pub async fn search_filters(store: &dyn Store) {
    let p = "search_filters";
    let ns = fresh(p);
    let items = [
        (
            "a",
            json!({"color": "red", "score": 4.5, "meta": {"lang": "en", "v": 1}}),
        ),
        ("b", json!({"color": "blue", "score": 3})),
        ("c", json!({"color": "red", "score": 1})),
        ("d", json!({"color": "green"})),
    ];
    for (k, v) in &items {
        ok(p, store.put(&ns, k, v.clone()).await);
    }
    let run = |filter: Value| {
        let ns = ns.clone();
        async move {
            let filter = Filter::from_json(filter).unwrap_or_else(|e| panic!("{p}: {e}"));
            let found = ok(p, store.search(SearchOp::new(ns).filter(filter)).await);
            let mut k: Vec<String> = found.iter().map(|i| i.key.clone()).collect();
            k.sort();
            k
        }
    };
    // Python's SqliteStore (same items, same filters), keys sorted:
    // ['a', 'c'], ['b', 'd'], ['a'], ['a', 'b'], ['c'], ['b', 'c'], (a nested
    // object: "Unsupported operator: lang"), ['a', 'b'], []. Its InMemoryStore
    // gives the same for the equality filters and raises TypeError ("float()
    // argument must be a string or a real number, not 'NoneType'") for the
    // comparisons, on item `d`, which has no `score`; its `{"meta": {"lang":
    // "en"}}` is ['a'].
    assert_eq!(
        run(json!({"color": "red"})).await,
        ["a", "c"],
        "{p}: equality"
    );
    assert_eq!(
        run(json!({"color": {"$ne": "red"}})).await,
        ["b", "d"],
        "{p}: $ne"
    );
    assert_eq!(run(json!({"score": {"$gt": 3}})).await, ["a"], "{p}: $gt");
    assert_eq!(
        run(json!({"score": {"$gte": 3}})).await,
        ["a", "b"],
        "{p}: $gte"
    );
    assert_eq!(run(json!({"score": {"$lt": 3}})).await, ["c"], "{p}: $lt");
    assert_eq!(
        run(json!({"score": {"$lte": 3}, "color": {"$ne": "green"}})).await,
        ["b", "c"],
        "{p}: $lte and $ne"
    );
    assert_eq!(
        run(json!({"meta": {"lang": "en"}})).await,
        ["a"],
        "{p}: nested object"
    );
    assert_eq!(
        run(json!({"score": {"$gte": 3, "$lte": 4.5}})).await,
        ["a", "b"],
        "{p}: range"
    );
    assert!(
        run(json!({"absent": "x"})).await.is_empty(),
        "{p}: missing field"
    );
    let wrong_kind = Filter::new().gt("color", 3);
    assert!(
        matches!(
            store.search(SearchOp::new(ns).filter(wrong_kind)).await,
            Err(StoreError::FilterType { .. })
        ),
        "{p}: a string compared with a number"
    );
}

/// On a store without an index a query is ignored (LangGraph): recency order,
/// no scores.
pub async fn query_without_index_is_ignored(store: &dyn Store) {
    let p = "query_without_index_is_ignored";
    let ns = fresh(p);
    ok(p, store.put(&ns, "old", json!({"text": "apples"})).await);
    pause(5).await;
    ok(p, store.put(&ns, "new", json!({"text": "pears"})).await);
    let found = ok(p, store.search(SearchOp::new(ns).query("apples")).await);
    assert_eq!(keys(&found), ["new", "old"], "{p}: order");
    assert!(found.iter().all(|i| i.score.is_none()), "{p}: scores");
}

/// Namespaces holding items, sorted, matched by prefix / suffix with `*`
/// wildcards, truncated to `max_depth`, paged; a namespace whose items are all
/// deleted is not listed.
pub async fn list_namespaces(store: &dyn Store) {
    let p = "list_namespaces";
    let ns = fresh(p);
    let root = ns.labels()[0].clone();
    for labels in [
        &["a", "b", "c"][..],
        &["a", "b", "d", "e"],
        &["a", "b", "d", "i"],
        &["a", "b", "f"],
        &["a", "c", "f"],
    ] {
        ok(
            p,
            store.put(&child(&ns, labels), "k", json!({"v": 1})).await,
        );
    }
    let pat = |labels: &[&str]| {
        let mut all = vec![root.clone()];
        all.extend(labels.iter().map(|l| (*l).to_owned()));
        NamespacePattern::new(all).unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    let show = |found: Vec<Namespace>| -> Vec<String> {
        found.iter().map(|n| n.labels()[1..].join("/")).collect()
    };
    // Python (the example of BaseStore.list_namespaces), with the root label added:
    // list_namespaces(prefix=("a", "b"), max_depth=3) == [("a","b","c"), ("a","b","d"), ("a","b","f")]
    let op = ListNamespacesOp::new()
        .prefix(pat(&["a", "b"]))
        .max_depth(4);
    assert_eq!(
        show(ok(p, store.list_namespaces(op).await)),
        ["a/b/c", "a/b/d", "a/b/f"],
        "{p}: max_depth"
    );
    let op = ListNamespacesOp::new()
        .prefix(pat(&[]))
        .suffix(NamespacePattern::new(["f"]).unwrap_or_else(|e| panic!("{p}: {e}")));
    assert_eq!(
        show(ok(p, store.list_namespaces(op).await)),
        ["a/b/f", "a/c/f"],
        "{p}: suffix"
    );
    let op = ListNamespacesOp::new().prefix(pat(&["a", "*", "f"]));
    assert_eq!(
        show(ok(p, store.list_namespaces(op).await)),
        ["a/b/f", "a/c/f"],
        "{p}: wildcard"
    );
    let op = ListNamespacesOp::new().prefix(pat(&[]));
    assert_eq!(
        show(ok(p, store.list_namespaces(op).await)),
        ["a/b/c", "a/b/d/e", "a/b/d/i", "a/b/f", "a/c/f"],
        "{p}: all, sorted"
    );
    let op = ListNamespacesOp::new().prefix(pat(&[])).limit(2).offset(1);
    assert_eq!(
        show(ok(p, store.list_namespaces(op).await)),
        ["a/b/d/e", "a/b/d/i"],
        "{p}: paging"
    );
    ok(p, store.delete(&child(&ns, &["a", "c", "f"]), "k").await);
    let op = ListNamespacesOp::new().prefix(pat(&["a", "c"]));
    assert!(
        ok(p, store.list_namespaces(op).await).is_empty(),
        "{p}: emptied namespace listed"
    );
}

/// A batch of mixed operations: results in order, reads see the store before
/// the batch's writes, the last put of a key wins.
pub async fn batch_reads_before_writes(store: &dyn Store) {
    let p = "batch_reads_before_writes";
    let ns = fresh(p);
    ok(p, store.put(&ns, "old", json!({"v": "old"})).await);
    let ops = vec![
        Op::Put(PutOp::put_object(ns.clone(), "new", obj(json!({"v": 1})))),
        Op::Get(GetOp::new(ns.clone(), "new")),
        Op::Search(SearchOp::new(ns.clone())),
        Op::Put(PutOp::put_object(ns.clone(), "new", obj(json!({"v": 2})))),
        Op::Put(PutOp::delete(ns.clone(), "old")),
        Op::ListNamespaces(ListNamespacesOp::new().prefix(
            NamespacePattern::new(ns.labels().to_vec()).unwrap_or_else(|e| panic!("{p}: {e}")),
        )),
        Op::Get(GetOp::new(ns.clone(), "old")),
    ];
    let results = ok(p, store.batch(ops).await);
    assert_eq!(results.len(), 7, "{p}: one result per op");
    assert_eq!(results[0], OpResult::Put, "{p}: put result");
    assert_eq!(
        results[1],
        OpResult::Get(None),
        "{p}: a get saw the batch's own put"
    );
    match &results[2] {
        OpResult::Search(found) => {
            assert_eq!(keys(found), ["old"], "{p}: search saw the batch's writes")
        }
        other => panic!("{p}: search result {other:?}"),
    }
    assert_eq!(
        results[5],
        OpResult::ListNamespaces(vec![ns.clone()]),
        "{p}: list"
    );
    match &results[6] {
        OpResult::Get(Some(item)) => assert_eq!(item.value["v"], "old", "{p}: get"),
        other => panic!("{p}: a get saw the batch's own delete: {other:?}"),
    }
    let new = ok(p, store.get(&ns, "new").await).unwrap_or_else(|| panic!("{p}: put lost"));
    assert_eq!(new.value["v"], 2, "{p}: the last put did not win");
    assert!(
        ok(p, store.get(&ns, "old").await).is_none(),
        "{p}: delete lost"
    );
}

/// Many writers to one key at once: every put succeeds and the item ends as one
/// of the values written, whole.
pub async fn concurrent_writers_one_key(store: &dyn Store) {
    let p = "concurrent_writers_one_key";
    let ns = fresh(p);
    let writes = (0..16).map(|i| {
        let ns = ns.clone();
        async move { store.put(&ns, "k", json!({"writer": i, "copy": i})).await }
    });
    for result in futures::future::join_all(writes).await {
        ok(p, result);
    }
    let item = ok(p, store.get(&ns, "k").await).unwrap_or_else(|| panic!("{p}: missing"));
    let writer = item.value["writer"].as_i64().unwrap_or(-1);
    assert!((0..16).contains(&writer), "{p}: value {:?}", item.value);
    assert_eq!(item.value["copy"], item.value["writer"], "{p}: torn value");
    let found = ok(p, store.search(SearchOp::new(ns)).await);
    assert_eq!(found.len(), 1, "{p}: one key, several items");
}

fn expected_score(query: &str, text: &str) -> f64 {
    let model = HashEmbeddings::new(DIMS);
    cosine_similarity(&model.embed(query), &model.embed(text))
}

/// A query ranks items by the cosine similarity of its vector to their embedded
/// texts, best first, with that similarity as the score. Store:
/// [`index_config`].
pub async fn search_by_query(store: &dyn Store) {
    let p = "search_by_query";
    let ns = fresh(p);
    let texts = [
        ("veg", "alice is vegetarian and loves vegetarian food"),
        ("cat", "alice has a cat named tom"),
        ("city", "alice lives in lisbon"),
    ];
    for (k, t) in texts {
        ok(p, store.put(&ns, k, json!({"text": t})).await);
    }
    let query = "vegetarian food";
    let found = ok(p, store.search(SearchOp::new(ns).query(query)).await);
    let mut expected: Vec<(&str, f64)> = texts
        .iter()
        .map(|(k, t)| (*k, expected_score(query, t)))
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    assert_eq!(found.len(), 3, "{p}: count");
    assert_eq!(found[0].key, "veg", "{p}: best match");
    for (item, (key, score)) in found.iter().zip(&expected) {
        let got = item
            .score
            .unwrap_or_else(|| panic!("{p}: no score for {}", item.key));
        assert!(
            (got - score).abs() < 1e-5,
            "{p}: score of {key}: {got} vs {score}"
        );
    }
    let scores: Vec<f64> = found.iter().filter_map(|i| i.score).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "{p}: not best first: {scores:?}"
    );
}

/// An item with several embedded texts (a `tags[*]` list, two fields) scores
/// the best of them, and is found once. Store: [`index_config`].
pub async fn several_texts_score_their_best(store: &dyn Store) {
    let p = "several_texts_score_their_best";
    let ns = fresh(p);
    ok(
        p,
        store
            .put(
                &ns,
                "multi",
                json!({"text": "weather report", "tags": ["sailing", "lisbon harbour"]}),
            )
            .await,
    );
    ok(
        p,
        store
            .put(&ns, "single", json!({"text": "lisbon harbour boats"}))
            .await,
    );
    let query = "lisbon harbour";
    let found = ok(p, store.search(SearchOp::new(ns).query(query)).await);
    assert_eq!(found.len(), 2, "{p}: one result per item");
    let multi = found
        .iter()
        .find(|i| i.key == "multi")
        .unwrap_or_else(|| panic!("{p}: missing"));
    let best = ["weather report", "sailing", "lisbon harbour"]
        .iter()
        .map(|t| expected_score(query, t))
        .fold(f64::MIN, f64::max);
    let got = multi.score.unwrap_or_else(|| panic!("{p}: no score"));
    assert!(
        (got - best).abs() < 1e-5,
        "{p}: max pooling: {got} vs {best}"
    );
    assert_eq!(found[0].key, "multi", "{p}: exact tag should rank first");
}

/// Per-item index choices: `PutIndex::Off` items are never found by a query
/// (but are by `get` and plain search); `PutIndex::Fields` embeds the listed
/// paths instead of the store's. Store: [`index_config`].
pub async fn index_choices(store: &dyn Store) {
    let p = "index_choices";
    let ns = fresh(p);
    let off = PutOp::put_object(ns.clone(), "off", obj(json!({"text": "secret garden"})))
        .index(PutIndex::Off);
    ok(p, store.put_with(off).await);
    let fields = PutIndex::fields(["body.summary"]).unwrap_or_else(|e| panic!("{p}: {e}"));
    let custom = PutOp::put_object(
        ns.clone(),
        "custom",
        obj(json!({"text": "unrelated", "body": {"summary": "secret garden"}})),
    )
    .index(fields);
    ok(p, store.put_with(custom).await);
    ok(
        p,
        store
            .put(&ns, "none", json!({"other": "secret garden"}))
            .await,
    );
    let found = ok(
        p,
        store
            .search(SearchOp::new(ns.clone()).query("secret garden"))
            .await,
    );
    assert_eq!(keys(&found), ["custom"], "{p}: only the indexed item");
    let score = found[0].score.unwrap_or_else(|| panic!("{p}: no score"));
    assert!(
        (score - 1.0).abs() < 1e-5,
        "{p}: custom field embedded: {score}"
    );
    assert!(
        ok(p, store.get(&ns, "off").await).is_some(),
        "{p}: unindexed item lost"
    );
    assert_eq!(
        ok(p, store.search(SearchOp::new(ns)).await).len(),
        3,
        "{p}: plain search"
    );
}

/// An update embeds only the texts that changed; an unchanged put embeds
/// nothing. Store: [`index_config`] (with its count).
pub async fn reembed_only_changed(store: &dyn Store, embedded: &AtomicUsize) {
    let p = "reembed_only_changed";
    let ns = fresh(p);
    let before = embedded.load(Ordering::SeqCst);
    ok(
        p,
        store
            .put(
                &ns,
                "k",
                json!({"text": "alpha", "tags": ["beta", "gamma"]}),
            )
            .await,
    );
    assert_eq!(
        embedded.load(Ordering::SeqCst) - before,
        3,
        "{p}: first put"
    );
    let before = embedded.load(Ordering::SeqCst);
    ok(
        p,
        store
            .put(
                &ns,
                "k",
                json!({"text": "alpha", "tags": ["beta", "delta"], "n": 1}),
            )
            .await,
    );
    assert_eq!(
        embedded.load(Ordering::SeqCst) - before,
        1,
        "{p}: one tag changed"
    );
    let before = embedded.load(Ordering::SeqCst);
    ok(
        p,
        store
            .put(
                &ns,
                "k",
                json!({"text": "alpha", "tags": ["beta", "delta"], "n": 2}),
            )
            .await,
    );
    assert_eq!(
        embedded.load(Ordering::SeqCst) - before,
        0,
        "{p}: no text changed"
    );
    let found = ok(p, store.search(SearchOp::new(ns).query("delta")).await);
    let score = found
        .first()
        .and_then(|i| i.score)
        .unwrap_or_else(|| panic!("{p}: not found"));
    assert!(
        (score - 1.0).abs() < 1e-5,
        "{p}: the new tag is searchable: {score}"
    );
}

/// A failed embedding (the model fails, or returns a vector of the wrong size)
/// is a [`StoreError::Embedding`] and writes nothing of the batch. Store:
/// [`index_config`].
pub async fn failed_embedding_writes_nothing(store: &dyn Store) {
    let p = "failed_embedding_writes_nothing";
    let ns = fresh(p);
    ok(p, store.put(&ns, "k", json!({"text": "original"})).await);
    let ops = vec![
        Op::Put(PutOp::put_object(
            ns.clone(),
            "other",
            obj(json!({"text": "fine"})),
        )),
        Op::Put(PutOp::put_object(
            ns.clone(),
            "k",
            obj(json!({"text": "<fail>"})),
        )),
    ];
    assert!(
        matches!(
            store.batch(ops).await,
            Err(StoreError::Embedding(EmbeddingError::Failed(_)))
        ),
        "{p}: a failing model"
    );
    assert!(
        ok(p, store.get(&ns, "other").await).is_none(),
        "{p}: half a batch written"
    );
    let kept = ok(p, store.get(&ns, "k").await).unwrap_or_else(|| panic!("{p}: item lost"));
    assert_eq!(kept.value["text"], "original", "{p}: item overwritten");
    assert!(
        matches!(
            store.put(&ns, "k", json!({"text": "<wrong-dims>"})).await,
            Err(StoreError::Embedding(EmbeddingError::WrongDimensions {
                expected: DIMS,
                ..
            }))
        ),
        "{p}: a vector of the wrong size"
    );
    let kept = ok(p, store.get(&ns, "k").await).unwrap_or_else(|| panic!("{p}: item lost"));
    assert_eq!(kept.value["text"], "original", "{p}: item overwritten");
    let found = ok(p, store.search(SearchOp::new(ns).query("original")).await);
    assert_eq!(keys(&found), ["k"], "{p}: old vectors lost");
}

/// A query search with a filter and an offset: filtered first, then ranked,
/// then paged. Store: [`index_config`].
pub async fn query_search_with_filter_and_offset(store: &dyn Store) {
    let p = "query_search_with_filter_and_offset";
    let ns = fresh(p);
    let items = [
        ("a", "red apples and red wine", 1),
        ("b", "red apples", 2),
        ("c", "red wine", 2),
        ("d", "green tea", 2),
    ];
    for (k, t, group) in items {
        ok(
            p,
            store.put(&ns, k, json!({"text": t, "group": group})).await,
        );
    }
    let query = "red apples";
    let op = SearchOp::new(ns)
        .query(query)
        .filter(Filter::new().eq("group", 2))
        .offset(1)
        .limit(2);
    let found = ok(p, store.search(op).await);
    let mut expected: Vec<(&str, f64)> = items
        .iter()
        .filter(|i| i.2 == 2)
        .map(|(k, t, _)| (*k, expected_score(query, t)))
        .collect();
    expected.sort_by(|a, b| b.1.total_cmp(&a.1));
    let want: Vec<&str> = expected[1..3].iter().map(|e| e.0).collect();
    assert_eq!(keys(&found), want, "{p}: filtered, ranked, paged");
}

/// An item put with a TTL is not returned once expired, and a sweep deletes it
/// (counting it); an item without a TTL survives the sweep. Store:
/// [`ttl_config`].
pub async fn ttl_expiry_and_sweep(store: &dyn Store) {
    let p = "ttl_expiry_and_sweep";
    let ns = fresh(p);
    let short = PutOp::put_object(ns.clone(), "short", obj(json!({"v": 1})))
        .ttl(Ttl::After(Duration::from_millis(20)));
    ok(p, store.put_with(short).await);
    let forever = PutOp::put_object(ns.clone(), "forever", obj(json!({"v": 2}))).ttl(Ttl::Never);
    ok(p, store.put_with(forever).await);
    pause(120).await;
    assert!(
        ok(p, store.get(&ns, "short").await).is_none(),
        "{p}: expired item returned"
    );
    assert_eq!(
        keys(&ok(p, store.search(SearchOp::new(ns.clone())).await)),
        ["forever"],
        "{p}: expired item found"
    );
    let swept = ok(p, store.sweep_ttl().await);
    assert!(swept >= 1, "{p}: sweep deleted {swept}");
    assert!(
        ok(p, store.get(&ns, "forever").await).is_some(),
        "{p}: item without TTL swept"
    );
    let listed = ok(
        p,
        store
            .list_namespaces(ListNamespacesOp::new().prefix(
                NamespacePattern::new(ns.labels().to_vec()).unwrap_or_else(|e| panic!("{p}: {e}")),
            ))
            .await,
    );
    assert_eq!(listed, vec![ns], "{p}: namespaces after the sweep");
}

/// [`Ttl::StoreDefault`] takes the configured default TTL (300 ms in
/// [`ttl_config`]); [`Ttl::Never`] overrides it.
pub async fn default_ttl(store: &dyn Store) {
    let p = "default_ttl";
    let ns = fresh(p);
    ok(p, store.put(&ns, "default", json!({"v": 1})).await);
    ok(
        p,
        store
            .put_with(PutOp::put_object(ns.clone(), "never", obj(json!({"v": 2}))).ttl(Ttl::Never))
            .await,
    );
    pause(500).await;
    assert!(
        ok(
            p,
            store
                .get_with(GetOp::new(ns.clone(), "default").refresh_ttl(false))
                .await
        )
        .is_none(),
        "{p}: default TTL not applied"
    );
    assert!(
        ok(p, store.get(&ns, "never").await).is_some(),
        "{p}: Ttl::Never expired"
    );
}

/// A read restarts the TTL of what it returns (unless it says not to).
/// Store: [`ttl_config`] (refresh on read).
pub async fn refresh_on_read(store: &dyn Store) {
    let p = "refresh_on_read";
    let ns = fresh(p);
    let ttl = Ttl::After(Duration::from_millis(1500));
    for key in ["read", "unread", "peeked"] {
        ok(
            p,
            store
                .put_with(PutOp::put_object(ns.clone(), key, obj(json!({"v": key}))).ttl(ttl))
                .await,
        );
    }
    pause(900).await;
    assert!(
        ok(p, store.get(&ns, "read").await).is_some(),
        "{p}: expired early"
    );
    assert!(
        ok(
            p,
            store
                .get_with(GetOp::new(ns.clone(), "peeked").refresh_ttl(false))
                .await
        )
        .is_some(),
        "{p}: expired early"
    );
    pause(900).await;
    assert!(
        ok(
            p,
            store
                .get_with(GetOp::new(ns.clone(), "read").refresh_ttl(false))
                .await
        )
        .is_some(),
        "{p}: a read did not refresh the TTL"
    );
    assert!(
        ok(p, store.get(&ns, "unread").await).is_none(),
        "{p}: an unread item did not expire"
    );
    assert!(
        ok(p, store.get(&ns, "peeked").await).is_none(),
        "{p}: refresh_ttl(false) refreshed"
    );
}
