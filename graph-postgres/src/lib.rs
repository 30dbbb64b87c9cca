//! A PostgreSQL checkpointer for [stategraph](https://docs.rs/stategraph), in the
//! schema of LangGraph's `langgraph-checkpoint-postgres`, for many worker
//! processes (on many machines) sharing one database.
//!
//! Users reach this crate as `stategraph::postgres` (feature `postgres`); the
//! driver crates whose types its API takes are re-exported with it
//! (`stategraph::postgres::tokio_postgres`, `stategraph::postgres::deadpool_postgres`).
//!
//! ```no_run
//! use graph_postgres::PostgresSaver;
//! use stategraph::prelude::*;
//!
//! #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
//! struct Counter {
//!     #[reducer(std::ops::Add::add)]
//!     n: u64,
//! }
//!
//! #[node]
//! fn bump(_: &Counter) -> CounterUpdate {
//!     Counter::update().n(1)
//! }
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Creates (or migrates) the tables on first use.
//! let saver = PostgresSaver::connect("postgres://app@db.internal/app").await?;
//! let app = StateGraph::<Counter>::new()
//!     .add_node(bump)
//!     .add_edge(START, bump)
//!     .compile_with(saver.clone())?;
//!
//! // Two workers that may pick up the same thread serialise their runs on it.
//! let thread = RunConfig::thread("order-1234");
//! let lock = saver.lock_thread("order-1234").await?;
//! let state = app.invoke(Counter::update(), &thread).await?;
//! lock.unlock().await?;
//! println!("runs so far: {}", state.n);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! The four tables of LangGraph's saver, with its migration numbering
//! (`checkpoint_migrations`): `checkpoints` (one row per checkpoint, the
//! checkpoint as JSONB without its values), `checkpoint_blobs` (one row per
//! channel *version*: a `put` writes only the channels its `new_versions` names, so
//! a step costs what it changed, not the size of the state), and
//! `checkpoint_writes` (pending writes). Values are stored as JSON text with type
//! `json`, which LangGraph's Python saver reads; values it wrote with its default
//! msgpack serializer are refused with [`CheckpointError::Corrupt`] naming the
//! channel, never misread. A database migrated past the versions this crate knows
//! is refused when the saver is created ([`PgError::SchemaTooNew`]). The rows
//! themselves (what a `put` and a `put_writes` store, how they read back) are
//! built by graph-core's [`checkpoint::rows`](graph_core::checkpoint::rows),
//! shared with the SQLite saver.
//!
//! # Append layout (opt-in; Python cannot read it)
//!
//! LangGraph's layout stores every version of a value whole, so a chat thread
//! that grows by two messages per turn rewrites its whole history at every
//! checkpoint: its rows grow quadratically with its turns. Built with
//! [`PostgresSaverBuilder::append_layout`], the saver reports
//! [`Checkpointer::stores_appends`] and stores a list channel that only grew
//! (a reducer that reports its kept prefix, `add_messages` appending) as the
//! items the step appended: a `checkpoint_blobs` row of type
//! `stategraph_append` naming the version it extends (graph-core's
//! [`checkpoint::appended`](graph_core::checkpoint::appended), the format of
//! the SQLite saver's append layout). Once the items appended since the last
//! whole value pass that value's size, the value is stored whole again, so a
//! thread's bytes grow linearly with what it appends. Every read returns whole
//! values (one recursive statement follows a value's chain); pruning keeps the
//! versions a kept version extends. The saver (and its clones) keeps the
//! newest whole value of each appended channel it read or wrote (256 values,
//! 64 MiB at most), matched by version, so reading a thread's latest
//! checkpoint assembles nothing and the next append extends it in place;
//! another process writing the same thread is never hidden by it, as each
//! write's versions are new.
//!
//! **LangGraph's Python `PostgresSaver` cannot read the appended rows.** Keep
//! the default layout for a database Python reads. Every saver of this crate
//! reads both layouts, whichever it writes.
//!
//! # Connections, failures and retries
//!
//! Operations take a connection from a pool (deadpool-postgres) and release it
//! at once; each `put` is one transaction (its blobs and its row, sent in one
//! round trip), each `put_writes` one statement. Every operation is idempotent (a
//! re-put checkpoint is the same row, a blob version is written once, a regular
//! pending write is kept if present and a special one replaced by the same value),
//! so when the connection is lost mid-operation (the server restarts, or
//! `pg_terminate_backend` ends the backend) it is retried on a fresh connection a
//! few times before [`PgError::is_connection_lost`] errors reach the caller. A
//! graph run that does fail that way resumes from its last checkpoint when invoked
//! again on the thread, like any failed run.
//!
//! Each write (`put`, `put_writes`, `put_chain`) runs on a tokio task of its
//! own that the caller awaits: a caller that stops waiting (a cancelled run)
//! does not roll back a write it started, whose step would be lost.
//!
//! # Many workers
//!
//! Any number of processes can use the same database. Two runs of *different*
//! threads never conflict. Two runs of the *same* thread at the same time would
//! both continue from the same checkpoint and fork the thread (the later one's
//! checkpoints would hide the other's), so every run (and `update_state`) takes
//! the thread's lock, a PostgreSQL advisory lock held on a connection of its
//! own, without waiting ([`Checkpointer::begin_run`]): a run of a thread another
//! process is running fails at once with `GraphError::ThreadBusy`. To wait
//! instead, hold [`PostgresSaver::lock_thread`] around the run: a run of a thread
//! whose lock this saver (or a clone of it) holds does not lock again. Locks live
//! in the database, so they work across processes and machines, and the server
//! releases them when a worker dies.
//!
//! A lock can also be lost while its run goes on: the server ends the session
//! (`idle_session_timeout`, `pg_terminate_backend`, a restart or failover) or a
//! proxy drops the idle connection. Two mechanisms make that safe:
//!
//! - A heartbeat pings each lock's connection (every 5 s, or a third of the
//!   server's `idle_session_timeout` if that is shorter, so the server never
//!   ends it for idleness; [`PostgresSaverBuilder::lock_heartbeat`]) and, when
//!   the connection is lost, ends the old session if the server still has it
//!   and takes the lock again on a new one.
//! - Every run holds a **lease**: `begin_run` writes the thread's row of
//!   `stategraph_thread_leases` with the run's owner id (host, process, random)
//!   and a new generation, and every `put` / `put_writes` of the run reads that
//!   row in its own transaction and writes only if the generation is still the
//!   run's. When another worker has taken the thread over (its run has a newer
//!   generation), or the thread was deleted or pruned, the first run's next write
//!   stores nothing and the run stops with `GraphError::LeaseLost`, naming the
//!   thread and the owner; the thread's history never forks.
//!
//! [`Checkpointer::delete_thread`] and [`Checkpointer::prune`] refuse a thread a
//! run holds (`CheckpointError::ThreadBusy`), unless this saver holds its lock
//! through `lock_thread`.

//! # A run queue
//!
//! [`RunQueue`] lets one process submit runs that any worker executes (`SELECT
//! ... FOR UPDATE SKIP LOCKED`), at least once and without applying an input
//! twice; `examples/workers.rs` starts a submitter and several workers.
//!
//! # Retention
//!
//! [`Checkpointer::prune`] deletes old checkpoints of a thread (keep the last N, or
//! those newer than a time) with their writes and the blobs no kept checkpoint
//! refers to.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod lease;
mod lock;
mod ops;
mod queue;
mod schema;
pub mod store;

pub use deadpool_postgres;
pub use error::PgError;
pub use lock::ThreadLock;
pub use queue::{QueuedRun, RunQueue, RunStatus, RUN_ID_METADATA_KEY};
pub use store::{PostgresStore, VectorSearch};
pub use tokio_postgres;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures::future::BoxFuture;
use graph_core::checkpoint::appended::{self, AppendError, Heads, NewRow};
use graph_core::checkpoint::{
    Append, Blob, ChannelVersion, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointTuple, Checkpointer, ListOptions, NameMap, Retention, RunGuard,
    SharedStr, StepPut,
};
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::Socket;

/// The schema version this crate creates and understands: the highest `v` of
/// `checkpoint_migrations` (LangGraph's numbering).
pub const SCHEMA_VERSION: i64 = schema::LATEST;

/// How long a ping of a lock's connection may take before the connection is
/// taken for lost.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often an operation is retried after losing its connection, and the pause
/// before the first retry (doubled each time).
const RETRIES: u32 = 4;
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(50);

/// A [`Checkpointer`] that keeps checkpoints in PostgreSQL (see the
/// [crate docs](crate)).
///
/// Cloning is cheap and shares the connection pools: clone it into
/// `compile_with` and keep a clone for [`lock_thread`](Self::lock_thread).
#[derive(Clone)]
pub struct PostgresSaver {
    pool: Pool,
    locks: Pool,
    held: lock::HeldLocks,
    heartbeat: lock::Heartbeat,
    append_layout: bool,
    /// The newest whole value of each appended channel this saver (or a
    /// clone) read or wrote; see graph-core's `checkpoint::appended`.
    heads: Arc<Mutex<Heads>>,
}

impl fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("pool", &self.pool.status())
            .field("locks", &self.locks.status())
            .field("lock_heartbeat", &self.heartbeat.interval)
            .field("append_layout", &self.append_layout)
            .finish()
    }
}

/// Settings of a [`PostgresSaver`], from [`PostgresSaver::builder`].
#[derive(Debug, Clone)]
pub struct PostgresSaverBuilder {
    config: tokio_postgres::Config,
    max_connections: usize,
    max_thread_locks: usize,
    heartbeat: Duration,
    append_layout: bool,
}

impl PostgresSaverBuilder {
    /// Stores list channels that only grew (a reducer that extends a list,
    /// `add_messages` appending) as the items each checkpoint appended, with
    /// the whole value stored again once the appended bytes pass its size;
    /// default `false`. A chat thread's rows then grow linearly with its
    /// turns instead of quadratically (see the crate docs, "Append layout").
    ///
    /// **LangGraph's Python `PostgresSaver` cannot read the values this
    /// stores** (rows of type `stategraph_append` in `checkpoint_blobs`). Keep
    /// the default for a database Python reads. Every saver of this crate
    /// reads both layouts, whichever it writes.
    pub fn append_layout(mut self, append_layout: bool) -> Self {
        self.append_layout = append_layout;
        self
    }

    /// At most this many connections for checkpoint operations (default 16).
    /// Operations beyond it wait for a free connection.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// At most this many [`ThreadLock`]s held (or awaited) at once by this saver
    /// (default 64). Each holds a connection of its own, apart from the
    /// operations' pool, so that holding locks never starves the runs they
    /// protect.
    pub fn max_thread_locks(mut self, n: usize) -> Self {
        self.max_thread_locks = n.max(1);
        self
    }

    /// How often the connection holding a thread's lock is pinged (default 5 s):
    /// a lost connection is noticed, and replaced, within about this long. The
    /// saver pings more often when the server's `idle_session_timeout` is less
    /// than three times this, so that the server never ends a lock's session
    /// for idleness.
    pub fn lock_heartbeat(mut self, interval: Duration) -> Self {
        self.heartbeat = interval.max(Duration::from_millis(10));
        self
    }

    /// Connects without TLS, then creates or migrates the tables.
    pub async fn connect(self) -> Result<PostgresSaver, PgError> {
        self.connect_with_tls(tokio_postgres::NoTls).await
    }

    /// Connects with the given TLS connector (for example one of
    /// `postgres-native-tls` or `tokio-postgres-rustls`), then creates or migrates
    /// the tables.
    pub async fn connect_with_tls<T>(self, tls: T) -> Result<PostgresSaver, PgError>
    where
        T: MakeTlsConnect<Socket> + Clone + Sync + Send + 'static,
        T::Stream: Sync + Send,
        T::TlsConnect: Sync + Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        let mut config = self.config;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("stategraph");
        }
        let manager_config = ManagerConfig {
            // A connection the server closed is noticed here and replaced.
            recycling_method: RecyclingMethod::Fast,
        };
        let pool = Pool::builder(Manager::from_config(
            config.clone(),
            tls.clone(),
            manager_config.clone(),
        ))
        .max_size(self.max_connections)
        .build()?;
        let locks = Pool::builder(Manager::from_config(config, tls, manager_config))
            .max_size(self.max_thread_locks)
            .build()?;
        let mut saver = PostgresSaver {
            pool,
            locks,
            held: lock::HeldLocks::default(),
            heartbeat: lock::Heartbeat {
                interval: self.heartbeat,
                timeout: HEARTBEAT_TIMEOUT,
            },
            append_layout: self.append_layout,
            heads: Arc::default(),
        };
        saver.migrate().await?;
        if let Some(idle) = saver.idle_session_timeout().await? {
            saver.heartbeat.interval = saver.heartbeat.interval.min(idle / 3);
        }
        Ok(saver)
    }
}

impl PostgresSaver {
    /// Connects to the database at `url` (a `postgres://` URL or a `key=value`
    /// connection string) without TLS, with default pool sizes, and creates or
    /// migrates the tables.
    pub async fn connect(url: &str) -> Result<Self, PgError> {
        Self::builder(url)?.connect().await
    }

    /// Settings for a saver connecting to `url`.
    pub fn builder(url: &str) -> Result<PostgresSaverBuilder, PgError> {
        let config = tokio_postgres::Config::from_str(url).map_err(PgError::Config)?;
        Ok(Self::builder_from_config(config))
    }

    /// Settings for a saver connecting with `config`.
    pub fn builder_from_config(config: tokio_postgres::Config) -> PostgresSaverBuilder {
        PostgresSaverBuilder {
            config,
            max_connections: 16,
            max_thread_locks: 64,
            heartbeat: Duration::from_secs(5),
            append_layout: false,
        }
    }

    /// The pool of the saver's operations, for queries of your own (it may be
    /// used freely; the saver keeps no state on its connections).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn migrate(&self) -> Result<(), PgError> {
        with_retry(|| async {
            let mut client = self.pool.get().await?;
            schema::migrate(&mut client).await?;
            schema::create_own(&mut client, "stategraph_thread_leases", lease::CREATE).await
        })
        .await
    }

    /// The server's `idle_session_timeout` for this saver's sessions, if set
    /// (PostgreSQL 14 and later).
    async fn idle_session_timeout(&self) -> Result<Option<Duration>, PgError> {
        with_retry(|| async {
            let client = self.pool.get().await?;
            let row = client
                .query_opt(
                    "SELECT setting::int8 FROM pg_settings WHERE name = 'idle_session_timeout'",
                    &[],
                )
                .await
                .map_err(PgError::query("cannot read idle_session_timeout"))?;
            let ms: Option<i64> = match row {
                Some(row) => row
                    .try_get(0)
                    .map_err(PgError::query("cannot read idle_session_timeout"))?,
                None => None,
            };
            Ok(ms
                .and_then(|ms| u64::try_from(ms).ok())
                .filter(|&ms| ms > 0)
                .map(Duration::from_millis))
        })
        .await
    }

    /// Waits until no other holder has `thread_id`'s lock, takes it, and returns
    /// the guard (see [`ThreadLock`]). A worker takes it before running a graph
    /// on the thread and releases it after, so that two workers picking up the
    /// same thread run one after the other.
    pub async fn lock_thread(&self, thread_id: &str) -> Result<ThreadLock, PgError> {
        error::check_id("thread id", thread_id)?;
        ThreadLock::acquire(
            &self.locks,
            thread_id,
            true,
            Some(&self.held),
            self.heartbeat,
        )
        .await
        .and_then(|lock| {
            lock.ok_or_else(|| {
                PgError::InvalidInput(format!(
                    "lock of thread `{thread_id}` was not taken while waiting for it"
                ))
            })
        })
    }

    /// Takes `thread_id`'s lock if no one holds it, without waiting; `None` if
    /// someone does.
    pub async fn try_lock_thread(&self, thread_id: &str) -> Result<Option<ThreadLock>, PgError> {
        error::check_id("thread id", thread_id)?;
        ThreadLock::acquire(
            &self.locks,
            thread_id,
            false,
            Some(&self.held),
            self.heartbeat,
        )
        .await
    }

    /// Closes both pools: operations and locks of this saver (and its clones)
    /// fail from now on; connections in use close when they are returned.
    pub fn close(&self) {
        self.pool.close();
        self.locks.close();
    }
}

impl PostgresSaver {
    /// `put_appending`, fenced by a run's lease when `fence` is given (see
    /// `lease.rs`), storing the step's pending `writes` in the same
    /// transaction.
    #[allow(clippy::too_many_arguments)] // one private call path, every argument distinct
    async fn put_fenced(
        &self,
        config: &CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
        writes: &[(String, Vec<(String, Blob)>)],
        fence: Option<&lease::Fence>,
    ) -> Result<CheckpointConfig, CheckpointError> {
        check_config(config)?;
        error::check_id("checkpoint id", &checkpoint.id)?;
        for (task_id, rows) in writes {
            check_writes(rows, task_id)?;
        }
        if !appends.is_empty() && !self.append_layout {
            return Err(CheckpointError::InvalidInput(
                "this PostgresSaver stores whole values (LangGraph's layout); build it with \
                 `PostgresSaver::builder(url)?.append_layout(true)` to store appended values, \
                 or pass whole values to put"
                    .to_owned(),
            ));
        }
        let mut put = ops::put_rows(config, checkpoint, &metadata, &new_versions)?;
        put.blobs.retain(|b| !appends.contains_key(&b.channel));
        {
            // A channel stored whole has no newest appended value any more.
            let mut heads = ops::lock(&self.heads);
            for blob in &put.blobs {
                heads.forget(&config.thread_id, &config.checkpoint_ns, &blob.channel);
            }
        }
        // The appended channels' rows, built once (before any retry).
        let mut typed = Vec::with_capacity(appends.len());
        let mut new_heads = Vec::with_capacity(appends.len());
        for (channel, append) in appends.iter() {
            let Some(version) = new_versions.get(channel.as_str()) else {
                return Err(CheckpointError::InvalidInput(format!(
                    "channel `{channel}` appended to, but it has no new version"
                )));
            };
            let row = self.append_row(config, channel, version, append).await?;
            typed.push(ops::TypedRow {
                channel: channel.clone(),
                version: version.clone(),
                base: append.base.clone(),
                type_: row.type_,
                text: row.text,
            });
            if let Some(head) = row.head {
                new_heads.push((channel.clone(), head));
            }
        }
        let (put, typed) = (&put, &typed);
        with_retry(|| async {
            let mut client = self.pool.get().await?;
            ops::put(&mut client, config, put, typed, writes, fence).await
        })
        .await?;
        let mut heads = ops::lock(&self.heads);
        for (channel, head) in new_heads {
            heads.insert(&config.thread_id, &config.checkpoint_ns, &channel, head);
        }
        Ok(config.at(put.id.clone()))
    }

    /// The row that stores `append` as version `version` of `channel`: its
    /// items, or the whole value once the items appended since the last whole
    /// one would pass that value's size (from the cache, or read back).
    async fn append_row(
        &self,
        config: &CheckpointConfig,
        channel: &SharedStr,
        version: &ChannelVersion,
        append: &Append,
    ) -> Result<NewRow, PgError> {
        let (thread_id, ns, base) = (
            config.thread_id.as_str(),
            config.checkpoint_ns.as_str(),
            append.base.as_str(),
        );
        let refused = |e: AppendError| {
            PgError::InvalidInput(format!(
                "an append to channel `{channel}` of thread `{thread_id}`: {e}"
            ))
        };
        let head = ops::lock(&self.heads).take(thread_id, ns, channel, base);
        // A cached head knows its row (a version's row never changes), which
        // saves a round trip; the put checks that the base is still stored.
        let facts = match &head {
            Some(head) => head.facts,
            None => {
                let facts = with_retry(|| async {
                    let client = self.pool.get().await?;
                    ops::facts(&client, thread_id, ns, channel, base).await
                })
                .await?;
                let Some(facts) = facts else {
                    return Err(PgError::InvalidInput(format!(
                        "version `{base}` of channel `{channel}`, which a put appends to, is \
                         not stored"
                    )));
                };
                facts
            }
        };
        let head = match appended::next_row(facts, head, version, append).map_err(refused)? {
            Ok(row) => return Ok(row),
            Err(head) => head,
        };
        let head = match head {
            Some(head) => head,
            None => {
                with_retry(|| async {
                    let client = self.pool.get().await?;
                    ops::whole_head(&client, thread_id, ns, channel, base, facts).await
                })
                .await?
            }
        };
        appended::whole_row(head, version, append).map_err(refused)
    }

    /// `put_writes`, fenced by a run's lease when `fence` is given.
    /// [`put_fenced`](Self::put_fenced) of `put`, on a task of its own
    /// ([`to_the_end`]); a leased run's write (`fence`) counts among its
    /// writes under way until it ends.
    pub(crate) fn put_to_the_end(
        &self,
        config: &CheckpointConfig,
        put: StepPut,
        fence: Option<(
            lease::Fence,
            tokio_util::task::task_tracker::TaskTrackerToken,
        )>,
    ) -> impl std::future::Future<Output = Result<CheckpointConfig, CheckpointError>> + Send + 'static
    {
        let (saver, config) = (self.clone(), config.clone());
        to_the_end(async move {
            // The write counts as under way (its token) until it ends here.
            saver
                .put_fenced(
                    &config,
                    put.checkpoint,
                    put.metadata,
                    put.new_versions,
                    put.appends,
                    &put.writes,
                    fence.as_ref().map(|(fence, _)| fence),
                )
                .await
        })
    }

    /// [`Checkpointer::put_chain`]'s puts, each a child of the one before,
    /// each fenced by `fence` when given.
    async fn put_chain_fenced(
        &self,
        mut parent: CheckpointConfig,
        puts: Vec<StepPut>,
        fence: Option<&lease::Fence>,
    ) -> Result<CheckpointConfig, CheckpointError> {
        for put in puts {
            parent = self
                .put_fenced(
                    &parent,
                    put.checkpoint,
                    put.metadata,
                    put.new_versions,
                    put.appends,
                    &put.writes,
                    fence,
                )
                .await?;
        }
        Ok(parent)
    }

    async fn put_writes_fenced(
        &self,
        config: &CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &str,
        fence: Option<&lease::Fence>,
    ) -> Result<(), CheckpointError> {
        check_config(config)?;
        check_writes(&writes, task_id)?;
        let writes = &writes;
        Ok(with_retry(|| async {
            let client = self.pool.get().await?;
            ops::put_writes(&client, config, writes, task_id, fence).await
        })
        .await?)
    }
}

/// Refuses a config whose ids PostgreSQL cannot store or index (see
/// [`PgError::InvalidId`]).
pub(crate) fn check_config(config: &CheckpointConfig) -> Result<(), PgError> {
    error::check_id("thread id", &config.thread_id)?;
    if config.checkpoint_ns.contains('\0') {
        error::check_id("checkpoint namespace", &config.checkpoint_ns)?;
    }
    if let Some(id) = &config.checkpoint_id {
        error::check_id("checkpoint id", id)?;
    }
    Ok(())
}

/// Refuses the task id and channel names of a `put_writes` that PostgreSQL
/// cannot store.
pub(crate) fn check_writes(writes: &[(String, Blob)], task_id: &str) -> Result<(), PgError> {
    error::check_id("task id", task_id)?;
    for (channel, _) in writes {
        if channel.contains('\0') {
            error::check_id("channel name", channel)?;
        }
    }
    Ok(())
}

/// Runs a write on a task of its own and waits for it: a caller that stops
/// waiting (a cancelled run, its future dropped; a stream its reader dropped
/// after the final values) does not cancel a write it has started, whose
/// transaction would otherwise be rolled back with the step it stores lost.
/// LangGraph's loop, too, waits for the saves it started when it exits.
/// Without a tokio runtime (which tokio-postgres needs anyway) the write runs
/// in the caller's future.
pub(crate) async fn to_the_end<T: Send + 'static>(
    write: impl std::future::Future<Output = Result<T, CheckpointError>> + Send + 'static,
) -> Result<T, CheckpointError> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return write.await;
    };
    match runtime.spawn(write).await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(CheckpointError::Storage(Box::new(e))),
    }
}

/// Runs `op`, again on a fresh connection when it lost its connection (every
/// operation of the saver is idempotent, so a retry cannot store anything twice).
async fn with_retry<T, F, Fut>(mut op: F) -> Result<T, PgError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, PgError>>,
{
    let mut delay = FIRST_RETRY_DELAY;
    let mut attempt = 0;
    loop {
        match op().await {
            Err(e) if e.is_connection_lost() && attempt < RETRIES => {
                attempt += 1;
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            other => return other,
        }
    }
}

impl Checkpointer for PostgresSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        Box::pin(async move {
            check_config(config)?;
            Ok(with_retry(|| async {
                let client = self.pool.get().await?;
                ops::get_tuple(&client, &self.heads, config).await
            })
            .await?)
        })
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        Box::pin(async move {
            if let Some(config) = config {
                check_config(config)?;
            }
            Ok(with_retry(|| async {
                let client = self.pool.get().await?;
                ops::list(&client, &self.heads, config, options).await
            })
            .await?)
        })
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        self.put_with_writes(
            config,
            Vec::new(),
            checkpoint,
            metadata,
            new_versions,
            NameMap::new(),
        )
    }

    /// Whether the saver was built with the append layout
    /// ([`PostgresSaverBuilder::append_layout`]).
    fn stores_appends(&self) -> bool {
        self.append_layout
    }

    fn put_appending<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        self.put_with_writes(
            config,
            Vec::new(),
            checkpoint,
            metadata,
            new_versions,
            appends,
        )
    }

    /// Stores the writes and the checkpoint in one transaction, its queries
    /// sent together: one round trip.
    fn put_with_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Vec<(String, Blob)>)>,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        let put = StepPut::new(writes, checkpoint, metadata, new_versions, appends);
        Box::pin(self.put_to_the_end(config, put, None))
    }

    /// The checkpoints one after the other, on one task: a run cancelled
    /// once it has handed them over still stores all of them.
    fn put_chain<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        puts: Vec<StepPut>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        let (saver, config) = (self.clone(), config.clone());
        Box::pin(to_the_end(async move {
            saver.put_chain_fenced(config, puts, None).await
        }))
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let (saver, config, task_id) = (self.clone(), config.clone(), task_id.to_owned());
        Box::pin(to_the_end(async move {
            saver
                .put_writes_fenced(&config, writes, &task_id, None)
                .await
        }))
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            error::check_id("thread id", thread_id)?;
            ops::lock(&self.heads).forget_thread(thread_id);
            Ok(with_retry(|| async {
                let mut client = self.pool.get().await?;
                ops::delete_thread(&mut client, thread_id, self.held.holds(thread_id)).await
            })
            .await?)
        })
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        Box::pin(async move {
            error::check_id("thread id", thread_id)?;
            ops::lock(&self.heads).forget_thread(thread_id);
            Ok(with_retry(|| async {
                let mut client = self.pool.get().await?;
                ops::prune(
                    &mut client,
                    thread_id,
                    retention,
                    self.held.holds(thread_id),
                )
                .await
            })
            .await?)
        })
    }

    /// Takes the thread's advisory lock (the lock of
    /// [`lock_thread`](PostgresSaver::lock_thread)) without waiting, for the
    /// length of the run: a run of a thread that another process (or another
    /// saver) is running fails at once with `GraphError::ThreadBusy`. A run of a
    /// thread whose lock this saver or a clone holds through `lock_thread` runs
    /// under that lock. The lock is released when the run returns, and by the
    /// server if the process dies.
    ///
    /// Then grants the run the thread's lease (a new generation in
    /// `stategraph_thread_leases`), which every write of the run checks in its
    /// own transaction: a run that lost its lock (its connection was ended) and
    /// whose thread another worker has started since fails at its next write
    /// with `CheckpointError::LeaseLost` and stores nothing more.
    fn begin_run<'a>(
        &'a self,
        thread_id: &'a str,
        _checkpoint_ns: &'a str,
    ) -> BoxFuture<'a, Result<RunGuard, CheckpointError>> {
        Box::pin(async move {
            error::check_id("thread id", thread_id)?;
            let owner = graph_core::checkpoint::lease_owner_id();
            // Under this saver's `lock_thread`, the run takes no lock of its own.
            let (lock_state, own_lock) = match self.held.get(thread_id) {
                Some(state) => {
                    if let Some(reason) = state.lost() {
                        return Err(CheckpointError::LeaseLost {
                            thread_id: thread_id.to_owned(),
                            owner,
                            reason,
                        });
                    }
                    (state, None)
                }
                None => {
                    let lock =
                        ThreadLock::acquire(&self.locks, thread_id, false, None, self.heartbeat)
                            .await?;
                    let Some(lock) = lock else {
                        return Err(CheckpointError::ThreadBusy {
                            thread_id: thread_id.to_owned(),
                        });
                    };
                    let Some(state) = lock.state().cloned() else {
                        return Err(PgError::InvalidInput(format!(
                            "the lock of thread `{thread_id}` was released while it was taken"
                        ))
                        .into());
                    };
                    (state, Some(lock))
                }
            };
            let granted = with_retry(|| async {
                let client = self.pool.get().await?;
                ops::grant(&client, thread_id, &owner).await
            })
            .await;
            let (generation, previous) = match granted {
                Ok(granted) => granted,
                Err(e) => {
                    if let Some(lock) = own_lock {
                        drop(lock.unlock().await);
                    }
                    return Err(e.into());
                }
            };
            if let Some(previous) = previous {
                tracing::warn!(
                    thread_id,
                    previous_owner = %previous,
                    "a run starts on a thread whose last run did not release it (that run \
                     crashed, was cancelled, or lost its lock); it is fenced out from now on"
                );
            }
            let fence = lease::Fence {
                thread_id: thread_id.to_owned(),
                owner,
                generation,
            };
            let in_flight = tokio_util::task::TaskTracker::new();
            let writer = Arc::new(lease::LeasedSaver {
                saver: self.clone(),
                fence: fence.clone(),
                lock: lock_state,
                in_flight: in_flight.clone(),
            });
            let saver = self.clone();
            Ok(RunGuard::new(move || async move {
                // The run's writes under way first (a cancelled run's own
                // continue to their end): removing the row fences them out.
                in_flight.close();
                in_flight.wait().await;
                // The row first, then the lock (a run that starts in between
                // would only replace the row). On failure the row stays until
                // the next run replaces it, and the lock's connection is closed
                // instead, which releases it too.
                drop(
                    with_retry(|| async {
                        let client = saver.pool.get().await?;
                        ops::release(&client, &fence).await
                    })
                    .await,
                );
                if let Some(lock) = own_lock {
                    drop(lock.unlock().await);
                }
            })
            .with_writer(writer))
        })
    }
}
