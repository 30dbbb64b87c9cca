//! The store conformance suite against the in-memory store.

use graph_core::store::{conformance, InMemoryStore};

#[tokio::test]
async fn in_memory_store_passes_the_conformance_suite() {
    conformance::run_all(|config| async move { InMemoryStore::with_config(config) }).await;
}
