//! A model that answers at once (`Embeddings::embed_documents_sync`) is asked
//! inside the put's job, in its transaction: the conformance suite with such
//! a model, and what happens when the model stops answering at once or panics.

use futures::future::BoxFuture;
use futures::FutureExt;
use graph_core::store::conformance;
use graph_core::store::{
    Embedding, EmbeddingError, Embeddings, HashEmbeddings, IndexConfig, Namespace, SearchOp, Store,
    StoreConfig,
};
use graph_sqlite::SqliteStore;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// `inner`, answering at once when its future is ready at the first poll
/// (the conformance model's is); counts the calls of each kind.
struct AtOnce {
    inner: Arc<dyn Embeddings>,
    /// Calls of `embed_documents_sync` answered after this many return `None`.
    answers: usize,
    sync_calls: AtomicUsize,
    async_calls: AtomicUsize,
    /// The name of the thread of each answer given at once.
    threads: Mutex<Vec<String>>,
}

impl AtOnce {
    fn new(inner: Arc<dyn Embeddings>) -> Self {
        AtOnce {
            inner,
            answers: usize::MAX,
            sync_calls: AtomicUsize::new(0),
            async_calls: AtomicUsize::new(0),
            threads: Mutex::new(Vec::new()),
        }
    }
}

impl Embeddings for AtOnce {
    fn embed_documents<'a>(
        &'a self,
        texts: &'a [&'a str],
    ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
        self.async_calls.fetch_add(1, Ordering::SeqCst);
        self.inner.embed_documents(texts)
    }

    fn embed_documents_sync(
        &self,
        texts: &[&str],
    ) -> Option<Result<Vec<Embedding>, EmbeddingError>> {
        if self.sync_calls.fetch_add(1, Ordering::SeqCst) >= self.answers {
            return None;
        }
        let thread = std::thread::current().name().unwrap_or_default().to_owned();
        self.threads.lock().expect("threads").push(thread);
        if texts.iter().any(|t| t.contains("<panic>")) {
            panic!("the model panicked");
        }
        let texts: Vec<&str> = texts.to_vec();
        let vectors = self.inner.embed_documents(&texts).now_or_never();
        Some(vectors.unwrap_or_else(|| panic!("the wrapped model did not answer at once")))
    }
}

/// The conformance index, its model wrapped in [`AtOnce`].
fn at_once(index: IndexConfig) -> IndexConfig {
    let fields: Vec<String> = index
        .field_paths()
        .iter()
        .map(|p| p.as_str().to_owned())
        .collect();
    let model = AtOnce::new(Arc::clone(index.embeddings()));
    IndexConfig::new(index.dims(), model)
        .fields(fields)
        .expect("the conformance fields")
}

#[tokio::test]
async fn file_store_passes_the_conformance_suite_with_a_model_that_answers_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = AtomicUsize::new(0);
    conformance::run_all(|mut config| {
        config.index = config.index.map(at_once);
        let n = files.fetch_add(1, Ordering::SeqCst);
        let path = dir.path().join(format!("store-{n}.sqlite"));
        async move {
            SqliteStore::open(path, config)
                .await
                .expect("open a file store")
        }
    })
    .await;
}

fn hash_model(answers: usize) -> Arc<AtOnce> {
    let mut model = AtOnce::new(Arc::new(HashEmbeddings::new(16)));
    model.answers = answers;
    Arc::new(model)
}

async fn open(dir: &tempfile::TempDir, model: &Arc<AtOnce>) -> SqliteStore {
    let index = IndexConfig::shared(16, model.clone() as Arc<dyn Embeddings>)
        .fields(["text"])
        .expect("fields");
    SqliteStore::open(
        dir.path().join("store.sqlite"),
        StoreConfig::new().index(index),
    )
    .await
    .expect("open")
}

#[tokio::test]
async fn a_model_that_answers_at_once_is_not_awaited_and_its_vectors_are_searched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = hash_model(usize::MAX);
    let store = open(&dir, &model).await;
    let ns = Namespace::new(["docs"]).expect("namespace");
    store
        .put(&ns, "a", json!({"text": "alice likes tea"}))
        .await
        .expect("put a");
    store
        .put(&ns, "b", json!({"text": "bob rides a bike"}))
        .await
        .expect("put b");
    // The same text again: its stored vector is kept, the model not asked.
    store
        .put(&ns, "a", json!({"text": "alice likes tea", "n": 2}))
        .await
        .expect("update a");
    assert_eq!(model.async_calls.load(Ordering::SeqCst), 0);
    assert_eq!(model.sync_calls.load(Ordering::SeqCst), 2);
    // Asked on the connection's thread, inside the put's job.
    assert_eq!(
        *model.threads.lock().expect("threads"),
        ["graph-sqlite", "graph-sqlite"]
    );
    let found = store
        .search(SearchOp::new(ns.clone()).query("bob rides a bike"))
        .await
        .expect("search");
    assert_eq!(found[0].key, "b");
    assert!(found[0].score.is_some_and(|s| s > 0.999), "{found:?}");
    let a = store.get(&ns, "a").await.expect("get").expect("a is there");
    assert_eq!(a.value["n"], 2);
}

#[tokio::test]
async fn a_model_that_stops_answering_at_once_is_awaited() {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = hash_model(1);
    let store = open(&dir, &model).await;
    let ns = Namespace::new(["docs"]).expect("namespace");
    store
        .put(&ns, "a", json!({"text": "alice likes tea"}))
        .await
        .expect("put a");
    assert_eq!(model.async_calls.load(Ordering::SeqCst), 0);
    // Asked at once, it says no: the put rolls back and awaits the model.
    store
        .put(&ns, "b", json!({"text": "bob rides a bike"}))
        .await
        .expect("put b");
    assert_eq!(model.sync_calls.load(Ordering::SeqCst), 3);
    assert_eq!(model.async_calls.load(Ordering::SeqCst), 1);
    // From then on the store awaits it without asking at once first.
    store
        .put(&ns, "c", json!({"text": "carol sings"}))
        .await
        .expect("put c");
    assert_eq!(model.async_calls.load(Ordering::SeqCst), 2);
    let found = store
        .search(SearchOp::new(ns.clone()).query("bob rides a bike"))
        .await
        .expect("search");
    assert_eq!(found.len(), 3);
    assert_eq!(found[0].key, "b");
    assert!(found[0].score.is_some_and(|s| s > 0.999), "{found:?}");
}

#[tokio::test]
async fn a_model_that_panics_inside_the_job_panics_the_put_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let model = hash_model(usize::MAX);
    let store = Arc::new(open(&dir, &model).await);
    let ns = Namespace::new(["docs"]).expect("namespace");
    let put = tokio::spawn({
        let (store, ns) = (store.clone(), ns.clone());
        async move { store.put(&ns, "p", json!({"text": "<panic>"})).await }
    })
    .await;
    let panic = put.expect_err("the put panics").into_panic();
    assert_eq!(
        panic.downcast_ref::<&str>().copied(),
        Some("the model panicked")
    );
    assert!(store.get(&ns, "p").await.expect("get").is_none());
    // The store goes on.
    store
        .put(&ns, "q", json!({"text": "quiet"}))
        .await
        .expect("put q");
    assert!(store.get(&ns, "q").await.expect("get").is_some());
}
