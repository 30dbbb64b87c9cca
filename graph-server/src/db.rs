//! The server's own records — a thread's metadata and status, each run and its
//! request — in one of two databases: a SQLite file (one server process) or
//! PostgreSQL (feature `postgres`, any number of server processes). The
//! graph's checkpoints live in the checkpointer, in the same database.
//!
//! A run is a row first: it is queued as `pending`, taken as `running`, and
//! finished as `success`, `error` or `interrupted`. [`Db`] is the one
//! interface the routes and the run worker use; only taking runs differs by
//! backend (see `runs.rs`).

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod sqlite;

use crate::error::ApiError;
use serde_json::{json, Map, Value};
use std::sync::Arc;

pub(crate) use sqlite::SqliteDb;

/// Now, as LangGraph Server writes timestamps (RFC 3339, UTC, microseconds:
/// `2024-05-01T12:00:00.123456+00:00`).
pub(crate) fn now() -> String {
    timestamp(time::OffsetDateTime::now_utc())
}

/// `t` as [`now`] writes it (in UTC; such timestamps sort as text).
pub(crate) fn timestamp(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}+00:00",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

/// A new random id (a version 4 UUID).
pub(crate) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    fastrand::fill(&mut bytes);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

/// A run as stored.
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub run_id: String,
    pub thread_id: String,
    pub assistant_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub status: String,
    pub metadata: Map<String, Value>,
    /// The request body that created the run.
    pub kwargs: String,
    pub multitask_strategy: String,
    pub temporary: bool,
}

impl RunRow {
    /// The run in LangGraph Server's `Run` shape.
    pub(crate) fn to_json(&self) -> Value {
        let kwargs: Value = serde_json::from_str(&self.kwargs).unwrap_or(Value::Null);
        json!({
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "assistant_id": self.assistant_id,
            "metadata": self.metadata,
            "status": self.status,
            "kwargs": kwargs,
            "multitask_strategy": self.multitask_strategy,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        })
    }
}

fn parse_map(text: &str) -> Map<String, Value> {
    serde_json::from_str(text).unwrap_or_default()
}

/// The threads and runs tables, in the backend the server was given.
pub(crate) enum Db {
    /// A SQLite file, for one process.
    Sqlite(Arc<SqliteDb>),
    /// PostgreSQL, shared by every server process.
    #[cfg(feature = "postgres")]
    Postgres(postgres::PgDb),
}

/// Runs a SQLite call on tokio's blocking threads: the connection is
/// synchronous, and its busy handler sleeps while the checkpointer's
/// connection holds the file's write lock, which must not stall the async
/// workers that serve every other request. (`spawn_blocking`, not
/// `block_in_place`: it works on a current-thread runtime too.)
pub(crate) async fn blocking<T: Send + 'static>(
    db: &Arc<SqliteDb>,
    call: impl FnOnce(&SqliteDb) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let db = Arc::clone(db);
    tokio::task::spawn_blocking(move || call(&db))
        .await
        .map_err(|e| ApiError::Internal {
            message: format!("a database call did not finish: {e}"),
        })?
}

impl Db {
    /// Whether a run's row keeps what `wait` answers (PostgreSQL: any process
    /// may ask). A SQLite server keeps it with the live run.
    pub(crate) fn keeps_outcomes(&self) -> bool {
        !matches!(self, Db::Sqlite(_))
    }

    /// Creates a thread; `false` if it exists.
    pub(crate) async fn insert_thread(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<bool, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let (thread_id, metadata) = (thread_id.to_owned(), map_text(metadata));
                blocking(db, move |db| db.insert_thread(&thread_id, &metadata)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.insert_thread(thread_id, metadata).await,
        }
    }

    /// A thread in LangGraph Server's `Thread` shape.
    pub(crate) async fn thread(&self, thread_id: &str) -> Result<Option<Value>, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let thread_id = thread_id.to_owned();
                blocking(db, move |db| db.thread(&thread_id)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.thread(thread_id).await,
        }
    }

    /// Every thread, newest first.
    pub(crate) async fn threads(&self) -> Result<Vec<Value>, ApiError> {
        match self {
            Db::Sqlite(db) => blocking(db, SqliteDb::threads).await,
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.threads().await,
        }
    }

    /// Merges `metadata` into the thread's; `false` if there is no such thread.
    pub(crate) async fn patch_thread(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<bool, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let (thread_id, metadata) = (thread_id.to_owned(), metadata.clone());
                blocking(db, move |db| db.patch_thread(&thread_id, metadata, false)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.patch_thread(thread_id, metadata).await,
        }
    }

    /// Merges `metadata` into the thread's and marks it `busy` (a run is
    /// being queued on it); `false` if there is no such thread.
    pub(crate) async fn patch_thread_busy(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<bool, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let (thread_id, metadata) = (thread_id.to_owned(), metadata.clone());
                blocking(db, move |db| db.patch_thread(&thread_id, metadata, true)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                let found = db.patch_thread(thread_id, metadata).await?;
                db.set_thread_status(thread_id, "busy").await?;
                Ok(found)
            }
        }
    }

    /// Records a thread's state after a run or an update: status (or `busy`
    /// while the thread has a pending or running run, checked in the same
    /// statement), values, pending interrupts, error.
    pub(crate) async fn set_thread_state(
        &self,
        thread_id: &str,
        status: &str,
        values: Option<&Value>,
        interrupts: &Value,
        error: Option<&Value>,
    ) -> Result<(), ApiError> {
        match self {
            Db::Sqlite(db) => {
                let state = sqlite::ThreadState {
                    status: status.to_owned(),
                    values: values.map(Value::to_string),
                    interrupts: interrupts.to_string(),
                    error: error.map(Value::to_string),
                };
                let thread_id = thread_id.to_owned();
                blocking(db, move |db| db.set_thread_state(&thread_id, &state)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                db.set_thread_state(thread_id, status, values, interrupts, error)
                    .await
            }
        }
    }

    /// Sets a thread's status only.
    pub(crate) async fn set_thread_status(
        &self,
        thread_id: &str,
        status: &str,
    ) -> Result<(), ApiError> {
        match self {
            Db::Sqlite(db) => {
                let (thread_id, status) = (thread_id.to_owned(), status.to_owned());
                blocking(db, move |db| db.set_thread_status(&thread_id, &status)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.set_thread_status(thread_id, status).await,
        }
    }

    /// Deletes a thread and its runs; `false` if there was none.
    pub(crate) async fn delete_thread(&self, thread_id: &str) -> Result<bool, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let thread_id = thread_id.to_owned();
                blocking(db, move |db| db.delete_thread(&thread_id)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.delete_thread(thread_id).await,
        }
    }

    /// Queues a run. With `reject_busy`, refuses it (`ThreadBusy`) when its
    /// thread has a pending or running run, checked in the same transaction as
    /// the insert (so two processes cannot both start a run on a free thread).
    /// Returns the run's id in the shared queue (PostgreSQL).
    pub(crate) async fn insert_run(
        &self,
        run: &RunRow,
        reject_busy: bool,
    ) -> Result<Option<i64>, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let run = run.clone();
                blocking(db, move |db| db.insert_run(&run, reject_busy)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.insert_run(run, reject_busy).await,
        }
    }

    /// A run of a thread.
    pub(crate) async fn run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRow>, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let (thread_id, run_id) = (thread_id.to_owned(), run_id.to_owned());
                blocking(db, move |db| db.run(&thread_id, &run_id)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.run(thread_id, run_id).await,
        }
    }

    /// A thread's runs, newest first.
    pub(crate) async fn runs(
        &self,
        thread_id: &str,
        status: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<RunRow>, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let (thread_id, status) = (thread_id.to_owned(), status.map(str::to_owned));
                blocking(db, move |db| {
                    db.runs(&thread_id, status.as_deref(), limit, offset)
                })
                .await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.runs(thread_id, status, limit, offset).await,
        }
    }

    /// The ids of a thread's pending and running runs, oldest first.
    pub(crate) async fn active_runs(&self, thread_id: &str) -> Result<Vec<String>, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let thread_id = thread_id.to_owned();
                blocking(db, move |db| db.active_runs(&thread_id)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.active_runs(thread_id).await,
        }
    }

    /// Records how a run ended: its status and what `wait` answers for it.
    pub(crate) async fn finish_run(
        &self,
        run_id: &str,
        status: &str,
        outcome: &Value,
    ) -> Result<(), ApiError> {
        match self {
            Db::Sqlite(db) => {
                // A SQLite server keeps the outcome with the live run.
                let _ = outcome;
                let (run_id, status) = (run_id.to_owned(), status.to_owned());
                blocking(db, move |db| db.finish_run(&run_id, &status)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.finish_run(run_id, status, outcome).await,
        }
    }

    /// Cancels a run that has not started: marks it `interrupted`, or deletes
    /// it with `delete`. `false` if it is not pending (any more).
    pub(crate) async fn cancel_pending(
        &self,
        run_id: &str,
        delete: bool,
    ) -> Result<bool, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let run_id = run_id.to_owned();
                blocking(db, move |db| db.cancel_pending(&run_id, delete)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.cancel_pending(run_id, delete).await,
        }
    }

    /// Deletes a run.
    pub(crate) async fn delete_run(&self, run_id: &str) -> Result<bool, ApiError> {
        match self {
            Db::Sqlite(db) => {
                let run_id = run_id.to_owned();
                blocking(db, move |db| db.delete_run(&run_id)).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.delete_run(run_id).await,
        }
    }
}

/// A metadata map as stored (JSON text).
fn map_text(map: &Map<String, Value>) -> String {
    // A map of JSON values always serializes.
    serde_json::to_string(map).unwrap_or_else(|_| "{}".to_owned())
}

/// A run's status once it is over: `success`, `error`, `interrupted`.
pub(crate) fn is_final(status: &str) -> bool {
    !matches!(status, "pending" | "running")
}

/// What `wait` answers for a run cancelled before it started.
pub(crate) fn cancelled_outcome() -> Value {
    json!({"__error__": {"error": "Cancelled", "message": "the run was cancelled before it started"}})
}
