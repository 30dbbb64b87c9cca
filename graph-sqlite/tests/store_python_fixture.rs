//! Reading a store database written by LangGraph's own Python `SqliteStore`
//! (tests/fixtures/python_store.sqlite, made by make_python_store_fixture.py),
//! and comparing with what LangGraph itself read back from it
//! (python_store.expected.json): the items, the results of the same searches
//! with their scores (exactly: the vectors are the same floats and the cosine
//! the same arithmetic), and the namespaces.

use graph_core::store::{
    Filter, HashEmbeddings, IndexConfig, Item, ListNamespacesOp, Namespace, SearchOp, Store,
    StoreConfig,
};
use graph_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn expected() -> Value {
    let text =
        std::fs::read_to_string(fixture("python_store.expected.json")).expect("read expected json");
    serde_json::from_str(&text).expect("parse expected json")
}

/// The index the fixture was written with: HashEmbeddings, 64 dimensions, `text`.
fn config() -> StoreConfig {
    let index = IndexConfig::new(64, HashEmbeddings::new(64))
        .fields(["text"])
        .expect("fields");
    StoreConfig::new().index(index)
}

/// Opens a copy: opening switches the file to WAL, and the committed fixture
/// must stay as Python wrote it.
async fn open_copy() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("python_store.sqlite");
    std::fs::copy(fixture("python_store.sqlite"), &path).expect("copy fixture");
    let store = SqliteStore::open(&path, config())
        .await
        .expect("open the Python-written store");
    (dir, store)
}

fn seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// The item in the JSON form of store_common.py's `dump_item`.
fn as_json(item: &Item, score: Option<f64>) -> Value {
    let mut out = json!({
        "namespace": item.namespace.labels(),
        "key": item.key,
        "value": item.value,
        "created_at": seconds(item.created_at),
        "updated_at": seconds(item.updated_at),
    });
    if let Some(score) = score {
        out["score"] = json!(score);
    }
    out
}

fn namespace(v: &Value) -> Namespace {
    let labels: Vec<String> = serde_json::from_value(v.clone()).expect("namespace labels");
    Namespace::new(labels).expect("valid namespace")
}

#[tokio::test]
async fn reads_the_items_python_wrote() {
    let (_dir, store) = open_copy().await;
    let expected = expected();
    let gets = expected["gets"].as_array().expect("gets");
    assert_eq!(gets.len(), 7);
    for want in gets {
        let ns = namespace(&want["namespace"]);
        let key = want["key"].as_str().expect("key");
        let item = store
            .get(&ns, key)
            .await
            .expect("get")
            .unwrap_or_else(|| panic!("{key} in {ns} is missing"));
        assert_eq!(as_json(&item, None), *want, "{key} in {ns}");
    }
}

#[tokio::test]
async fn finds_what_python_found_with_the_same_scores() {
    let (_dir, store) = open_copy().await;
    for case in expected()["searches"].as_array().expect("searches") {
        let spec = &case["search"];
        let mut op = SearchOp::new(namespace(&spec["namespace"]))
            .limit(spec["limit"].as_u64().expect("limit") as usize)
            .offset(spec["offset"].as_u64().expect("offset") as usize);
        if let Some(query) = spec["query"].as_str() {
            op = op.query(query);
        }
        if !spec["filter"].is_null() {
            op = op.filter(Filter::from_json(spec["filter"].clone()).expect("filter"));
        }
        let found = store.search(op).await.expect("search");
        let got: Vec<Value> = found.iter().map(|i| as_json(i, i.score)).collect();
        assert_eq!(Value::Array(got), case["found"], "search {spec}");
    }
}

#[tokio::test]
async fn an_expired_item_is_not_returned_and_is_swept() {
    let (_dir, store) = open_copy().await;
    let prefs = Namespace::new(["prefs", "alice"]).expect("namespace");
    // LangGraph's SQLite store still returns it (make_python_store_fixture.py
    // asserts so); an expired item is gone for every stategraph store.
    assert!(store.get(&prefs, "expired").await.expect("get").is_none());
    assert_eq!(store.sweep_ttl().await.expect("sweep"), 1);
    let session = store.get(&prefs, "session").await.expect("get");
    assert!(session.is_some(), "an item with a ten-year TTL was swept");
}

#[tokio::test]
async fn lists_the_namespaces_python_listed() {
    let (_dir, store) = open_copy().await;
    let listed = store
        .list_namespaces(ListNamespacesOp::new())
        .await
        .expect("list");
    let want: Vec<Namespace> = expected()["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .map(namespace)
        .collect();
    assert_eq!(listed, want);
}

#[tokio::test]
async fn writes_next_to_python_items_and_searches_both() {
    let (_dir, store) = open_copy().await;
    let en = Namespace::new(["docs", "en"]).expect("namespace");
    store
        .put(
            &en,
            "cider",
            json!({"text": "red apples cider", "kind": "drink"}),
        )
        .await
        .expect("put");
    // Updating a Python item keeps its creation time.
    let before = store.get(&en, "wine").await.expect("get").expect("wine");
    store
        .put(
            &en,
            "wine",
            json!({"text": "red wine from porto", "kind": "drink", "n": 3}),
        )
        .await
        .expect("update");
    let after = store.get(&en, "wine").await.expect("get").expect("wine");
    assert_eq!(after.created_at, before.created_at);
    assert!(after.updated_at > before.updated_at);
    let found = store
        .search(SearchOp::new(en).query("red apples").limit(3))
        .await
        .expect("search");
    let keys: Vec<&str> = found.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, ["cider", "pears", "apples"]);
    // Python's items score as Python scored them (the first search of the
    // fixture is this query under ("docs",)).
    let python = &expected()["searches"][0]["found"];
    assert_eq!(found[1].score, python[0]["score"].as_f64());
    assert_eq!(found[2].score, python[1]["score"].as_f64());
}
