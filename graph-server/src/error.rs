//! Errors of the API, answered in LangGraph Server's shape: a status and
//! `{"detail": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use graph_core::checkpoint::CheckpointError;
use graph_core::GraphError;

/// An error a request is answered with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// An unknown assistant, thread or run (404).
    #[error("{what} with ID {id} not found")]
    NotFound {
        /// `Assistant`, `Thread` or `Run`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// The body is not JSON, or not of the endpoint's shape (422).
    #[error("invalid request body: {0}")]
    BadBody(String),
    /// A value in the body does not fit the graph's typed state (422).
    #[error("{path}: {message}")]
    Unprocessable {
        /// Where in the body, as `input.count`.
        path: String,
        /// What was expected.
        message: String,
    },
    /// The thread exists already (409, `if_exists` = `raise`).
    #[error("Thread with ID {0} already exists")]
    ThreadExists(String),
    /// The thread is running a run and the multitask strategy is `reject` (409).
    #[error(
        "Thread {0} is busy with another run: wait for it to finish, or choose the \
         multitask strategy `enqueue`, `interrupt` or `rollback`"
    )]
    ThreadBusy(String),
    /// The client has as many streams open as the server allows (429).
    #[error(
        "{client} has reached this server's limit of {limit} open streams per client: \
         close one first, or wait for a run with `/wait` or `join` instead of streaming it"
    )]
    TooManyStreams {
        /// The client: its identity or address.
        client: String,
        /// The limit ([`Server::stream_limit`](crate::Server::stream_limit)).
        limit: usize,
    },
    /// The caller may not do this (403): a store write outside its namespace.
    #[error("{0}")]
    Forbidden(String),
    /// The graph refused the request (a resume with no pending interrupt, an
    /// update naming an unknown node...) (400).
    #[error("{0}")]
    Graph(#[source] GraphError),
    /// The database of threads and runs failed (500).
    #[error("the threads and runs database failed: {0}")]
    Database(#[source] rusqlite::Error),
    /// The PostgreSQL database of threads and runs failed (500).
    #[cfg(feature = "postgres")]
    #[error("the threads and runs database failed: {0}")]
    Postgres(#[source] graph_postgres::PgError),
    /// The checkpointer failed (500).
    #[error("the checkpointer failed: {0}")]
    Checkpoint(#[source] CheckpointError),
    /// Something the server did not expect (500).
    #[error("{message}")]
    Internal {
        /// What happened.
        message: String,
    },
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::BadBody(_) | ApiError::Unprocessable { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::ThreadExists(_) | ApiError::ThreadBusy(_) => StatusCode::CONFLICT,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TooManyStreams { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Graph(GraphError::Checkpoint(CheckpointError::NotFound { .. })) => {
                StatusCode::NOT_FOUND
            }
            ApiError::Graph(_) => StatusCode::BAD_REQUEST,
            ApiError::Database(_) | ApiError::Checkpoint(_) | ApiError::Internal { .. } => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
            #[cfg(feature = "postgres")]
            ApiError::Postgres(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub(crate) fn thread(id: &str) -> Self {
        ApiError::NotFound {
            what: "Thread",
            id: id.to_owned(),
        }
    }

    pub(crate) fn run(id: &str) -> Self {
        ApiError::NotFound {
            what: "Run",
            id: id.to_owned(),
        }
    }

    pub(crate) fn assistant(id: &str) -> Self {
        ApiError::NotFound {
            what: "Assistant",
            id: id.to_owned(),
        }
    }
}

impl From<GraphError> for ApiError {
    fn from(e: GraphError) -> Self {
        ApiError::Graph(e)
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        ApiError::Database(e)
    }
}

#[cfg(feature = "postgres")]
impl From<graph_postgres::PgError> for ApiError {
    fn from(e: graph_postgres::PgError) -> Self {
        ApiError::Postgres(e)
    }
}

impl From<CheckpointError> for ApiError {
    fn from(e: CheckpointError) -> Self {
        ApiError::Checkpoint(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let body = match &self {
            ApiError::Unprocessable { path, message } => serde_json::json!({
                "detail": self.to_string(),
                "errors": [{"loc": path.split('.').collect::<Vec<_>>(), "msg": message}],
            }),
            _ => serde_json::json!({ "detail": self.to_string() }),
        };
        (status, axum::Json(body)).into_response()
    }
}

/// A run's failure as LangGraph Server reports it (`{"error": .., "message": ..}`).
pub(crate) fn run_error_json(e: &GraphError) -> serde_json::Value {
    let kind = match e.code() {
        Some(code) => format!("{code:?}"),
        None => {
            let debug = format!("{e:?}");
            debug
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap_or("GraphError")
                .to_owned()
        }
    };
    serde_json::json!({"error": kind, "message": e.to_string()})
}
