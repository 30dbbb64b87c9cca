//! The store conformance suite (graph-core's, shared with the in-memory and
//! PostgreSQL stores) against SQLite, in memory and in files.

use graph_core::store::conformance;
use graph_sqlite::SqliteStore;

#[tokio::test]
async fn in_memory_store_passes_the_conformance_suite() {
    conformance::run_all(|config| async move {
        SqliteStore::in_memory(config)
            .await
            .expect("open an in-memory store")
    })
    .await;
}

#[tokio::test]
async fn file_store_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = std::sync::atomic::AtomicUsize::new(0);
    conformance::run_all(|config| {
        // One file per configuration: an indexed store creates store_vectors.
        let n = files.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let path = dir.path().join(format!("store-{n}.sqlite"));
        async move {
            SqliteStore::open(path, config)
                .await
                .expect("open a file store")
        }
    })
    .await;
}

/// An embedding model that does not answer in time: the put fails with
/// `EmbeddingError::Timeout` and nothing of it is written (embeddings are
/// computed before the write transaction).
#[tokio::test]
async fn a_timed_out_embedding_writes_nothing() {
    use futures::future::BoxFuture;
    use graph_core::store::{
        Embedding, EmbeddingError, Embeddings, IndexConfig, Namespace, Store, StoreConfig,
        StoreError,
    };
    use std::time::Duration;

    struct Slow;
    impl Embeddings for Slow {
        fn embed_documents<'a>(
            &'a self,
            texts: &'a [&'a str],
        ) -> BoxFuture<'a, Result<Vec<Embedding>, EmbeddingError>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(texts.iter().map(|_| vec![1.0; 4].into()).collect())
            })
        }
    }

    let dir = tempfile::tempdir().expect("temp dir");
    let index = IndexConfig::new(4, Slow).timeout(Duration::from_millis(50));
    let store = SqliteStore::open(dir.path().join("s.sqlite"), StoreConfig::new().index(index))
        .await
        .expect("open");
    let ns = Namespace::new(["docs"]).expect("namespace");
    let put = store
        .put(&ns, "k", serde_json::json!({"text": "hello"}))
        .await;
    assert!(
        matches!(
            put,
            Err(StoreError::Embedding(EmbeddingError::Timeout { .. }))
        ),
        "{put:?}"
    );
    assert!(store.get(&ns, "k").await.expect("get").is_none());
}
