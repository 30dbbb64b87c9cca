//! Serves compiled stategraph graphs over LangGraph Server's HTTP API, so the
//! clients written for LangGraph — the Python and JS `langgraph-sdk`,
//! `RemoteGraph`, chat UIs — run a Rust graph unchanged.
//!
//! Each graph is an *assistant* named by its graph id. Threads, runs and
//! checkpoints live in one SQLite file: a run is queued in the database,
//! started when its thread is free, and streamed to its clients over SSE
//! (every event has an id; a client that reconnects with `Last-Event-ID`, or
//! joins the run's stream, gets what it missed). A server stopped mid-run
//! picks the run up again when it restarts, from the run's last checkpoint.
//!
//! With feature `postgres`, `Server::postgres` keeps them in PostgreSQL
//! instead, shared by any number of server processes: any process executes
//! a queued run, and a run whose process died is resumed by another from its
//! last checkpoint (the guide chapter `serving` has the recipe).
//!
//! ```
//! use stategraph::prelude::*;
//! use graph_server::Server;
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Chat {
//!     #[reducer(append)]
//!     messages: Vec<String>,
//! }
//!
//! fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
//!     a.extend(b);
//!     a
//! }
//!
//! #[node]
//! fn echo(chat: &Chat) -> ChatUpdate {
//!     let last = chat.messages.last().cloned().unwrap_or_default();
//!     Chat::update().messages(vec![format!("echo: {last}")])
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = StateGraph::<Chat>::new()
//!     .add_node(echo)
//!     .add_edge(START, echo)
//!     .compile()?;
//! let dir = tempfile::tempdir()?;
//! let server = Server::new()
//!     .assistant("agent", app)
//!     .database(dir.path().join("server.db"))
//!     .start()
//!     .await?;
//! // `server.router()` is an axum Router: serve it, or test it in process.
//! let _router = server.router();
//! server.shutdown().await;
//! // Or, in a binary: Server::new().assistant("agent", app).serve("127.0.0.1:2024").await?
//! # Ok(())
//! # }
//! ```
//!
//! The endpoints, their bodies and the SSE event names follow LangGraph
//! Server; the guide chapter `serving` lists them with what differs.

#![deny(unsafe_code)]

mod auth;
mod db;
mod error;
mod graph;
mod openapi;
mod routes;
mod runs;
mod store_routes;
mod streams;
pub mod studio;
mod wire;

pub use auth::{ApiKeys, Authenticator};
pub use error::ApiError;
pub use graph::{EventStream, RunInput, ServedGraph, WireEvent};
pub use wire::{CommandBody, Goto, StreamModeName};

use graph_core::checkpoint::{CheckpointError, Checkpointer};
use graph_core::graph::DefaultContext;
use graph_core::{CompiledGraph, State};
use runs::{Assistant, Shared};
use serde::Serialize;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

/// LangGraph's namespace of assistant ids: an assistant's id is the uuid5 of
/// its graph id in it, as LangGraph Server makes them.
const NAMESPACE_GRAPH: uuid::Uuid = uuid::Uuid::from_bytes([
    0x6b, 0xa7, 0xb8, 0x21, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
]);

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The threads and runs tables could not be opened.
    #[error("cannot open the server database `{path}`: {source}")]
    Database {
        /// The SQLite file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rusqlite::Error,
    },
    /// The checkpointer could not be opened.
    #[error("cannot open the checkpoints in `{path}`: {source}")]
    Checkpoints {
        /// The SQLite file.
        path: PathBuf,
        /// Why.
        #[source]
        source: CheckpointError,
    },
    /// The store could not be opened.
    #[error("cannot open the store in `{path}`: {source}")]
    Store {
        /// The SQLite file.
        path: PathBuf,
        /// Why.
        #[source]
        source: graph_core::store::StoreError,
    },
    /// The address could not be bound, or the connection loop failed.
    #[error("cannot serve on {addr}: {source} (is another server on that port?)")]
    Io {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The PostgreSQL database could not be reached, or its tables created.
    #[cfg(feature = "postgres")]
    #[error("cannot open the server's PostgreSQL database: {source}")]
    Postgres {
        /// Why.
        #[source]
        source: graph_postgres::PgError,
    },
    /// Two assistants have the same graph id.
    #[error("two assistants are named `{0}`: give each graph its own id")]
    DuplicateAssistant(String),
}

/// A server for compiled graphs: add them with [`assistant`](Self::assistant),
/// then [`serve`](Self::serve) (or [`start`](Self::start) for the router).
pub struct Server {
    assistants: Vec<(String, Arc<dyn ServedGraph>)>,
    database: PathBuf,
    saver: Option<Arc<dyn Checkpointer>>,
    auth: Option<Arc<dyn Authenticator>>,
    body_limit: usize,
    stream_limit: Option<usize>,
    store: Option<Arc<dyn graph_core::store::Store>>,
    #[cfg(feature = "postgres")]
    postgres: Option<Postgres>,
    #[cfg(feature = "postgres")]
    run_lease: std::time::Duration,
}

/// Where a PostgreSQL server's database is: a URL, or a saver you configured.
#[cfg(feature = "postgres")]
enum Postgres {
    Url(String),
    Saver(graph_postgres::PostgresSaver),
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field(
                "assistants",
                &self.assistants.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("database", &self.database)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with no assistants, storing into `stategraph-server.db` in the
    /// working directory.
    pub fn new() -> Self {
        Server {
            assistants: Vec::new(),
            database: PathBuf::from("stategraph-server.db"),
            saver: None,
            auth: None,
            body_limit: 2 * 1024 * 1024,
            stream_limit: None,
            store: None,
            #[cfg(feature = "postgres")]
            postgres: None,
            #[cfg(feature = "postgres")]
            run_lease: std::time::Duration::from_secs(30),
        }
    }

    /// Serves `app` as the assistant `graph_id` (clients name it by that id or
    /// by its uuid). Its checkpointer is replaced by the server's. Its state
    /// schema names the fields only; see
    /// [`assistant_with_schema`](Self::assistant_with_schema) for their types.
    pub fn assistant<S, C>(mut self, graph_id: impl Into<String>, app: CompiledGraph<S, C>) -> Self
    where
        S: State + Serialize,
        C: ?Sized + DefaultContext + Send + Sync + 'static,
    {
        self.assistants
            .push((graph_id.into(), Arc::new(graph::Served::new(app))));
        self
    }

    /// Serves `app` as [`assistant`](Self::assistant) does, with the JSON
    /// Schema of its state on `/assistants/{id}/schemas`: each field typed,
    /// as LangGraph Server describes a state (derive
    /// [`schemars::JsonSchema`] next to `State`). The Studio's input form
    /// then offers a typed input per field.
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use graph_server::Server;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
    /// struct Counter {
    ///     count: i64,
    /// }
    ///
    /// #[node]
    /// fn bump(c: &Counter) -> CounterUpdate {
    ///     Counter::update().count(c.count + 1)
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let app = StateGraph::<Counter>::new()
    ///     .add_node(bump)
    ///     .add_edge(START, bump)
    ///     .compile()?;
    /// let server = Server::new().assistant_with_schema("counter", app);
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub fn assistant_with_schema<S, C>(
        mut self,
        graph_id: impl Into<String>,
        app: CompiledGraph<S, C>,
    ) -> Self
    where
        S: State + Serialize + schemars::JsonSchema,
        C: ?Sized + DefaultContext + Send + Sync + 'static,
    {
        let served = graph::Served::new(app).with_schema();
        self.assistants.push((graph_id.into(), Arc::new(served)));
        self
    }

    /// Serves a graph behind your own [`ServedGraph`] implementation.
    pub fn served_graph(
        mut self,
        graph_id: impl Into<String>,
        graph: Arc<dyn ServedGraph>,
    ) -> Self {
        self.assistants.push((graph_id.into(), graph));
        self
    }

    /// The SQLite file of threads, runs and (unless
    /// [`checkpointer`](Self::checkpointer) says otherwise) checkpoints.
    pub fn database(mut self, path: impl Into<PathBuf>) -> Self {
        self.database = path.into();
        self
    }

    /// Keeps threads, runs and checkpoints in the PostgreSQL database at `url`
    /// (a `postgres://` URL or a `key=value` string) instead of a SQLite file,
    /// so that any number of server processes can serve the same threads: runs
    /// are queued in the database, any process executes them, and a run whose
    /// process died is resumed by another one from its last checkpoint (see
    /// [`run_lease`](Self::run_lease) and the guide chapter `serving`). The
    /// tables are created on first use. Feature `postgres`.
    #[cfg(feature = "postgres")]
    pub fn postgres(mut self, url: impl Into<String>) -> Self {
        self.postgres = Some(Postgres::Url(url.into()));
        self
    }

    /// As [`postgres`](Self::postgres), with a saver you built (pool sizes,
    /// TLS: [`PostgresSaver::builder`](graph_postgres::PostgresSaver::builder)).
    #[cfg(feature = "postgres")]
    pub fn postgres_saver(mut self, saver: graph_postgres::PostgresSaver) -> Self {
        self.postgres = Some(Postgres::Saver(saver));
        self
    }

    /// With PostgreSQL, how long a process's claim on a run lasts without a
    /// heartbeat (default 30 s; the heartbeat renews it three times per
    /// lease). A process that dies mid-run leaves the run to another process
    /// once this much time has passed.
    #[cfg(feature = "postgres")]
    pub fn run_lease(mut self, lease: std::time::Duration) -> Self {
        self.run_lease = lease.max(std::time::Duration::from_millis(300));
        self
    }

    /// Stores checkpoints with `saver` instead of in the database file.
    pub fn checkpointer(mut self, saver: impl graph_core::IntoCheckpointer) -> Self {
        self.saver = Some(saver.into_checkpointer());
        self
    }

    /// Serves `store` on the `/store/...` endpoints (by default, a
    /// `SqliteStore` in the database file). Give your graphs the same store
    /// (`CompileOptions::store`) for their nodes to read what clients put.
    pub fn store(mut self, store: impl graph_core::store::IntoStore) -> Self {
        self.store = Some(store.into_store());
        self
    }

    /// Authenticates every request (but `GET /ok`) with `auth`: a request it
    /// refuses is answered 401, and each caller sees only the threads (and
    /// their runs) it created — another caller's are 404. See [`ApiKeys`].
    pub fn authenticator(mut self, auth: impl Authenticator) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// The largest request body accepted, in bytes (2 MiB by default); a
    /// larger one is answered 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The most SSE streams one client may have open at once (no limit by
    /// default): a `runs/stream` or join-stream request past it is answered
    /// 429 and starts no run. A client is its identity under an
    /// [`authenticator`](Self::authenticator), else its IP address (as
    /// [`serve`](Self::serve) sees it: behind a proxy, every client shares
    /// the proxy's). Serving [`Running::router`] yourself, make it with
    /// `into_make_service_with_connect_info::<SocketAddr>()` for the
    /// addresses to be known; without them, unauthenticated clients count as
    /// one.
    ///
    /// ```
    /// use graph_server::{ApiKeys, Server};
    ///
    /// let server = Server::new()
    ///     .authenticator(ApiKeys::new().key("secret-of-alice", "alice"))
    ///     .stream_limit(8);
    /// # let _ = server;
    /// ```
    pub fn stream_limit(mut self, streams: usize) -> Self {
        self.stream_limit = Some(streams);
        self
    }

    /// Opens the database and starts the run worker; requeues the runs a
    /// stopped server left unfinished.
    pub async fn start(mut self) -> Result<Running, ServeError> {
        #[cfg(feature = "postgres")]
        if let Some(postgres) = self.postgres.take() {
            let saver = match postgres {
                Postgres::Saver(saver) => saver,
                Postgres::Url(url) => graph_postgres::PostgresSaver::connect(&url)
                    .await
                    .map_err(|source| ServeError::Postgres { source })?,
            };
            let db = db::postgres::PgDb::open(&saver, self.run_lease)
                .await
                .map_err(|source| ServeError::Postgres { source })?;
            let store = match self.store.take() {
                Some(store) => store,
                None => {
                    let store = graph_postgres::PostgresStore::from_pool(
                        saver.pool().clone(),
                        graph_core::store::StoreConfig::new(),
                    )
                    .await
                    .map_err(|source| ServeError::Store {
                        path: "(PostgreSQL)".into(),
                        source,
                    })?;
                    Arc::new(store) as Arc<dyn graph_core::store::Store>
                }
            };
            let saver = Arc::new(saver) as Arc<dyn Checkpointer>;
            return self.start_with(db::Db::Postgres(db), saver, store).await;
        }
        let db = db::SqliteDb::open(&self.database).map_err(|source| ServeError::Database {
            path: self.database.clone(),
            source,
        })?;
        let saver = match self.saver.take() {
            Some(saver) => saver,
            None => {
                let saver = graph_sqlite::SqliteSaver::open(&self.database)
                    .await
                    .map_err(|source| ServeError::Checkpoints {
                        path: self.database.clone(),
                        source,
                    })?;
                Arc::new(saver) as Arc<dyn Checkpointer>
            }
        };
        let store = match self.store.take() {
            Some(store) => store,
            None => {
                let store = graph_sqlite::SqliteStore::open(
                    &self.database,
                    graph_core::store::StoreConfig::new(),
                )
                .await
                .map_err(|source| ServeError::Store {
                    path: self.database.clone(),
                    source,
                })?;
                Arc::new(store) as Arc<dyn graph_core::store::Store>
            }
        };
        self.start_with(db::Db::Sqlite(Arc::new(db)), saver, store)
            .await
    }

    async fn start_with(
        self,
        db: db::Db,
        saver: Arc<dyn Checkpointer>,
        store: Arc<dyn graph_core::store::Store>,
    ) -> Result<Running, ServeError> {
        let created_at = db::now();
        let mut assistants: Vec<Assistant> = Vec::new();
        for (graph_id, graph) in self.assistants {
            if assistants.iter().any(|a| a.graph_id == graph_id) {
                return Err(ServeError::DuplicateAssistant(graph_id));
            }
            assistants.push(Assistant {
                id: uuid::Uuid::new_v5(&NAMESPACE_GRAPH, graph_id.as_bytes()).to_string(),
                graph: graph.with_saver(Arc::clone(&saver)),
                graph_id,
                created_at: created_at.clone(),
            });
        }
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared::new(assistants, db, saver, Some(store)));
        let worker = tokio::spawn(Arc::clone(&shared).work(stopped));
        Ok(Running {
            shared,
            stop,
            worker,
            auth: self.auth,
            body_limit: self.body_limit,
            stream_limit: self.stream_limit.map(streams::StreamLimit::new),
        })
    }

    /// Serves on `addr` until Ctrl-C (SIGINT) or SIGTERM, then stops taking
    /// requests and runs; requests in flight finish first.
    pub async fn serve(self, addr: &str) -> Result<(), ServeError> {
        self.serve_until(addr, shutdown_signal()).await
    }

    /// Serves on `addr` until `signal` completes.
    pub async fn serve_until(
        self,
        addr: &str,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let io = |source| ServeError::Io {
            addr: addr.to_owned(),
            source,
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(io)?;
        let running = self.start().await?;
        tracing::info!(addr = %addr, "serving the LangGraph Server API");
        // Each request knows its peer's address: the stream limit counts an
        // unauthenticated client by it.
        let app = running
            .router()
            .into_make_service_with_connect_info::<std::net::SocketAddr>();
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(signal)
            .await
            .map_err(io);
        running.shutdown().await;
        result
    }
}

/// A started server: its router, and its run worker until
/// [`shutdown`](Self::shutdown).
pub struct Running {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    worker: tokio::task::JoinHandle<()>,
    auth: Option<Arc<dyn Authenticator>>,
    body_limit: usize,
    stream_limit: Option<Arc<streams::StreamLimit>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").finish_non_exhaustive()
    }
}

impl Running {
    /// The API as an axum [`Router`](axum::Router): serve it with
    /// `axum::serve`, nest it in your own, or call it in tests.
    pub fn router(&self) -> axum::Router {
        let mut router = routes::router(Arc::clone(&self.shared))
            .layer(axum::extract::DefaultBodyLimit::max(self.body_limit));
        if let Some(limit) = &self.stream_limit {
            router = router.layer(axum::Extension(Arc::clone(limit)));
        }
        match &self.auth {
            Some(auth) => router.layer(axum::middleware::from_fn_with_state(
                Arc::clone(auth),
                auth::authenticate,
            )),
            None => router,
        }
    }

    /// Stops starting runs. With SQLite, runs in progress are dropped where
    /// they are: their checkpoints stay, and the next server on this database
    /// resumes them. With PostgreSQL, they stop at once and go back to the
    /// queue, for the other processes to resume from their last checkpoint
    /// without waiting for their leases to run out.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.worker.await;
        self.shared.hand_back().await;
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
