//! The saver conformance suite against the in-memory reference saver.

use graph_core::checkpoint::{conformance, InMemorySaver};

#[tokio::test]
async fn in_memory_saver_passes_the_conformance_suite() {
    conformance::run_all(&InMemorySaver::new()).await;
}

#[tokio::test]
async fn the_suite_can_run_twice_on_one_saver() {
    let saver = InMemorySaver::new();
    conformance::run_all(&saver).await;
    conformance::run_all(&saver).await;
}

#[tokio::test]
async fn in_memory_saver_holds_threads_for_their_runs() {
    conformance::run_leases(&InMemorySaver::new()).await;
}

#[tokio::test]
async fn in_memory_saver_compressing_every_value_passes_the_conformance_suite() {
    // Compressed from one byte: every value LZ4 shortens by an eighth is kept
    // compressed, and must read back as the same JSON text.
    conformance::run_all(&InMemorySaver::new().with_compression(Some(1))).await;
}
