//! LangGraph's SQLite store tables and their two migrations tables.
//!
//! `store_migrations(v)` holds one row per applied migration of the `store`
//! table, `vector_migrations(v)` one per migration of `store_vectors`: the
//! versions and meanings of `langgraph-checkpoint-sqlite`'s `SqliteStore`, so
//! that either library opens a database the other created without migrating
//! it again. A database at a version above ours was migrated by something
//! newer, and is refused before anything is written.

use super::storage;
use graph_core::store::StoreError;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use std::time::Duration;

/// How long a statement waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Migration `v` of the `store` table is `STORE_MIGRATIONS[v]`.
const STORE_MIGRATIONS: [&str; 5] = [
    // 0: the items; `prefix` is the namespace's labels joined by periods.
    "CREATE TABLE IF NOT EXISTS store (
        prefix text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (prefix, key)
    )",
    // 1: lookups by namespace.
    "CREATE INDEX IF NOT EXISTS store_prefix_idx ON store (prefix)",
    // 2, 3: expiry.
    "ALTER TABLE store ADD COLUMN expires_at TIMESTAMP",
    "ALTER TABLE store ADD COLUMN ttl_minutes REAL",
    // 4: sweeping expired items.
    "CREATE INDEX IF NOT EXISTS idx_store_expires_at ON store (expires_at)
        WHERE expires_at IS NOT NULL",
];

/// Migration `v` of the vectors is `VECTOR_MIGRATIONS[v]`: one little-endian
/// `f32` blob per embedded text (sqlite-vec's `float32` format).
const VECTOR_MIGRATIONS: [&str; 1] = ["CREATE TABLE IF NOT EXISTS store_vectors (
        prefix text NOT NULL,
        key text NOT NULL,
        field_name text NOT NULL,
        embedding BLOB,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (prefix, key, field_name),
        FOREIGN KEY (prefix, key) REFERENCES store(prefix, key) ON DELETE CASCADE
    )"];

/// Settings, version checks and migrations for a freshly opened connection.
/// Creates `store_vectors` when `vectors` (the store has an index), as
/// LangGraph does. Returns whether `store_vectors` exists (a database written
/// with an index may be opened without one: its vectors are still deleted with
/// their items).
pub(super) fn prepare(
    conn: &mut Connection,
    name: &str,
    vectors: bool,
) -> Result<bool, StoreError> {
    let fail = |what: &str, e: rusqlite::Error| storage(format!("{what} `{name}`"), e);
    conn.busy_timeout(BUSY_TIMEOUT)
        .and_then(|()| crate::schema::stable_plans(conn))
        .map_err(|e| fail("cannot configure", e))?;
    {
        // One read transaction, so that the checks see one state of the file
        // even while another connection migrates it.
        let tx = conn
            .transaction()
            .map_err(|e| fail("cannot read the store tables of", e))?;
        check(&tx, name)?;
    }
    crate::journal::use_wal(conn, BUSY_TIMEOUT).map_err(|e| fail("cannot enable WAL on", e))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| fail("cannot configure", e))?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| fail("cannot lock", e))?;
    // Again under the write lock: another process may have migrated meanwhile.
    check(&tx, name)?;
    migrate(&tx, "store_migrations", &STORE_MIGRATIONS)
        .map_err(|e| fail("cannot create the store tables in", e))?;
    if vectors {
        migrate(&tx, "vector_migrations", &VECTOR_MIGRATIONS)
            .map_err(|e| fail("cannot create the store_vectors table in", e))?;
    }
    let has_vectors = table_exists(&tx, "store_vectors").map_err(|e| fail("cannot read", e))?;
    tx.commit().map_err(|e| fail("cannot migrate", e))?;
    Ok(has_vectors)
}

/// Refuses a database migrated by something newer, or a `store` table that is
/// not LangGraph's (no `store_migrations` next to it).
fn check(conn: &Connection, name: &str) -> Result<(), StoreError> {
    let fail = |e| storage(format!("cannot read the store tables of `{name}`"), e);
    for (table, latest) in [
        ("store_migrations", STORE_MIGRATIONS.len()),
        ("vector_migrations", VECTOR_MIGRATIONS.len()),
    ] {
        if let Some(v) = version(conn, table).map_err(fail)? {
            if v >= latest as i64 {
                return Err(StoreError::InvalidInput(format!(
                    "`{name}` has {table} version {v}, newer than this version of \
                     stategraph-sqlite knows ({}); upgrade stategraph-sqlite",
                    latest - 1
                )));
            }
        }
    }
    if table_exists(conn, "store").map_err(fail)?
        && !table_exists(conn, "store_migrations").map_err(fail)?
    {
        return Err(StoreError::InvalidInput(format!(
            "`{name}` has a `store` table that LangGraph's SqliteStore did not create (there \
             is no `store_migrations` table); use another database file"
        )));
    }
    Ok(())
}

/// The highest applied version in `table`, `None` without the table or rows.
fn version(conn: &Connection, table: &str) -> rusqlite::Result<Option<i64>> {
    if !table_exists(conn, table)? {
        return Ok(None);
    }
    conn.query_row(&format!("SELECT max(v) FROM {table}"), [], |row| row.get(0))
}

fn table_exists(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
}

/// Applies the migrations after the highest version recorded in `table`.
fn migrate(conn: &Connection, table: &str, migrations: &[&str]) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {table} (v INTEGER PRIMARY KEY)"
    ))?;
    let next = version(conn, table)?.map_or(0, |v| v + 1);
    for (v, sql) in migrations.iter().enumerate().skip(next as usize) {
        conn.execute_batch(sql)?;
        conn.execute(&format!("INSERT INTO {table} (v) VALUES (?1)"), [v as i64])?;
    }
    Ok(())
}
