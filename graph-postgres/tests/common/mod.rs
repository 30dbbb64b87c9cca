//! Shared by the Postgres tests: the server they run against, and a fresh schema
//! per test so that tests never see each other's tables.
#![allow(dead_code)]

use graph_postgres::{PostgresSaver, PostgresSaverBuilder};

mod server;

/// The env var naming the test server.
pub const URL_VAR: &str = "STATEGRAPH_TEST_PG_URL";

const HOW_TO: &str = "without STATEGRAPH_TEST_PG_URL the tests start a throwaway \
PostgreSQL of their own; with it, they use that server, e.g. \
STATEGRAPH_TEST_PG_URL=postgres://postgres@127.0.0.1:5432/postgres cargo test -p stategraph-postgres \
(each test creates a schema of its own there, named t_*)";

/// The server's URL: `STATEGRAPH_TEST_PG_URL` when set, else a throwaway
/// server this test binary starts (and stops when it exits). Fails the test,
/// never skips it, when there is no server to be had.
pub fn url() -> String {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => url,
        _ => server::url(),
    }
}

/// A new, empty schema; the returned builder connects with it as `search_path`.
pub async fn fresh_schema(name: &str) -> (PostgresSaverBuilder, String) {
    let (config, schema) = fresh_config(name).await;
    (PostgresSaver::builder_from_config(config), schema)
}

/// A new, empty schema, and a connection config with it as `search_path`.
pub async fn fresh_config(name: &str) -> (tokio_postgres::Config, String) {
    let url = url();
    let (client, conn) = match tokio_postgres::connect(&url, tokio_postgres::NoTls).await {
        Ok(c) => c,
        Err(e) => panic!("cannot reach the test server {URL_VAR}={url}: {e}; {HOW_TO}"),
    };
    tokio::spawn(conn);
    let schema = format!("t_{name}_{:08x}", fastrand::u32(..));
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .expect("create schema");
    let mut config: tokio_postgres::Config = url.parse().expect("the test URL parses");
    config.options(format!("-c search_path={schema}"));
    (config, schema)
}

/// A saver on a new, empty schema.
pub async fn saver(name: &str) -> (PostgresSaver, String) {
    let (builder, schema) = fresh_schema(name).await;
    let saver = builder.connect().await.expect("connect to the test server");
    (saver, schema)
}

/// A plain client on the test database, with `schema` as search_path.
pub async fn client(schema: &str) -> tokio_postgres::Client {
    let url = url();
    let mut config: tokio_postgres::Config = url.parse().expect("the test URL parses");
    config.options(format!("-c search_path={schema}"));
    let (client, conn) = config
        .connect(tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test server {URL_VAR}={url}: {e}; {HOW_TO}"));
    tokio::spawn(conn);
    client
}
