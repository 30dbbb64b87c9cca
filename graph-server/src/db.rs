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
    Sqlite(SqliteDb),
    /// PostgreSQL, shared by every server process.
    #[cfg(feature = "postgres")]
    Postgres(postgres::PgDb),
}

/// Dispatches a call to the backend: SQLite's calls are synchronous (a mutex
/// around one connection), PostgreSQL's are awaited.
macro_rules! dispatch {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match $self {
            Db::Sqlite(db) => db.$method($($arg),*),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.$method($($arg),*).await,
        }
    };
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
        dispatch!(self.insert_thread(thread_id, metadata))
    }

    /// A thread in LangGraph Server's `Thread` shape.
    pub(crate) async fn thread(&self, thread_id: &str) -> Result<Option<Value>, ApiError> {
        dispatch!(self.thread(thread_id))
    }

    /// Every thread, newest first.
    pub(crate) async fn threads(&self) -> Result<Vec<Value>, ApiError> {
        dispatch!(self.threads())
    }

    /// Merges `metadata` into the thread's; `false` if there is no such thread.
    pub(crate) async fn patch_thread(
        &self,
        thread_id: &str,
        metadata: &Map<String, Value>,
    ) -> Result<bool, ApiError> {
        dispatch!(self.patch_thread(thread_id, metadata))
    }

    /// Records a thread's state after a run or an update: status, values,
    /// pending interrupts, error.
    pub(crate) async fn set_thread_state(
        &self,
        thread_id: &str,
        status: &str,
        values: Option<&Value>,
        interrupts: &Value,
        error: Option<&Value>,
    ) -> Result<(), ApiError> {
        dispatch!(self.set_thread_state(thread_id, status, values, interrupts, error))
    }

    /// Sets a thread's status only.
    pub(crate) async fn set_thread_status(
        &self,
        thread_id: &str,
        status: &str,
    ) -> Result<(), ApiError> {
        dispatch!(self.set_thread_status(thread_id, status))
    }

    /// Deletes a thread and its runs; `false` if there was none.
    pub(crate) async fn delete_thread(&self, thread_id: &str) -> Result<bool, ApiError> {
        dispatch!(self.delete_thread(thread_id))
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
        dispatch!(self.insert_run(run, reject_busy))
    }

    /// A run of a thread.
    pub(crate) async fn run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<Option<RunRow>, ApiError> {
        dispatch!(self.run(thread_id, run_id))
    }

    /// A thread's runs, newest first.
    pub(crate) async fn runs(
        &self,
        thread_id: &str,
        status: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<RunRow>, ApiError> {
        dispatch!(self.runs(thread_id, status, limit, offset))
    }

    /// The ids of a thread's pending and running runs, oldest first.
    pub(crate) async fn active_runs(&self, thread_id: &str) -> Result<Vec<String>, ApiError> {
        dispatch!(self.active_runs(thread_id))
    }

    /// Records how a run ended: its status and what `wait` answers for it.
    pub(crate) async fn finish_run(
        &self,
        run_id: &str,
        status: &str,
        outcome: &Value,
    ) -> Result<(), ApiError> {
        dispatch!(self.finish_run(run_id, status, outcome))
    }

    /// Cancels a run that has not started: marks it `interrupted`, or deletes
    /// it with `delete`. `false` if it is not pending (any more).
    pub(crate) async fn cancel_pending(
        &self,
        run_id: &str,
        delete: bool,
    ) -> Result<bool, ApiError> {
        dispatch!(self.cancel_pending(run_id, delete))
    }

    /// Deletes a run.
    pub(crate) async fn delete_run(&self, run_id: &str) -> Result<bool, ApiError> {
        dispatch!(self.delete_run(run_id))
    }
}

/// A run's status once it is over: `success`, `error`, `interrupted`.
pub(crate) fn is_final(status: &str) -> bool {
    !matches!(status, "pending" | "running")
}

/// What `wait` answers for a run cancelled before it started.
pub(crate) fn cancelled_outcome() -> Value {
    json!({"__error__": {"error": "Cancelled", "message": "the run was cancelled before it started"}})
}
