//! The saver conformance suite (graph-core's, shared with the memory and SQLite
//! savers) against a real PostgreSQL server.

mod common;

use graph_core::checkpoint::conformance;

#[tokio::test]
async fn passes_the_conformance_suite() {
    let (saver, _) = common::saver("conformance").await;
    conformance::run_all(&saver).await;
}

#[tokio::test]
async fn passes_again_on_the_same_tables() {
    let (builder, _) = common::fresh_schema("conformance_again").await;
    let saver = builder.clone().connect().await.expect("connect");
    conformance::run_all(&saver).await;
    saver.close();
    let saver = builder.connect().await.expect("reconnect");
    conformance::run_all(&saver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passes_on_a_multi_threaded_runtime_with_one_connection() {
    let (builder, _) = common::fresh_schema("conformance_mt").await;
    let saver = builder.max_connections(1).connect().await.expect("connect");
    conformance::run_all(&saver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_threads_for_their_runs() {
    let (saver, _) = common::saver("conformance_leases").await;
    conformance::run_leases(&saver).await;
}

#[tokio::test]
async fn the_append_layout_passes_the_conformance_suite() {
    let (builder, _) = common::fresh_schema("conformance_append").await;
    let saver = builder
        .append_layout(true)
        .connect()
        .await
        .expect("connect");
    assert!(graph_core::checkpoint::Checkpointer::stores_appends(&saver));
    // run_all runs the append properties too (`run_appends`), as the saver
    // stores appends.
    conformance::run_all(&saver).await;
    conformance::run_leases(&saver).await;
}
