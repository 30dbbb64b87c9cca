//! The saver conformance suite (graph-core's, shared with the in-memory saver)
//! against SQLite, in memory and in a file.

use graph_core::checkpoint::conformance;
use graph_sqlite::SqliteSaver;

#[tokio::test]
async fn in_memory_database_passes_the_conformance_suite() {
    let saver = SqliteSaver::in_memory().await.expect("open in memory");
    conformance::run_all(&saver).await;
}

#[tokio::test]
async fn file_database_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let saver = SqliteSaver::open(dir.path().join("c.sqlite"))
        .await
        .expect("open file");
    conformance::run_all(&saver).await;
    saver.close().await.expect("close");
}

#[tokio::test]
async fn the_suite_passes_again_on_a_reopened_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.sqlite");
    let saver = SqliteSaver::open(&path).await.expect("open file");
    conformance::run_all(&saver).await;
    saver.close().await.expect("close");
    let saver = SqliteSaver::open(&path).await.expect("reopen file");
    conformance::run_all(&saver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_passes_on_a_multi_threaded_runtime() {
    let saver = SqliteSaver::in_memory().await.expect("open in memory");
    conformance::run_all(&saver).await;
}

#[tokio::test]
async fn the_append_layout_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let saver = SqliteSaver::builder(dir.path().join("c.sqlite"))
        .append_layout(true)
        .open()
        .await
        .expect("open file");
    assert!(graph_core::checkpoint::Checkpointer::stores_appends(&saver));
    conformance::run_all(&saver).await;
    saver.close().await.expect("close");
}
