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
///
/// 1: LangGraph's tables with the values in `checkpoint_blobs` (see the crate
/// docs); 2: the lease table (`stategraph_thread_leases`).
pub(crate) const LATEST: i64 = 2;

/// How long a statement waits for another connection's lock (a Python process
/// sharing the file, say) before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a saver reads: its own layout, or (read-only) LangGraph's Python
/// tables as Python left them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tables {
    /// The table of checkpoint rows.
    pub(crate) rows: &'static str,
    /// Whether values live in `checkpoint_blobs` (else only inline, in the rows).
    pub(crate) blobs: bool,
    /// Whether `writes` has `task_path`.
    pub(crate) task_path: bool,
}

impl Tables {
    /// The layout this crate writes.
    pub(crate) const OURS: Tables = Tables {
        rows: "checkpoint_rows",
        blobs: true,
        task_path: true,
    };
}

/// The run leases (see `lease.rs`). `AUTOINCREMENT`: a generation is never
/// handed out twice, even after its row was deleted.
const V2: &str = r#"
CREATE TABLE IF NOT EXISTS stategraph_thread_leases (
    generation INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    boot_id TEXT,
    pid INTEGER,
    process_start TEXT
);
"#;

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

/// Makes the connection keep each prepared statement's plan, whatever it is
/// bound to (SQLite's query planner stability guarantee). The bundled SQLite
/// is built with STAT4, which otherwise marks a statement whose plan could
/// depend on a bound key (`thread_id = ?1` on a primary key) to be prepared
/// again after every use: a cached statement was re-prepared at each call,
/// three times per `get_tuple`. The tables have no statistics to plan from
/// anyway (nothing runs ANALYZE).
pub(crate) fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map(drop)
}

/// Settings, version check and migrations for a freshly opened connection.
/// `name` is the path (or `:memory:`) for error messages. A database whose
/// tables are not this crate's nor LangGraph's is refused untouched.
pub(crate) fn prepare(conn: &mut Connection, name: &str) -> Result<(), CheckpointError> {
    let storage = |what: &str, e: rusqlite::Error| crate::storage(format!("{what} `{name}`"), e);
    conn.busy_timeout(BUSY_TIMEOUT)
        .and_then(|()| stable_plans(conn))
        .map_err(|e| storage("cannot configure", e))?;
    // Refuse a newer schema, or tables that are not ours, before writing
    // anything, even the journal mode.
    let current = consistent_layout(conn, name)? == Layout::Ours(LATEST);
    // WAL lets readers (a Python process, say) proceed during a put. An in-memory
    // database answers "memory", which is fine.
    crate::journal::use_wal(conn, BUSY_TIMEOUT).map_err(|e| storage("cannot enable WAL on", e))?;
    // In WAL mode, NORMAL still makes each committed put survive a crash of the
    // process; only an OS crash or power loss can lose the last commits.
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(|e| storage("cannot configure", e))?;
    if current {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| storage("cannot lock", e))?;
    // Again under the write lock: another process may have migrated meanwhile.
    let layout = inspect(&tx, name)?;
    let migrated = match layout {
        Layout::New | Layout::Python { .. } => {
            migrate_v1(&tx).map_err(|e| storage("cannot create the checkpoint tables in", e))?;
            1
        }
        Layout::Ours(v) => v,
    };
    if migrated < 2 {
        tx.execute_batch(V2)
            .and_then(|()| tx.execute("INSERT INTO checkpoint_migrations (v) VALUES (2)", []))
            .map_err(|e| storage("cannot create the lease table in", e))?;
    }
    tx.commit().map_err(|e| storage("cannot migrate", e))?;
    Ok(())
}

/// Checks a database opened read-only: which tables to read, refusing a newer
/// schema or tables that are not this crate's nor LangGraph's.
pub(crate) fn prepare_read_only(conn: &Connection, name: &str) -> Result<Tables, CheckpointError> {
    conn.busy_timeout(BUSY_TIMEOUT)
        .and_then(|()| stable_plans(conn))
        .map_err(|e| crate::storage(format!("cannot configure `{name}`"), e))?;
    Ok(match consistent_layout(conn, name)? {
        Layout::Ours(_) => Tables::OURS,
        Layout::Python { task_path } => Tables {
            rows: "checkpoints",
            blobs: false,
            task_path,
        },
        Layout::New => {
            return Err(CheckpointError::ForeignSchema {
                database: name.to_owned(),
                problem: "it has no checkpoint tables (nothing to read; a read-only saver \
                          does not create them)"
                    .to_owned(),
            })
        }
    })
}

/// [`inspect`] inside one read transaction. Its queries then see one state of
/// the database: another connection's migration, committed between two of them,
/// would otherwise show its tables without its `checkpoint_migrations` record
/// (or the other way round) and the database would be refused as foreign.
fn consistent_layout(conn: &Connection, name: &str) -> Result<Layout, CheckpointError> {
    let tx = conn
        .unchecked_transaction()
        .map_err(|e| crate::storage(format!("cannot read `{name}`"), e))?;
    let layout = inspect(&tx, name)?;
    // Only read: ending it either way is the same; rollback does not fail on a
    // transaction that wrote nothing.
    drop(tx);
    Ok(layout)
}

/// What a database holds, as far as checkpoints go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// No checkpoint tables.
    New,
    /// LangGraph's Python `SqliteSaver` tables, not migrated.
    Python {
        /// Whether `writes` has `task_path`.
        task_path: bool,
    },
    /// This crate's tables at this schema version.
    Ours(i64),
}

/// The columns of LangGraph's `checkpoints` table (langgraph-checkpoint-sqlite).
const PYTHON_CHECKPOINTS: &[&str] = &[
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "type",
    "checkpoint",
    "metadata",
];

/// The columns of LangGraph's `writes` table (without `task_path`, which 3.x
/// added).
const PYTHON_WRITES: &[&str] = &[
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "idx",
    "channel",
    "type",
    "value",
];

/// Tables of this crate's own (a database without `checkpoint_migrations`
/// that has one was not made by this crate).
const OWN_TABLES: &[&str] = &[
    "checkpoint_rows",
    "checkpoint_blobs",
    "stategraph_thread_leases",
];

/// Reads which layout the database has, without writing; an unknown one is
/// [`CheckpointError::ForeignSchema`] naming the table.
fn inspect(conn: &Connection, name: &str) -> Result<Layout, CheckpointError> {
    let read = |e: rusqlite::Error| crate::storage(format!("cannot read `{name}`"), e);
    let foreign = |problem: String| CheckpointError::ForeignSchema {
        database: name.to_owned(),
        problem,
    };
    let version = current_version(conn).map_err(read)?;
    check_version(name, version)?;
    let checkpoints = object_type(conn, "checkpoints").map_err(read)?;
    let writes = columns(conn, "writes").map_err(read)?;
    if version >= 1 {
        // Ours: the view Python reads, over our tables.
        if checkpoints.as_deref() != Some("view") {
            return Err(foreign(format!(
                "it records stategraph schema version {version} (table checkpoint_migrations), \
                 but `checkpoints` is {}, not stategraph's view",
                checkpoints.map_or("missing".to_owned(), |kind| format!("a {kind}"))
            )));
        }
        for table in ["checkpoint_rows", "checkpoint_blobs"] {
            if object_type(conn, table).map_err(read)?.as_deref() != Some("table") {
                return Err(foreign(format!(
                    "it records stategraph schema version {version}, but table `{table}` is \
                     missing"
                )));
            }
        }
        return Ok(Layout::Ours(version));
    }
    for table in OWN_TABLES {
        if object_type(conn, table).map_err(read)?.is_some() {
            return Err(foreign(format!(
                "it has a `{table}`, a name stategraph uses, but no record of stategraph's \
                 schema (table checkpoint_migrations)"
            )));
        }
    }
    match checkpoints.as_deref() {
        None if writes.is_empty() => return Ok(Layout::New),
        None => {
            return Err(foreign(
                "it has a table `writes` but no table `checkpoints`: not LangGraph's layout"
                    .to_owned(),
            ))
        }
        Some("table") => {}
        Some(kind) => {
            return Err(foreign(format!(
                "its `checkpoints` is a {kind}, not LangGraph's table"
            )))
        }
    }
    let found = columns(conn, "checkpoints").map_err(read)?;
    if found.iter().any(|c| c == "thread_ts") {
        return Err(foreign(
            "table `checkpoints` has the layout of LangGraph before 0.2 (column `thread_ts`), \
             which stategraph does not read; copy the threads you need into a new database \
             with LangGraph 0.2 or later"
                .to_owned(),
        ));
    }
    if !same_columns(&found, PYTHON_CHECKPOINTS) {
        return Err(foreign(format!(
            "table `checkpoints` is not LangGraph's: its columns are ({}), LangGraph's are ({})",
            found.join(", "),
            PYTHON_CHECKPOINTS.join(", ")
        )));
    }
    let task_path = writes.iter().any(|c| c == "task_path");
    let without: Vec<String> = writes
        .iter()
        .filter(|c| *c != "task_path")
        .cloned()
        .collect();
    if !same_columns(&without, PYTHON_WRITES) {
        return Err(foreign(if writes.is_empty() {
            "it has LangGraph's table `checkpoints` but no table `writes`".to_owned()
        } else {
            format!(
                "table `writes` is not LangGraph's: its columns are ({}), LangGraph's are ({})",
                writes.join(", "),
                PYTHON_WRITES.join(", ")
            )
        }));
    }
    Ok(Layout::Python { task_path })
}

fn same_columns(found: &[String], expected: &[&str]) -> bool {
    found.len() == expected.len() && expected.iter().all(|e| found.iter().any(|f| f == e))
}

/// `"table"`, `"view"`, ... for an object named `name`; `None` if there is none.
fn object_type(conn: &Connection, name: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT type FROM sqlite_master WHERE name = ?1",
        [name],
        |row| row.get(0),
    )
    .optional()
}

/// The columns of table `table` (none if there is no such table).
fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    let rows = stmt.query_map([table], |row| row.get(0))?;
    rows.collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// How many times the query for a thread's latest checkpoint was prepared
    /// again over three uses of its cached statement, each for another thread.
    fn reprepares(conn: &Connection) -> i32 {
        let sql = "SELECT checkpoint_id FROM checkpoint_rows \
                   WHERE thread_id = ?1 AND checkpoint_ns = ?2 \
                   ORDER BY checkpoint_id DESC LIMIT 1";
        for thread in ["a", "b", "c"] {
            let mut stmt = conn.prepare_cached(sql).unwrap();
            let _: Option<String> = stmt
                .query_row([thread, ""], |row| row.get(0))
                .optional()
                .unwrap();
        }
        conn.prepare_cached(sql)
            .unwrap()
            .get_status(rusqlite::StatementStatus::RePrepare)
    }

    #[test]
    fn cached_statements_keep_their_plan() {
        let mut conn = Connection::open_in_memory().unwrap();
        prepare(&mut conn, ":memory:").unwrap();
        assert_eq!(reprepares(&conn), 0, "a cached statement is prepared once");
        // What `stable_plans` prevents: without it, each use prepares again.
        let mut unstable = Connection::open_in_memory().unwrap();
        prepare(&mut unstable, ":memory:").unwrap();
        unstable
            .set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
                false,
            )
            .unwrap();
        assert!(reprepares(&unstable) > 0);
    }
}
