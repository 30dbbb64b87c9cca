//! LangGraph's Postgres schema and its migrations table.
//!
//! `checkpoint_migrations(v)` holds one row per applied migration; migration `v`
//! is `MIGRATIONS[v]`, and a database at version `n` has rows `0..=n`. These are
//! the same versions, with the same meaning, as in LangGraph's
//! `langgraph-checkpoint-postgres`, so either library can open a database the other
//! created: a database at our [`LATEST`] is exactly what LangGraph's saver creates
//! with that many migrations. A database whose highest version is above
//! [`LATEST`] was migrated by something newer, and is refused before anything is
//! read or written ([`PgError::SchemaTooNew`]).
//!
//! Tables of our own (the run queue) are not versioned here, so that LangGraph's
//! numbering stays LangGraph's.

use crate::PgError;
use tokio_postgres::Client;

/// The schema version this crate creates and understands.
pub(crate) const LATEST: i64 = MIGRATIONS.len() as i64 - 1;

/// Advisory-lock class (first key of the two-key form) of this crate's locks.
/// The second key says what is locked.
pub(crate) const LOCK_CLASS_MIGRATION: i32 = 0x5347_4d47; // "SGMG"
pub(crate) const LOCK_CLASS_THREAD_RUN: i32 = 0x5347_5452; // "SGTR"
pub(crate) const LOCK_CLASS_THREAD_GC: i32 = 0x5347_4743; // "SGGC"

/// Migration `v` is `MIGRATIONS[v]`.
///
/// LangGraph builds its indexes `CONCURRENTLY`, which cannot run inside a
/// transaction; here every pending migration runs in one transaction (so two
/// workers starting at once cannot half-migrate), and a plain `CREATE INDEX` on
/// tables being created or still small is the better trade.
const MIGRATIONS: [&str; 10] = [
    // 0: the migrations table itself.
    "CREATE TABLE IF NOT EXISTS checkpoint_migrations (v INTEGER PRIMARY KEY)",
    // 1: one row per checkpoint; values live in checkpoint_blobs.
    "CREATE TABLE IF NOT EXISTS checkpoints (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        parent_checkpoint_id TEXT,
        type TEXT,
        checkpoint JSONB NOT NULL,
        metadata JSONB NOT NULL DEFAULT '{}',
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    )",
    // 2: one row per channel version.
    "CREATE TABLE IF NOT EXISTS checkpoint_blobs (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        channel TEXT NOT NULL,
        version TEXT NOT NULL,
        type TEXT NOT NULL,
        blob BYTEA,
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
    )",
    // 3: pending writes.
    "CREATE TABLE IF NOT EXISTS checkpoint_writes (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL DEFAULT '',
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        type TEXT,
        blob BYTEA NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
    )",
    // 4: an empty channel is a row of type 'empty' with no blob (a no-op on a
    // table created by migration 2 above, kept for databases that had NOT NULL).
    "ALTER TABLE checkpoint_blobs ALTER COLUMN blob DROP NOT NULL",
    // 5: nothing (LangGraph keeps the slot of a removed migration).
    "SELECT 1",
    // 6..8: delete_thread and prune select by thread.
    "CREATE INDEX IF NOT EXISTS checkpoints_thread_id_idx ON checkpoints (thread_id)",
    "CREATE INDEX IF NOT EXISTS checkpoint_blobs_thread_id_idx ON checkpoint_blobs (thread_id)",
    "CREATE INDEX IF NOT EXISTS checkpoint_writes_thread_id_idx ON checkpoint_writes (thread_id)",
    // 9: the task path orders pending writes.
    "ALTER TABLE checkpoint_writes ADD COLUMN IF NOT EXISTS task_path TEXT NOT NULL DEFAULT ''",
];

/// The highest applied migration, `-1` when there is no migrations table (in the
/// first schema of `search_path`).
async fn current_version(client: &impl tokio_postgres::GenericClient) -> Result<i64, PgError> {
    let row = client
        .query_one(
            "SELECT to_regclass('checkpoint_migrations') IS NOT NULL",
            &[],
        )
        .await
        .map_err(PgError::query(
            "cannot look for table checkpoint_migrations",
        ))?;
    let exists: bool = row.get(0);
    if !exists {
        return Ok(-1);
    }
    let row = client
        .query_one(
            "SELECT COALESCE(MAX(v), -1)::int8 FROM checkpoint_migrations",
            &[],
        )
        .await
        .map_err(PgError::query("cannot read table checkpoint_migrations"))?;
    Ok(row.get(0))
}

fn check(version: i64) -> Result<(), PgError> {
    if version > LATEST {
        return Err(PgError::SchemaTooNew {
            found: version,
            supported: LATEST,
        });
    }
    Ok(())
}

/// Brings the schema to [`LATEST`], or refuses a newer one. Returns the version
/// the database was at.
pub(crate) async fn migrate(client: &mut Client) -> Result<i64, PgError> {
    // The common case (already migrated) takes no lock and writes nothing.
    let version = current_version(client).await?;
    check(version)?;
    if version == LATEST {
        return Ok(version);
    }
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query("cannot start the migration transaction"))?;
    // Workers starting together wait for the first one's migration; DDL is
    // transactional, so they then see its result.
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, 0)",
        &[&LOCK_CLASS_MIGRATION],
    )
    .await
    .map_err(PgError::query("cannot take the migration lock"))?;
    let version = current_version(&tx).await?;
    check(version)?;
    // `version` is at least -1 unless someone wrote odd rows; start at 0 then.
    let first = usize::try_from(version + 1).unwrap_or(0);
    for (v, sql) in MIGRATIONS.iter().enumerate().skip(first) {
        let v = v as i32;
        tx.batch_execute(sql)
            .await
            .map_err(PgError::query(format!("migration {v} failed")))?;
        tx.execute(
            "INSERT INTO checkpoint_migrations (v) VALUES ($1) ON CONFLICT DO NOTHING",
            &[&v],
        )
        .await
        .map_err(PgError::query(format!("cannot record migration {v}")))?;
    }
    tx.commit()
        .await
        .map_err(PgError::query("cannot commit the migrations"))?;
    Ok(version)
}

/// Creates tables of stategraph's own (outside LangGraph's numbering) with
/// `create` (idempotent DDL), unless `table` exists already. Workers starting
/// together take turns (two concurrent `CREATE ... IF NOT EXISTS` can collide
/// in the catalog), and the common case takes no lock and writes nothing.
pub(crate) async fn create_own(
    client: &mut Client,
    table: &str,
    create: &str,
) -> Result<(), PgError> {
    let context = || format!("cannot create table {table}");
    let row = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await
        .map_err(PgError::query(context()))?;
    if row
        .try_get::<_, bool>(0)
        .map_err(PgError::query(context()))?
    {
        return Ok(());
    }
    let tx = client
        .transaction()
        .await
        .map_err(PgError::query(context()))?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, 1)",
        &[&LOCK_CLASS_MIGRATION],
    )
    .await
    .map_err(PgError::query(context()))?;
    tx.batch_execute(create)
        .await
        .map_err(PgError::query(context()))?;
    tx.commit().await.map_err(PgError::query(context()))
}
