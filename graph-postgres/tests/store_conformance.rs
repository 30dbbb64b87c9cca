//! The store conformance suite (graph-core's, shared with the in-memory and
//! SQLite stores) against PostgreSQL: on the test server, each configuration
//! in a schema of its own. Without pgvector on the server (the Debian
//! packages the tests install have none), the indexed store runs the
//! fallback (`real[]` vectors scored in Rust); with it (STATEGRAPH_TEST_PG_URL
//! pointing at such a server, as scripts/pgvector.sh does), pgvector.

mod common;

use graph_core::store::{conformance, HashEmbeddings, IndexConfig, StoreConfig};
use graph_postgres::{PostgresStore, VectorSearch};

/// A fresh schema for a store, with `public` after it on the search path:
/// where pgvector, when the server has it, is installed (once per database,
/// its types must be visible from every test's schema).
async fn store_config(name: &str) -> (tokio_postgres::Config, String) {
    let (mut pg, schema) = common::fresh_config(name).await;
    common::client(&schema)
        .await
        .batch_execute(
            "BEGIN; SELECT pg_advisory_xact_lock(7411); \
             DO $$ BEGIN \
                IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN \
                    CREATE EXTENSION IF NOT EXISTS vector SCHEMA public; \
                END IF; \
             END $$; COMMIT",
        )
        .await
        .expect("install pgvector in public");
    pg.options(format!("-c search_path={schema},public"));
    (pg, schema)
}

#[tokio::test]
async fn postgres_store_passes_the_conformance_suite() {
    conformance::run_all(|config| async move {
        let (pg, _schema) = store_config("store").await;
        PostgresStore::connect_with(pg, config)
            .await
            .expect("open the store")
    })
    .await;
}

/// Which vector search the test server gets: pgvector exactly when the server
/// has the extension, and then LangGraph's layout.
#[tokio::test]
async fn vector_search_follows_the_server() {
    let (pg, schema) = store_config("store_mode").await;
    let client = common::client(&schema).await;
    let has_pgvector: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')",
            &[],
        )
        .await
        .expect("query")
        .get(0);
    let index = IndexConfig::new(8, HashEmbeddings::new(8));
    let store = PostgresStore::connect_with(pg.clone(), StoreConfig::new().index(index))
        .await
        .expect("open the store");
    let column: String = client
        .query_one(
            "SELECT udt_name::text FROM information_schema.columns WHERE table_schema = $1 \
             AND table_name = 'store_vectors' AND column_name = 'embedding'",
            &[&schema],
        )
        .await
        .expect("query")
        .get(0);
    if has_pgvector {
        assert_eq!(store.vector_search(), VectorSearch::Pgvector);
        assert_eq!(column, "vector");
    } else {
        assert_eq!(store.vector_search(), VectorSearch::Fallback);
        assert_eq!(column, "_float4");
    }
    // Reopening keeps the table's kind; a store without an index has none.
    let again = PostgresStore::connect_with(
        pg.clone(),
        StoreConfig::new().index(IndexConfig::new(8, HashEmbeddings::new(8))),
    )
    .await
    .expect("reopen");
    assert_eq!(again.vector_search(), store.vector_search());
    let plain = PostgresStore::connect_with(pg, StoreConfig::new())
        .await
        .expect("open plain");
    assert_eq!(plain.vector_search(), store.vector_search());
    let versions: Vec<i32> = client
        .query("SELECT v FROM store_migrations ORDER BY v", &[])
        .await
        .expect("query")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [0, 1, 2, 3], "LangGraph's store_migrations");
}
