//! Opening a database: connection settings, the schema version check and the
//! migrations.
//!
//! The applied migrations are rows of `checkpoint_migrations(v)`, the table
//! LangGraph's Postgres saver uses for the same purpose. A database whose highest
//! version is above [`LATEST`] was written by a newer stategraph: it is refused
//! before anything is written to it.

use graph_core::checkpoint::CheckpointError;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};
use std::time::Duration;

/// The schema version this crate writes and understands.
pub(crate) const LATEST: i64 = 1;

/// How long a statement waits for another connection's lock (a Python process
/// sharing the file, say) before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// LangGraph's `checkpoints` table (renamed) plus our per-version blobs, the
/// `checkpoints` view Python reads, and the triggers that let Python write through
/// that view. See the crate docs for why.
const V1: &str = r#"
CREATE TABLE IF NOT EXISTS checkpoint_rows (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS checkpoint_blobs (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    blob BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '',
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
-- What LangGraph's SqliteSaver reads: rows written by stategraph ('json', with
-- empty channel_values) get their values from checkpoint_blobs, at the versions
-- the checkpoint names; rows written by Python hold the whole checkpoint already
-- and pass through. CASE, unlike AND, guarantees that msgpack is never parsed
-- as JSON.
CREATE VIEW checkpoints AS
SELECT r.thread_id, r.checkpoint_ns, r.checkpoint_id, r.parent_checkpoint_id, r.type,
    CASE
        WHEN r.type IS NOT 'json' THEN r.checkpoint
        WHEN NOT json_valid(CAST(r.checkpoint AS TEXT)) THEN r.checkpoint
        WHEN json_extract(CAST(r.checkpoint AS TEXT), '$.channel_values') IS NOT '{}'
            THEN r.checkpoint
        ELSE json_set(
            CAST(r.checkpoint AS TEXT),
            '$.channel_values',
            json(COALESCE((
                SELECT json_group_object(b.channel, json(b.blob))
                FROM json_each(CAST(r.checkpoint AS TEXT), '$.channel_versions') AS v
                CROSS JOIN checkpoint_blobs AS b
                    ON b.thread_id = r.thread_id AND b.checkpoint_ns = r.checkpoint_ns
                    AND b.channel = v.key AND b.version = v.value
                WHERE b.type = 'json'
            ), '{}'))
        )
    END AS checkpoint,
    r.metadata
FROM checkpoint_rows AS r;
CREATE TRIGGER checkpoints_insert INSTEAD OF INSERT ON checkpoints
BEGIN
    INSERT OR REPLACE INTO checkpoint_rows
        (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata)
    VALUES (NEW.thread_id, COALESCE(NEW.checkpoint_ns, ''), NEW.checkpoint_id,
        NEW.parent_checkpoint_id, NEW.type, NEW.checkpoint, NEW.metadata);
END;
CREATE TRIGGER checkpoints_delete INSTEAD OF DELETE ON checkpoints
BEGIN
    DELETE FROM checkpoint_rows WHERE thread_id = OLD.thread_id
        AND checkpoint_ns = OLD.checkpoint_ns AND checkpoint_id = OLD.checkpoint_id;
    DELETE FROM checkpoint_blobs WHERE thread_id = OLD.thread_id
        AND checkpoint_ns = OLD.checkpoint_ns
        AND NOT EXISTS (SELECT 1 FROM checkpoint_rows
            WHERE thread_id = OLD.thread_id AND checkpoint_ns = OLD.checkpoint_ns);
END;
"#;

/// Settings, version check and migrations for a freshly opened connection.
/// `name` is the path (or `:memory:`) for error messages.
pub(crate) fn prepare(conn: &mut Connection, name: &str) -> Result<(), CheckpointError> {
    let storage = |what: &str, e: rusqlite::Error| crate::storage(format!("{what} `{name}`"), e);
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| storage("cannot configure", e))?;
    // Refuse a newer schema before writing anything, even the journal mode.
    check_version(
        name,
        current_version(conn).map_err(|e| storage("cannot read", e))?,
    )?;
    // WAL lets readers (a Python process, say) proceed during a put. An in-memory
    // database answers "memory", which is fine.
    let _mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
        .map_err(|e| storage("cannot enable WAL on", e))?;
    // In WAL mode, NORMAL still makes each committed put survive a crash of the
    // process; only an OS crash or power loss can lose the last commits.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| storage("cannot configure", e))?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| storage("cannot lock", e))?;
    // Again under the write lock: another process may have migrated meanwhile.
    let version = current_version(&tx).map_err(|e| storage("cannot read", e))?;
    check_version(name, version)?;
    if version < 1 {
        migrate_v1(&tx).map_err(|e| storage("cannot create the checkpoint tables in", e))?;
    }
    tx.commit().map_err(|e| storage("cannot migrate", e))?;
    Ok(())
}

fn check_version(name: &str, version: i64) -> Result<(), CheckpointError> {
    if version > LATEST {
        return Err(CheckpointError::Unsupported(format!(
            "database `{name}` has checkpoint schema version {version}, but this graph-sqlite \
             understands versions up to {LATEST}"
        )));
    }
    Ok(())
}

/// The highest applied migration, 0 for a new database or one written by
/// LangGraph's Python saver (which keeps no version).
fn current_version(conn: &Connection) -> rusqlite::Result<i64> {
    if !object_exists(conn, "table", "checkpoint_migrations")? {
        return Ok(0);
    }
    conn.query_row(
        "SELECT COALESCE(MAX(v), 0) FROM checkpoint_migrations",
        [],
        |row| row.get(0),
    )
}

fn object_exists(conn: &Connection, kind: &str, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = ?1 AND name = ?2",
        [kind, name],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
}

/// Creates the v1 schema. A database written by LangGraph's Python saver keeps all
/// its rows: its `checkpoints` table becomes `checkpoint_rows` (behind the view of
/// the same name), and `writes` gains `task_path` if it predates it.
fn migrate_v1(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch("CREATE TABLE IF NOT EXISTS checkpoint_migrations (v INTEGER PRIMARY KEY);")?;
    if object_exists(tx, "table", "checkpoints")? {
        tx.execute_batch("ALTER TABLE checkpoints RENAME TO checkpoint_rows;")?;
    }
    if object_exists(tx, "table", "writes")? && !has_column(tx, "writes", "task_path")? {
        tx.execute_batch("ALTER TABLE writes ADD COLUMN task_path TEXT NOT NULL DEFAULT '';")?;
    }
    tx.execute_batch(V1)?;
    tx.execute("INSERT INTO checkpoint_migrations (v) VALUES (1)", [])?;
    Ok(())
}
