//! [`PgError`], the one error type of this crate, and its mapping into graph-core's
//! [`CheckpointError`].

use graph_core::checkpoint::CheckpointError;

/// Everything that can go wrong talking to PostgreSQL.
///
/// The [`Checkpointer`](graph_core::checkpoint::Checkpointer) methods return it
/// converted into a [`CheckpointError`] (a newer schema becomes
/// [`CheckpointError::Unsupported`], an undecodable row
/// [`CheckpointError::Corrupt`], the rest [`CheckpointError::Storage`] with this
/// error as its source); the inherent methods of [`PostgresSaver`](crate::PostgresSaver)
/// return it as is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The connection string could not be parsed.
    #[error("invalid PostgreSQL connection string: {0}")]
    Config(#[source] tokio_postgres::Error),
    /// The connection pool could not be built.
    #[error("cannot build the connection pool: {0}")]
    Build(#[from] deadpool_postgres::BuildError),
    /// No connection could be had (server unreachable, authentication refused,
    /// pool closed or timed out).
    #[error("cannot get a PostgreSQL connection: {0}")]
    Connect(#[from] deadpool_postgres::PoolError),
    /// A statement failed.
    #[error("{context}: {source}")]
    Query {
        /// What was being done.
        context: String,
        /// The driver's error (with the server's SQLSTATE, if any).
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database was migrated by a newer version of this crate (or of LangGraph's
    /// Postgres saver) than this one: its layout is unknown, so nothing is read or
    /// written.
    #[error(
        "the checkpoint tables are at schema version {found} (table checkpoint_migrations), \
         but this graph-postgres knows versions up to {supported}; upgrade stategraph, or \
         use another database or schema (search_path) for this version"
    )]
    SchemaTooNew {
        /// The highest version in `checkpoint_migrations`.
        found: i64,
        /// The highest version this crate knows.
        supported: i64,
    },
    /// A stored row could not be decoded.
    #[error("thread `{thread_id}`, checkpoint `{checkpoint_id}`: cannot decode {what}: {source}")]
    Corrupt {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint_id: String,
        /// Which part.
        what: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stored checkpoint uses a newer checkpoint format than this crate reads.
    #[error("thread `{thread_id}`, checkpoint `{checkpoint_id}` uses checkpoint format v{found}, but this graph-postgres reads up to v{supported}")]
    FormatTooNew {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint_id: String,
        /// Its format version.
        found: u32,
        /// The newest format this crate reads.
        supported: u32,
    },
    /// A value could not be serialised for storage.
    #[error("{context}: cannot serialise {what}: {source}")]
    Serialize {
        /// What was being done.
        context: String,
        /// Which part.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The call itself is invalid.
    #[error("{0}")]
    InvalidInput(String),
    /// A run holds the thread (its advisory lock is taken): it cannot be run,
    /// deleted or pruned until that run ends.
    #[error("thread `{thread_id}` is being run (its lock is held by another session); try again when that run has ended")]
    ThreadBusy {
        /// The thread.
        thread_id: String,
    },
    /// A write of a run that no longer holds its thread (see
    /// [`CheckpointError::LeaseLost`]); nothing was written.
    #[error("thread `{thread_id}`: the run with lease owner `{owner}` no longer holds the thread: {reason}")]
    LeaseLost {
        /// The thread.
        thread_id: String,
        /// The lease owner id of the run.
        owner: String,
        /// What happened to the lease.
        reason: String,
    },
}

impl PgError {
    /// Whether the error means the connection was lost (the server closed it,
    /// restarted, or terminated the backend): the operation may be retried on a new
    /// connection. Every operation of [`PostgresSaver`](crate::PostgresSaver) is
    /// idempotent, and is retried this way a few times before such an error is
    /// returned.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            PgError::Query { source, .. } => driver_error_is_connection_lost(source),
            PgError::Connect(deadpool_postgres::PoolError::Backend(e)) => {
                driver_error_is_connection_lost(e)
            }
            _ => false,
        }
    }

    pub(crate) fn query(context: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> Self {
        let context = context.into();
        move |source| PgError::Query { context, source }
    }
}

fn driver_error_is_connection_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        // Class 08: connection exception; 57P01..57P03: admin shutdown (what
        // pg_terminate_backend sends), crash shutdown, cannot connect now.
        let code = code.code();
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03");
    }
    // No SQLSTATE: an I/O error on the socket (reset, refused while restarting).
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

impl From<PgError> for CheckpointError {
    fn from(e: PgError) -> Self {
        match e {
            // `Unsupported` adds the advice to upgrade.
            PgError::SchemaTooNew { found, supported } => CheckpointError::Unsupported(format!(
                "the PostgreSQL checkpoint tables are at schema version {found}, but this \
                 graph-postgres knows versions up to {supported}"
            )),
            PgError::FormatTooNew {
                thread_id,
                checkpoint_id,
                found,
                supported,
            } => CheckpointError::Unsupported(format!(
                "thread `{thread_id}`, checkpoint `{checkpoint_id}` uses checkpoint format \
                 v{found}, but this graph-postgres reads up to v{supported}"
            )),
            PgError::Corrupt {
                thread_id,
                checkpoint_id,
                what,
                source,
            } => CheckpointError::Corrupt {
                thread_id,
                checkpoint_id,
                what,
                source,
            },
            PgError::InvalidInput(message) => CheckpointError::InvalidInput(message),
            PgError::ThreadBusy { thread_id } => CheckpointError::ThreadBusy { thread_id },
            PgError::LeaseLost {
                thread_id,
                owner,
                reason,
            } => CheckpointError::LeaseLost {
                thread_id,
                owner,
                reason,
            },
            other => CheckpointError::Storage(Box::new(other)),
        }
    }
}
