//! The threads and runs tables in SQLite: one server process, the
//! checkpoints by default in the same file. A process that stops mid-run
//! leaves its runs `running`; the next one to open the file queues them again.

use super::{now, parse_map, RunRow};
use crate::error::ApiError;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA busy_timeout = 5000;
CREATE TABLE IF NOT EXISTS server_threads (
    thread_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL,
    metadata TEXT NOT NULL,
    status TEXT NOT NULL,
    config TEXT NOT NULL,
    state_values TEXT,
    interrupts TEXT NOT NULL,
    error TEXT
);
CREATE TABLE IF NOT EXISTS server_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL,
    assistant_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    metadata TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL,
    temporary INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS server_runs_thread ON server_runs (thread_id, status);
-- The queue: `claim` reads the pending runs in order (without it, a scan of
-- every run ever made, each time the worker wakes).
CREATE INDEX IF NOT EXISTS server_runs_pending ON server_runs (seq) WHERE status = 'pending';
";

/// A thread's state as [`SqliteDb::set_thread_state`] stores it: the JSON
/// already written out (on the async side, so that the blocking call owns
/// text, not the values).
pub(crate) struct ThreadState {
    /// `idle`, `interrupted` or `error`; stored as `busy` while the thread has
    /// a pending or running run.
    pub status: String,
    pub values: Option<String>,
    pub interrupts: String,
    pub error: Option<String>,
}

/// The connection to the threads and runs tables (WAL with `synchronous =
/// NORMAL`, as graph-sqlite's checkpoints: a commit survives a crash of the
/// process; the last ones may be lost if the machine loses power).
pub(crate) struct SqliteDb {
    conn: Mutex<Connection>,
}

fn thread_json(row: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
    let values: Option<String> = row.get(7)?;
    let error: Option<String> = row.get(9)?;
    Ok(json!({
        "thread_id": row.get::<_, String>(0)?,
        "created_at": row.get::<_, String>(1)?,
        "updated_at": row.get::<_, String>(2)?,
        "state_updated_at": row.get::<_, String>(3)?,
        "metadata": parse_map(&row.get::<_, String>(4)?),
        "status": row.get::<_, String>(5)?,
        "config": parse_map(&row.get::<_, String>(6)?),
        "values": values.and_then(|v| serde_json::from_str::<Value>(&v).ok()),
        "interrupts": parse_map(&row.get::<_, String>(8)?),
        "error": error.and_then(|v| serde_json::from_str::<Value>(&v).ok()),
    }))
}

fn run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: row.get(0)?,
        thread_id: row.get(1)?,
        assistant_id: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
        status: row.get(5)?,
        metadata: parse_map(&row.get::<_, String>(6)?),
        kwargs: row.get(7)?,
        multitask_strategy: row.get(8)?,
        temporary: row.get(9)?,
    })
}

const THREAD_COLUMNS: &str = "thread_id, created_at, updated_at, state_updated_at, metadata, \
                              status, config, state_values, interrupts, error";
const RUN_COLUMNS: &str = "run_id, thread_id, assistant_id, created_at, updated_at, status, \
                           metadata, kwargs, multitask_strategy, temporary";

impl SqliteDb {
    /// Opens (creating) the tables in the SQLite file at `path`.
    pub(crate) fn open(path: &Path) -> Result<SqliteDb, rusqlite::Error> {
        let conn = Connection::open(path)?;
        conn.execute_batch(SCHEMA)?;
        // Every statement below is prepared once and kept (SQL parsing was 13%
        // of the server's CPU under 50 clients, bench/server.sh); the default
        // cache of 16 is smaller than their number.
        conn.set_prepared_statement_cache_capacity(64);
        Ok(SqliteDb {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> Result<MutexGuard<'_, Connection>, ApiError> {
        self.conn.lock().map_err(|_| ApiError::Internal {
            message: "the database connection was poisoned by a panic".into(),
        })
    }

    /// Creates a thread; `false` if it exists.
    pub(crate) fn insert_thread(&self, thread_id: &str, metadata: &str) -> Result<bool, ApiError> {
        let now = now();
        let n = self
            .conn()?
            .prepare_cached(
                "INSERT OR IGNORE INTO server_threads (thread_id, created_at, updated_at, \
             state_updated_at, metadata, status, config, state_values, interrupts, error) \
             VALUES (?1, ?2, ?2, ?2, ?3, 'idle', '{}', NULL, '{}', NULL)",
            )?
            .execute(params![thread_id, now, metadata])?;
        Ok(n == 1)
    }

    /// A thread in LangGraph Server's `Thread` shape.
    pub(crate) fn thread(&self, thread_id: &str) -> Result<Option<Value>, ApiError> {
        let conn = self.conn()?;
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads WHERE thread_id = ?1");
        let thread = conn
            .prepare_cached(&sql)?
            .query_row(params![thread_id], thread_json)
            .optional()?;
        Ok(thread)
    }

    /// Every thread, newest first.
    pub(crate) fn threads(&self) -> Result<Vec<Value>, ApiError> {
        let conn = self.conn()?;
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads ORDER BY created_at DESC");
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map([], thread_json)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Merges `metadata` into the thread's; `false` if there is no such
    /// thread. With `busy`, marks the thread `busy` in the same write (a new
    /// run's thread: one write transaction instead of two).
    pub(crate) fn patch_thread(
        &self,
        thread_id: &str,
        metadata: Map<String, Value>,
        busy: bool,
    ) -> Result<bool, ApiError> {
        let conn = self.conn()?;
        let current: Option<String> = conn
            .prepare_cached("SELECT metadata FROM server_threads WHERE thread_id = ?1")?
            .query_row(params![thread_id], |r| r.get(0))
            .optional()?;
        let Some(current) = current else {
            return Ok(false);
        };
        let mut merged = parse_map(&current);
        merged.extend(metadata);
        conn.prepare_cached(
            "UPDATE server_threads SET metadata = ?2, updated_at = ?3, \
             status = CASE WHEN ?4 THEN 'busy' ELSE status END WHERE thread_id = ?1",
        )?
        .execute(params![
            thread_id,
            Value::Object(merged).to_string(),
            now(),
            busy
        ])?;
        Ok(true)
    }

    /// Records a thread's state after a run or an update (see
    /// [`Db::set_thread_state`](super::Db::set_thread_state)).
    pub(crate) fn set_thread_state(
        &self,
        thread_id: &str,
        state: &ThreadState,
    ) -> Result<(), ApiError> {
        let now = now();
        self.conn()?
            .prepare_cached(
                "UPDATE server_threads SET status = CASE WHEN EXISTS (SELECT 1 FROM server_runs \
                 WHERE thread_id = ?1 AND status IN ('pending', 'running')) THEN 'busy' \
                 ELSE ?2 END, state_values = ?3, interrupts = ?4, \
                 error = ?5, updated_at = ?6, state_updated_at = ?6 WHERE thread_id = ?1",
            )?
            .execute(params![
                thread_id,
                state.status,
                state.values,
                state.interrupts,
                state.error,
                now
            ])?;
        Ok(())
    }

    /// Sets a thread's status only.
    pub(crate) fn set_thread_status(&self, thread_id: &str, status: &str) -> Result<(), ApiError> {
        self.conn()?
            .prepare_cached("UPDATE server_threads SET status = ?2 WHERE thread_id = ?1")?
            .execute(params![thread_id, status])?;
        Ok(())
    }

    /// Deletes a thread and its runs (one transaction); `false` if there was
    /// none.
    pub(crate) fn delete_thread(&self, thread_id: &str) -> Result<bool, ApiError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        tx.prepare_cached("DELETE FROM server_runs WHERE thread_id = ?1")?
            .execute(params![thread_id])?;
        let n = tx
            .prepare_cached("DELETE FROM server_threads WHERE thread_id = ?1")?
            .execute(params![thread_id])?;
        tx.commit()?;
        Ok(n == 1)
    }

    /// Queues a run (see [`Db::insert_run`](super::Db::insert_run)).
    pub(crate) fn insert_run(
        &self,
        run: &RunRow,
        reject_busy: bool,
    ) -> Result<Option<i64>, ApiError> {
        let conn = self.conn()?;
        if reject_busy {
            let busy: bool = conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM server_runs WHERE thread_id = ?1 \
                 AND status IN ('pending', 'running'))",
                )?
                .query_row(params![run.thread_id], |r| r.get(0))?;
            if busy {
                return Err(ApiError::ThreadBusy(run.thread_id.clone()));
            }
        }
        conn.prepare_cached(
            "INSERT INTO server_runs (run_id, thread_id, assistant_id, created_at, updated_at, \
             status, metadata, kwargs, multitask_strategy, temporary) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            run.run_id,
            run.thread_id,
            run.assistant_id,
            run.created_at,
            run.updated_at,
            run.status,
            Value::Object(run.metadata.clone()).to_string(),
            run.kwargs,
            run.multitask_strategy,
            run.temporary
        ])?;
        Ok(None)
    }

    /// A run of a thread.
    pub(crate) fn run(&self, thread_id: &str, run_id: &str) -> Result<Option<RunRow>, ApiError> {
        let conn = self.conn()?;
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM server_runs WHERE run_id = ?1 AND thread_id = ?2");
        let run = conn
            .prepare_cached(&sql)?
            .query_row(params![run_id, thread_id], run_row)
            .optional()?;
        Ok(run)
    }

    /// A thread's runs, newest first.
    pub(crate) fn runs(
        &self,
        thread_id: &str,
        status: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<RunRow>, ApiError> {
        let conn = self.conn()?;
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM server_runs WHERE thread_id = ?1 \
             AND (?2 IS NULL OR status = ?2) ORDER BY seq DESC LIMIT ?3 OFFSET ?4"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![thread_id, status, limit as i64, offset as i64],
            run_row,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The ids of a thread's pending and running runs, oldest first.
    pub(crate) fn active_runs(&self, thread_id: &str) -> Result<Vec<String>, ApiError> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT run_id FROM server_runs WHERE thread_id = ?1 \
             AND status IN ('pending', 'running') ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![thread_id], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Records how a run ended. The outcome is kept by the live run in this
    /// process (one process serves a SQLite file), not stored.
    pub(crate) fn finish_run(&self, run_id: &str, status: &str) -> Result<(), ApiError> {
        self.conn()?
            .prepare_cached(
                "UPDATE server_runs SET status = ?2, updated_at = ?3 WHERE run_id = ?1",
            )?
            .execute(params![run_id, status, now()])?;
        Ok(())
    }

    /// Cancels a pending run (see [`Db::cancel_pending`](super::Db::cancel_pending)).
    pub(crate) fn cancel_pending(&self, run_id: &str, delete: bool) -> Result<bool, ApiError> {
        let conn = self.conn()?;
        let n = if delete {
            conn.prepare_cached("DELETE FROM server_runs WHERE run_id = ?1 AND status = 'pending'")?
                .execute(params![run_id])?
        } else {
            conn.prepare_cached(
                "UPDATE server_runs SET status = 'interrupted', updated_at = ?2 \
                 WHERE run_id = ?1 AND status = 'pending'",
            )?
            .execute(params![run_id, now()])?
        };
        Ok(n == 1)
    }

    /// Deletes a run.
    pub(crate) fn delete_run(&self, run_id: &str) -> Result<bool, ApiError> {
        let n = self
            .conn()?
            .prepare_cached("DELETE FROM server_runs WHERE run_id = ?1")?
            .execute(params![run_id])?;
        Ok(n == 1)
    }

    /// Takes the next runs to start: the oldest pending run of each thread
    /// that has no running run, marked `running`.
    pub(crate) fn claim(&self) -> Result<Vec<RunRow>, ApiError> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM server_runs r WHERE status = 'pending' \
             AND NOT EXISTS (SELECT 1 FROM server_runs x WHERE x.thread_id = r.thread_id \
             AND x.status = 'running') \
             AND seq = (SELECT MIN(seq) FROM server_runs y WHERE y.thread_id = r.thread_id \
             AND y.status = 'pending') ORDER BY seq"
        );
        let runs: Vec<RunRow> = {
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map([], run_row)?;
            rows.collect::<Result<_, _>>()?
        };
        let now = now();
        for run in &runs {
            tx.prepare_cached(
                "UPDATE server_runs SET status = 'running', updated_at = ?2 WHERE run_id = ?1",
            )?
            .execute(params![run.run_id, now])?;
        }
        tx.commit()?;
        Ok(runs)
    }

    /// Queues again the runs a stopped process left `running`; returns them.
    pub(crate) fn requeue_running(&self) -> Result<Vec<String>, ApiError> {
        let conn = self.conn()?;
        let mut stmt =
            conn.prepare_cached("SELECT run_id FROM server_runs WHERE status = 'running'")?;
        let ids: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        conn.prepare_cached("UPDATE server_runs SET status = 'pending' WHERE status = 'running'")?
            .execute([])?;
        Ok(ids)
    }

    /// The ids of every pending run.
    pub(crate) fn pending_runs(&self) -> Result<Vec<String>, ApiError> {
        let conn = self.conn()?;
        let mut stmt =
            conn.prepare_cached("SELECT run_id FROM server_runs WHERE status = 'pending'")?;
        let ids = stmt
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::RunRow;

    fn run(run_id: &str, status: &str) -> RunRow {
        RunRow {
            run_id: run_id.to_owned(),
            thread_id: "t".to_owned(),
            assistant_id: "agent".to_owned(),
            created_at: now(),
            updated_at: now(),
            status: status.to_owned(),
            metadata: Map::new(),
            kwargs: "{}".to_owned(),
            multitask_strategy: "enqueue".to_owned(),
            temporary: false,
        }
    }

    fn idle() -> ThreadState {
        ThreadState {
            status: "idle".to_owned(),
            values: Some("{}".to_owned()),
            interrupts: "{}".to_owned(),
            error: None,
        }
    }

    fn status(db: &SqliteDb) -> Value {
        db.thread("t").expect("read").expect("the thread")["status"].clone()
    }

    /// A run that ends while another one waits for the thread leaves the thread
    /// `busy`, not `idle` until the next one is claimed; once none waits, the
    /// state's own status is stored.
    #[test]
    fn a_thread_stays_busy_while_another_run_waits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = SqliteDb::open(&dir.path().join("server.db")).expect("open");
        db.insert_thread("t", "{}").expect("thread");
        db.insert_run(&run("r1", "running"), false).expect("run 1");
        db.insert_run(&run("r2", "pending"), false).expect("run 2");

        db.finish_run("r1", "success").expect("finish 1");
        db.set_thread_state("t", &idle()).expect("state");
        assert_eq!(status(&db), "busy");

        db.finish_run("r2", "success").expect("finish 2");
        db.set_thread_state("t", &idle()).expect("state");
        assert_eq!(status(&db), "idle");
    }
}
