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
    #[error("cannot get a PostgreSQL connection: {}", describe_pool(.0))]
    Connect(#[from] deadpool_postgres::PoolError),
    /// A statement failed. The message gives the server's own (severity,
    /// SQLSTATE, message, detail and hint), or the driver's with its causes.
    #[error("{context}: {}", describe(source))]
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
    /// The store tables were migrated by a newer version of this crate or of
    /// LangGraph's Postgres store than this one.
    #[error(
        "the store tables are at version {found} (table {table}), but this graph-postgres \
         knows versions up to {supported}; upgrade stategraph, or use another database or \
         schema (search_path)"
    )]
    StoreSchemaTooNew {
        /// The migrations table.
        table: &'static str,
        /// Its highest version.
        found: i64,
        /// The highest version this crate knows.
        supported: i64,
    },
    /// The pgvector extension is installed in a schema that is not on the
    /// connection's `search_path`, so its `vector` type cannot be named.
    #[error(
        "pgvector is installed in this database, but in a schema that is not on the \
         search_path; add that schema (often `public`) to search_path, e.g. \
         `options=-c search_path=myschema,public` in the connection string"
    )]
    PgvectorNotOnSearchPath,
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
    /// An id that PostgreSQL cannot store (a NUL byte) or index (too long).
    #[error("{what} `{id}` {problem}")]
    InvalidId {
        /// Which id ("thread id", "checkpoint id", ...).
        what: &'static str,
        /// The id as shown (escaped, cut short when long).
        id: String,
        /// What is wrong with it, and what to do.
        problem: String,
    },
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

/// What a driver error says, with what the server said when it answered:
/// tokio-postgres's own message for a server error is only "db error".
fn describe(e: &tokio_postgres::Error) -> String {
    use std::fmt::Write;
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
        if let Some(detail) = db.detail() {
            let _ = write!(text, " (detail: {detail})");
        }
        if let Some(hint) = db.hint() {
            let _ = write!(text, " (hint: {hint})");
        }
        return text;
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

/// What a pool error says, with the server's or the driver's message when a
/// connection could not be made.
fn describe_pool(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => describe(e),
        other => other.to_string(),
    }
}

/// An id (thread, checkpoint, task) as error messages show it: escaped, and cut
/// short when long, so that a megabyte of id does not become a megabyte of
/// message.
pub(crate) struct Shown<'a>(pub(crate) &'a str);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const KEEP: usize = 64;
        if self.0.len() <= KEEP {
            return write!(f, "{}", self.0.escape_debug());
        }
        let mut end = KEEP;
        while !self.0.is_char_boundary(end) {
            end -= 1;
        }
        write!(
            f,
            "{}…({} bytes in all)",
            self.0[..end].escape_debug(),
            self.0.len()
        )
    }
}

/// The longest thread, checkpoint or task id the saver accepts, in bytes: ids
/// are keys of btree indexes, whose entries PostgreSQL limits to about 2.7 KB.
pub(crate) const MAX_ID_BYTES: usize = 1024;

/// Refuses an id PostgreSQL cannot store or index, with what to do about it.
pub(crate) fn check_id(what: &'static str, id: &str) -> Result<(), PgError> {
    if let Some(at) = id.bytes().position(|b| b == 0) {
        return Err(PgError::InvalidId {
            what,
            id: Shown(id).to_string(),
            problem: format!(
                "contains a NUL byte (at byte {at}), which PostgreSQL text cannot hold; use \
                 an id without it"
            ),
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(PgError::InvalidId {
            what,
            id: Shown(id).to_string(),
            problem: format!(
                "is {} bytes long; the PostgreSQL saver takes ids of up to {MAX_ID_BYTES} bytes \
                 (they are index keys) — use a shorter id, e.g. a hash of this one",
                id.len()
            ),
        });
    }
    Ok(())
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
            e @ PgError::InvalidId { .. } => CheckpointError::InvalidInput(e.to_string()),
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
