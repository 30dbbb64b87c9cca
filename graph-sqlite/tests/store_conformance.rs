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
