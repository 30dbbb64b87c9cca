//! The Rust half of the store interop test with LangGraph's Python
//! `SqliteStore` (tests/store_python_reads_rust.sh runs both halves).
//!
//! ```text
//! store_interop write DB           writes items (indexed, unindexed, with TTLs)
//! store_interop dump DB SPECS OUT  writes every item and the results of the
//!                                  searches in SPECS (JSON) to OUT
//! ```
//!
//! The store is indexed as the Python side's: `HashEmbeddings` of 64
//! dimensions over `text` (store_common.py has the same model in Python).

use graph_core::store::{
    Filter, HashEmbeddings, IndexConfig, Item, Namespace, PutIndex, PutOp, SearchOp, Store,
    StoreConfig, Ttl,
};
use graph_sqlite::SqliteStore;
use serde_json::{json, Value};
use std::time::{Duration, UNIX_EPOCH};

type Error = Box<dyn std::error::Error>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["write", db] => write(db).await,
        ["dump", db, specs, out] => dump(db, specs, out).await,
        _ => Err("usage: store_interop write DB | dump DB SPECS.json OUT.json".into()),
    }
}

async fn open(db: &str) -> Result<SqliteStore, Error> {
    let index = IndexConfig::new(64, HashEmbeddings::new(64)).fields(["text"])?;
    Ok(SqliteStore::open(db, StoreConfig::new().index(index)).await?)
}

async fn write(db: &str) -> Result<(), Error> {
    let store = open(db).await?;
    let en = Namespace::new(["docs", "en"])?;
    let de = Namespace::new(["docs", "de"])?;
    let prefs = Namespace::new(["prefs", "bob"])?;
    store
        .put(
            &en,
            "kiwi",
            json!({"text": "green kiwi fruit", "kind": "fruit", "n": 1}),
        )
        .await?;
    store
        .put(
            &en,
            "port",
            json!({"text": "red port wine", "kind": "drink"}),
        )
        .await?;
    store
        .put(
            &en,
            "juice",
            json!({"text": "red apples juice", "kind": "drink", "n": 2.5}),
        )
        .await?;
    store
        .put(
            &de,
            "apfel",
            json!({"text": "rote äpfel", "kind": "fruit", "note": "ß ☀"}),
        )
        .await?;
    // Two vectors (`text` and `note`): an item scores its best.
    let both = PutOp::put(
        en.clone(),
        "notes",
        json!({"text": "plain words", "note": "red apples and pears", "kind": "fruit"}),
    )?
    .index(PutIndex::fields(["text", "note"])?);
    store.put_with(both).await?;
    let off = PutOp::put(prefs.clone(), "theme", json!({"theme": "light"}))?.index(PutIndex::Off);
    store.put_with(off).await?;
    let ten_years = Duration::from_secs(10 * 365 * 24 * 3600);
    let session = PutOp::put(prefs.clone(), "session", json!({"id": 1}))?
        .index(PutIndex::Off)
        .ttl(Ttl::After(ten_years));
    store.put_with(session).await?;
    let expired = PutOp::put(prefs, "expired", json!({"id": 2}))?
        .index(PutIndex::Off)
        .ttl(Ttl::After(Duration::from_millis(1)));
    store.put_with(expired).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.close().await?;
    Ok(())
}

fn seconds(item: &Item, at: std::time::SystemTime) -> Result<f64, Error> {
    Ok(at
        .duration_since(UNIX_EPOCH)
        .map_err(|_| format!("{} has a time before 1970", item.key))?
        .as_secs_f64())
}

/// The item in the JSON form of store_common.py's `dump_item`.
fn as_json(item: &Item, score: Option<f64>) -> Result<Value, Error> {
    let mut out = json!({
        "namespace": item.namespace.labels(),
        "key": item.key,
        "value": item.value,
        "created_at": seconds(item, item.created_at)?,
        "updated_at": seconds(item, item.updated_at)?,
    });
    if let Some(score) = score {
        out["score"] = json!(score);
    }
    Ok(out)
}

async fn dump(db: &str, specs: &str, out: &str) -> Result<(), Error> {
    let store = open(db).await?;
    let specs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(specs)?)?;
    let mut items = Vec::new();
    for found in store
        .search(SearchOp::new(Namespace::root()).limit(10_000))
        .await?
    {
        items.push(as_json(&found, None)?);
    }
    let mut searches = Vec::new();
    for spec in specs {
        let labels: Vec<String> = serde_json::from_value(spec["namespace"].clone())?;
        let mut op = SearchOp::new(Namespace::new(labels)?)
            .limit(spec["limit"].as_u64().ok_or("limit")? as usize)
            .offset(spec["offset"].as_u64().ok_or("offset")? as usize);
        if let Some(query) = spec["query"].as_str() {
            op = op.query(query);
        }
        if !spec["filter"].is_null() {
            op = op.filter(Filter::from_json(spec["filter"].clone())?);
        }
        let mut found = Vec::new();
        for item in store.search(op).await? {
            found.push(as_json(&item, item.score)?);
        }
        searches.push(json!({"search": spec, "found": found}));
    }
    let namespaces: Vec<Vec<String>> = store
        .list_namespaces(Default::default())
        .await?
        .iter()
        .map(|ns| ns.labels().to_vec())
        .collect();
    let dumped = json!({"items": items, "searches": searches, "namespaces": namespaces});
    std::fs::write(out, serde_json::to_string_pretty(&dumped)?)?;
    store.close().await?;
    Ok(())
}
