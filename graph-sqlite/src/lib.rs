//! A SQLite checkpointer for [stategraph](https://docs.rs/stategraph), sharing its
//! database format with LangGraph's Python `langgraph-checkpoint-sqlite`.
//!
//! Users reach this crate as `stategraph::sqlite` (feature `sqlite`, on by default).
//!
//! [`SqliteSaver`] stores checkpoints in one SQLite file (or in memory) through
//! rusqlite with a bundled SQLite: WAL journal, one transaction per `put`, and a
//! `checkpoint_migrations` table so a database written by a newer version is
//! refused instead of misread.
//!
//! # Layout: LangGraph's tables, values stored once per version
//!
//! LangGraph's SQLite saver serialises the *whole* checkpoint, every channel
//! value included, into one `checkpoints` row per step. A thread with a long
//! message history therefore rewrites that history at every step: O(state size)
//! per step, in CPU and in bytes written. stategraph's savers promise
//! O(changed channels) instead, so this crate stores:
//!
//! - `checkpoint_rows`: LangGraph's `checkpoints` table under another name, one row
//!   per checkpoint. Rows written here hold the checkpoint with an empty
//!   `channel_values` (`type = 'json'`); rows written by Python hold every value
//!   (`'msgpack'`).
//! - `checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, blob)`: one
//!   row per channel *version*, written only by the `put` whose `new_versions`
//!   names it (the layout of LangGraph's Postgres saver). A value unchanged for a
//!   hundred steps is stored once.
//! - `writes`: LangGraph's table, unchanged (with `task_path`, as in
//!   `langgraph-checkpoint-sqlite` 3.x).
//! - `checkpoints`: a **view** with exactly the columns of LangGraph's table. For
//!   our rows it assembles `channel_values` from `checkpoint_blobs` at the versions
//!   the checkpoint names, using SQLite's JSON functions; Python's rows pass
//!   through. `INSTEAD OF` triggers route Python's `INSERT OR REPLACE` and `DELETE`
//!   on it to `checkpoint_rows`, so Python's `SqliteSaver` can list, read, write and
//!   delete threads in a database this crate created, unmodified. (The view needs
//!   the JSON functions built into SQLite 3.38 and later, in the SQLite that
//!   Python's `sqlite3` module links.)
//!
//! The rows themselves (what a `put` and a `put_writes` store, how they read
//! back) are built by graph-core's
//! [`checkpoint::rows`](graph_core::checkpoint::rows), shared with the Postgres
//! saver.
//!
//! Opening a database that Python created migrates it in place (its `checkpoints`
//! table is renamed to `checkpoint_rows` and the view created), keeping every row;
//! Python keeps working with it afterwards.
//!
//! The cost of this choice: a `put` writes the changed values plus a row with the
//! channel versions and `versions_seen` (O(channels) small strings, as in every
//! LangGraph saver); reading a checkpoint joins its versions to the blobs (one
//! primary-key lookup per channel), and Python's reads pay for assembling the JSON
//! in SQLite. Versions of values that no checkpoint references any more are kept
//! until the thread is deleted or pruned (`Checkpointer::prune`).
//!
//! Measured with `examples/put_cost.rs` (release build, file database, 2-core
//! machine): 100 puts on a 100-field state with 1 KB per field take about 12 ms
//! when one field changes per put (~120 µs each, file 1.6 MiB) and about 220 ms
//! when every field changes (~2.2 ms each, file 15 MiB); the first case is what a
//! step of a graph usually looks like. LangGraph's Python saver writes the whole
//! state at every step: the same one-field-per-put run takes it ~650 µs per put
//! and 11 MiB. Reading one checkpoint of that state back takes ~0.5 ms.
//!
//! Values are JSON text (`type = 'json'`, which Python's serializer reads). Values
//! that Python wrote as msgpack are converted to JSON when read; Python objects
//! without a JSON form (datetimes, pydantic models, ...) make the read fail with
//! [`CheckpointError::Corrupt`] naming the thread, checkpoint, channel and Python
//! type. LangGraph's `Interrupt` becomes the object of its fields (`value`, `id`,
//! ...) and `Send` becomes `{"node", "arg"}`, the form stategraph stores sends in.
//!
//! # Append layout (opt-in; Python cannot read it)
//!
//! LangGraph's layout stores every version of a value whole, so a chat thread
//! that grows by two messages per turn rewrites its whole history at every
//! checkpoint: its file grows quadratically with its turns (500 turns of
//! ~400-byte messages: about 250 MB). Opened with
//! [`SqliteSaverBuilder::append_layout`], the saver reports
//! [`Checkpointer::stores_appends`] and stores a list channel that only grew
//! (a reducer that reports its kept prefix, `add_messages` appending) as the
//! items the step appended: a `checkpoint_blobs` row of type
//! `stategraph_append` naming the version it extends. Once the items appended
//! since the last whole value pass that value's size, the value is stored
//! whole again, so a thread's bytes grow linearly with what it appends. Every
//! read (`get_tuple`, `list`, a graph's history and resume) returns whole
//! values; pruning keeps the versions a kept version extends.
//!
//! A turn costs what it appended, in time too: the saver keeps the newest
//! whole value of each appended channel it read or wrote (a bounded cache per
//! saver, 256 values and 64 MiB at most), so reading a thread's latest
//! checkpoint assembles nothing and the next append extends that value in
//! place. The cache answers only for the exact version it holds, and versions
//! are unique per write (LangGraph's carry a random part), so another
//! connection or process writing the same file never makes a saver return a
//! stale value; other versions (the history, a fork) are assembled from their
//! rows. A thread that LangGraph's Python saver started (its values are inside
//! its checkpoint rows) continues in this layout: the first append stores the
//! list whole, and the turns after it append to that.
//!
//! **LangGraph's Python `SqliteSaver` cannot read the appended rows**, and it
//! does not fail either: the `checkpoints` view leaves them out, so Python
//! sees those channels as having no value (a chat without its messages).
//! Keep the default layout for a database Python reads.
//! Every saver of this crate reads both layouts, whichever it writes; the
//! default stays Python-readable.
//!
//! ```
//! use graph_core::checkpoint::Checkpointer;
//! use graph_sqlite::SqliteSaver;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let saver = SqliteSaver::builder(dir.path().join("chat.sqlite"))
//!     .append_layout(true)
//!     .open()
//!     .await?;
//! assert!(saver.stores_appends());
//! # Ok(())
//! # }
//! ```
//!
//! # Threads and blocking
//!
//! rusqlite is blocking. Each saver owns one connection on a thread of its own,
//! and its async methods send that thread a job and await the answer: no executor
//! thread ever waits on SQLite, no particular async runtime is required, and
//! database work is serialised (SQLite serialises writers anyway). Reads therefore
//! queue behind writes of the same saver. A job is queued when the method is
//! called, so operations run in call order even if their futures are polled in
//! another order, and dropping a future does not cancel its operation.
//!
//! A run costs few round trips to that thread: taking the thread's lease and
//! reading its checkpoint are one job ([`Checkpointer::begin_run_and_load`]),
//! a step's pending writes and its checkpoint one transaction
//! ([`Checkpointer::put_with_writes`]), checkpoints with no node run between
//! them one transaction ([`Checkpointer::put_chain`]: under durability `sync`
//! a run's `input` and `__start__` checkpoints, and its last checkpoint with
//! the end of its lease, see [`RunGuard::release_after`]), and after a job the thread looks for
//! the next one for 50 µs before it sleeps (on a machine with more than one
//! CPU), since a run's next call usually follows within that time and waking
//! a sleeping thread costs more than the wait.
//!
//! # One writer per thread
//!
//! Several savers may open one file, in one process or in several. Each run
//! (and `update_state`) of a thread holds the thread's lease, a row of
//! `stategraph_thread_leases` written in a `BEGIN IMMEDIATE` transaction with
//! the run's owner id, a generation that is never reused, an expiry and (on
//! Linux) who holds it: boot id, process id and process start time. Another run
//! of the thread finds a live lease and fails at once with `GraphError::ThreadBusy`.
//! The saver's thread renews the leases of its runs every third of the lease
//! time ([`SqliteSaverBuilder::lease_ttl`], default 30 s); a lease whose holder
//! died on this machine is free at once, one held elsewhere once it expires.
//! Every write of a run checks its lease in the write's own transaction: a run
//! whose lease was given to another (it was stopped for longer than the lease
//! time) or whose thread was deleted stores nothing more and fails with
//! `GraphError::LeaseLost`, so a thread's history never forks.
//! [`Checkpointer::delete_thread`] and [`Checkpointer::prune`] refuse a thread
//! a run holds ([`CheckpointError::ThreadBusy`]).
//!
//! # Databases this crate does not own
//!
//! [`SqliteSaver::open`] looks at the tables before it writes anything: a file
//! whose `checkpoints`, `writes` or `checkpoint_*` tables are neither this
//! crate's nor LangGraph's (another program's, or LangGraph's layout before
//! 0.2) is refused with [`CheckpointError::ForeignSchema`] naming the table, and
//! left exactly as it was. Tables of other names are left alone.
//! [`SqliteSaver::open_read_only`] reads a database (this crate's, or
//! LangGraph's without migrating it) and never writes to it.
//!
//! # Durability
//!
//! Each `put`, `put_writes`, `put_with_writes` (a step's writes and its
//! checkpoint together) and `delete_thread` is one transaction. The database
//! runs with `synchronous = NORMAL`, the usual setting for WAL: a committed
//! transaction survives a crash of the process; an OS crash or power cut can lose
//! the last few commits but never corrupts the file.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod append;
mod decode;
mod encode;
mod journal;
mod lease;
mod ops;
mod schema;
pub mod store;
mod worker;

use futures::future::BoxFuture;
use graph_core::checkpoint::appended::Heads;
use graph_core::checkpoint::{
    Append, Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError,
    CheckpointMetadata, CheckpointTuple, Checkpointer, ListOptions, NameMap, Retention, RunGuard,
    StepPut,
};
use schema::Tables;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use worker::Worker;

pub use store::SqliteStore;

/// The schema version this crate creates and reads (rows of `checkpoint_migrations`).
pub const SCHEMA_VERSION: i64 = schema::LATEST;

/// A [`Checkpointer`] that keeps checkpoints in a SQLite database, in the format of
/// LangGraph's `langgraph-checkpoint-sqlite` (see the [crate docs](crate) for the
/// layout).
///
/// ```
/// use graph_core::checkpoint::{CheckpointConfig, Checkpointer, ListOptions};
/// use graph_sqlite::SqliteSaver;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let saver = SqliteSaver::open(dir.path().join("checkpoints.sqlite")).await?;
/// // Nothing stored yet for this thread.
/// let thread = CheckpointConfig::thread("conversation-1");
/// assert!(saver.get_tuple(&thread).await?.is_none());
/// assert!(saver.list(Some(&thread), &ListOptions::default()).await?.is_empty());
/// saver.close().await?;
/// # Ok(())
/// # }
/// ```
pub struct SqliteSaver {
    worker: Worker,
    /// The newest whole value of each appended channel this connection read
    /// or wrote (see `append.rs`); used by jobs on the connection's thread.
    heads: Arc<Mutex<Heads>>,
    name: String,
    tables: Tables,
    read_only: bool,
    lease_ttl: Duration,
    append_layout: bool,
}

impl fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteSaver")
            .field("database", &self.name)
            .field("read_only", &self.read_only)
            .field("append_layout", &self.append_layout)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`SqliteSaver`], from [`SqliteSaver::builder`].
#[derive(Debug, Clone)]
pub struct SqliteSaverBuilder {
    path: Option<PathBuf>,
    read_only: bool,
    lease_ttl: Duration,
    append_layout: bool,
}

impl SqliteSaverBuilder {
    /// Stores list channels that only grew (a reducer that extends a list,
    /// `add_messages` appending) as the items each checkpoint appended, with
    /// the whole value stored again once the appended bytes pass its size;
    /// default `false`. A chat thread's file then grows linearly with its
    /// turns instead of quadratically (see the crate docs, "Append layout").
    ///
    /// **LangGraph's Python `SqliteSaver` cannot read the values this stores**
    /// (rows of type `stategraph_append`): it sees those channels as having no
    /// value, without an error. Keep the default for a database Python reads.
    /// Every saver of this crate reads both layouts, whichever it writes.
    pub fn append_layout(mut self, append_layout: bool) -> Self {
        self.append_layout = append_layout;
        self
    }

    /// How long a run's hold on its thread lasts without being renewed (default
    /// 30 s). The saver renews the leases of its runs every third of it. Another
    /// process may take the thread of a run whose process stopped (was killed
    /// on another machine, or suspended) once this much time has passed; a
    /// process that died on the same machine frees its threads at once.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.max(Duration::from_millis(30));
        self
    }

    /// Opens the database without writing to it: no tables are created or
    /// migrated, and every write (a run, `update_state`, `put`, `delete_thread`,
    /// `prune`) fails with [`CheckpointError::ReadOnly`]. A database that
    /// LangGraph's Python saver wrote is read as it is, without migrating it.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Opens (or, unless read-only, creates) the database.
    pub async fn open(self) -> Result<SqliteSaver, CheckpointError> {
        let append_layout = self.append_layout;
        let (name, read_only, ttl) = match &self.path {
            Some(path) => (path.display().to_string(), self.read_only, self.lease_ttl),
            None => (":memory:".to_owned(), false, self.lease_ttl),
        };
        let (ready, tables) = tokio::sync::oneshot::channel();
        let worker = Worker::start(name.clone(), ttl, {
            let name = name.clone();
            let path = self.path;
            move || {
                let (conn, found) = connect(path.as_deref(), &name, read_only)?;
                let _ = ready.send(found);
                Ok(conn)
            }
        })
        .await?;
        let tables = tables.await.map_err(|_| {
            storage_msg(format!(
                "the SQLite thread of `{name}` stopped while opening"
            ))
        })?;
        Ok(SqliteSaver {
            worker,
            heads: Arc::default(),
            name,
            tables,
            read_only,
            lease_ttl: ttl,
            append_layout,
        })
    }
}

/// Opens the connection and checks (and, writable, migrates) its tables.
fn connect(
    path: Option<&Path>,
    name: &str,
    read_only: bool,
) -> Result<(rusqlite::Connection, Tables), CheckpointError> {
    use rusqlite::OpenFlags;
    let Some(path) = path else {
        let mut conn = rusqlite::Connection::open_in_memory()
            .map_err(|e| storage("cannot open an in-memory database".to_owned(), e))?;
        schema::prepare(&mut conn, name)?;
        return Ok((conn, Tables::OURS));
    };
    if read_only {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(path, flags)
            .map_err(|e| storage(format!("cannot open `{name}` read-only"), e))?;
        let tables = schema::prepare_read_only(&conn, name)?;
        return Ok((conn, tables));
    }
    let mut conn = rusqlite::Connection::open(path)
        .map_err(|e| storage(format!("cannot open `{name}`"), e))?;
    schema::prepare(&mut conn, name)?;
    Ok((conn, Tables::OURS))
}

impl SqliteSaver {
    /// Opens (or creates) the database at `path`, creating or migrating its tables.
    ///
    /// A database written by LangGraph's Python saver is migrated in place, keeping
    /// its rows. A database from a newer version of this crate is refused with
    /// [`CheckpointError::Unsupported`], and one whose `checkpoints` or `writes`
    /// tables are neither this crate's nor LangGraph's (another program's, or
    /// LangGraph's layout before 0.2) with [`CheckpointError::ForeignSchema`],
    /// both before anything is written to it.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        Self::builder(path).open().await
    }

    /// Opens the database at `path` to read it, without writing anything (see
    /// [`SqliteSaverBuilder::read_only`]): for inspecting a database this
    /// process may not (or should not) change.
    pub async fn open_read_only(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        Self::builder(path).read_only(true).open().await
    }

    /// A fresh database in memory, gone when the saver is dropped.
    pub async fn in_memory() -> Result<Self, CheckpointError> {
        SqliteSaverBuilder {
            path: None,
            read_only: false,
            lease_ttl: lease::DEFAULT_TTL,
            append_layout: false,
        }
        .open()
        .await
    }

    /// Settings for a saver of the database at `path`.
    pub fn builder(path: impl AsRef<Path>) -> SqliteSaverBuilder {
        SqliteSaverBuilder {
            path: Some(path.as_ref().to_path_buf()),
            read_only: false,
            lease_ttl: lease::DEFAULT_TTL,
            append_layout: false,
        }
    }

    /// Waits for pending operations, then closes the database, reporting any error.
    /// (Dropping the saver also closes it, in the background, once the runs
    /// using it have ended.)
    pub async fn close(self) -> Result<(), CheckpointError> {
        self.worker.close().await
    }

    /// Another handle on the same connection (for a run's writer).
    fn handle(&self) -> SqliteSaver {
        SqliteSaver {
            worker: self.worker.clone(),
            heads: Arc::clone(&self.heads),
            name: self.name.clone(),
            tables: self.tables,
            read_only: self.read_only,
            lease_ttl: self.lease_ttl,
            append_layout: self.append_layout,
        }
    }

    /// Refuses appended values unless the saver uses the append layout.
    fn accepts(&self, appends: &NameMap<Append>) -> Result<(), CheckpointError> {
        if appends.is_empty() || self.append_layout {
            return Ok(());
        }
        Err(CheckpointError::InvalidInput(format!(
            "the SQLite saver of `{}` stores whole values (LangGraph's layout); open it \
             with `SqliteSaver::builder(path).append_layout(true)` to store appended values, \
             or pass whole values to put",
            self.name
        )))
    }

    /// Refuses `operation` on a read-only saver.
    fn writable(&self, operation: &'static str) -> Result<(), CheckpointError> {
        if self.read_only {
            return Err(CheckpointError::ReadOnly {
                saver: format!("the SQLite saver of `{}`", self.name),
                operation,
            });
        }
        Ok(())
    }
}

impl Checkpointer for SqliteSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        let config = config.clone();
        let tables = self.tables;
        let heads = Arc::clone(&self.heads);
        Box::pin(
            self.worker
                .run(move |conn| ops::get_tuple(conn, tables, &mut append::lock(&heads), &config)),
        )
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        let config = config.cloned();
        let options = options.clone();
        let tables = self.tables;
        let heads = Arc::clone(&self.heads);
        Box::pin(self.worker.run(move |conn| {
            ops::list(
                conn,
                tables,
                &mut append::lock(&heads),
                config.as_ref(),
                &options,
            )
        }))
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        self.put_appending(config, checkpoint, metadata, new_versions, NameMap::new())
    }

    /// Whether the saver was opened with the append layout
    /// ([`SqliteSaverBuilder::append_layout`]).
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

    /// Stores the writes and the checkpoint in one transaction.
    fn put_with_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Vec<(String, Blob)>)>,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        appends: NameMap<Append>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        // A chain of one: the same transaction and checks.
        let put = StepPut::new(writes, checkpoint, metadata, new_versions, appends);
        self.put_chain(config, vec![put])
    }

    /// Stores the whole chain in one transaction.
    fn put_chain<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        puts: Vec<StepPut>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        if let Err(e) = self
            .writable("store a checkpoint")
            .and_then(|()| puts.iter().try_for_each(|put| self.accepts(&put.appends)))
        {
            return Box::pin(std::future::ready(Err(e)));
        }
        let config = config.clone();
        let heads = Arc::clone(&self.heads);
        Box::pin(self.worker.run(move |conn| {
            ops::put_chain(conn, &mut append::lock(&heads), &config, puts, None, false)
        }))
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        if let Err(e) = self.writable("store pending writes") {
            return Box::pin(std::future::ready(Err(e)));
        }
        let config = config.clone();
        let task_id = task_id.to_owned();
        Box::pin(
            self.worker
                .run(move |conn| ops::put_writes(conn, &config, &writes, &task_id, None)),
        )
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        if let Err(e) = self.writable("delete a thread") {
            return Box::pin(std::future::ready(Err(e)));
        }
        let thread_id = thread_id.to_owned();
        let heads = Arc::clone(&self.heads);
        Box::pin(
            self.worker
                .run(move |conn| ops::delete_thread(conn, &mut append::lock(&heads), &thread_id)),
        )
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        if let Err(e) = self.writable("prune a thread") {
            return Box::pin(std::future::ready(Err(e)));
        }
        let thread_id = thread_id.to_owned();
        let heads = Arc::clone(&self.heads);
        Box::pin(
            self.worker.run(move |conn| {
                ops::prune(conn, &mut append::lock(&heads), &thread_id, retention)
            }),
        )
    }

    /// Grants the run the thread's lease (see the crate docs, "One writer per
    /// thread"): another run of the thread, from another saver on this file or
    /// another process, fails with [`CheckpointError::ThreadBusy`] until this
    /// one ends; the run's writes check, in their own transaction, that it still
    /// holds the thread, and fail with [`CheckpointError::LeaseLost`] if not.
    fn begin_run<'a>(
        &'a self,
        thread_id: &'a str,
        _checkpoint_ns: &'a str,
    ) -> BoxFuture<'a, Result<RunGuard, CheckpointError>> {
        Box::pin(async move { Ok(self.begin(thread_id, None).await?.0) })
    }

    /// Takes the lease and reads the checkpoint in one job on the saver's
    /// thread: one round trip.
    fn begin_run_and_load<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<(RunGuard, Option<CheckpointTuple>), CheckpointError>> {
        Box::pin(async move {
            let (guard, loaded) = self.begin(&config.thread_id, Some(config.clone())).await?;
            Ok((guard, loaded.flatten()))
        })
    }
}

impl SqliteSaver {
    /// A run's lease on `thread_id` (see [`Checkpointer::begin_run`]), and,
    /// with `load`, that checkpoint read right after the lease was taken, in
    /// the same job (`Some(None)`: there is none).
    async fn begin(
        &self,
        thread_id: &str,
        load: Option<CheckpointConfig>,
    ) -> Result<(RunGuard, Option<Option<CheckpointTuple>>), CheckpointError> {
        self.writable("run a graph")?;
        let owner = graph_core::checkpoint::lease_owner_id();
        let ttl = self.lease_ttl;
        let (tables, heads) = (self.tables, Arc::clone(&self.heads));
        // A run cancelled while it waits here (its future dropped) gives the
        // lease back: at once, on the saver's thread, when the answer finds
        // no one waiting; else the answer's `Release` is dropped unreceived
        // and queues it. Either way the thread is not left held until the
        // lease expires.
        let taken = {
            let (thread_id, owner) = (thread_id.to_owned(), owner.clone());
            let worker = self.worker.clone();
            self.worker
                .run_or_undo(
                    move |conn| {
                        let Some(generation) = lease::acquire(conn, &thread_id, &owner, ttl)?
                        else {
                            return Ok(None);
                        };
                        let release = lease::Release {
                            worker,
                            thread_id,
                            generation,
                            done: false,
                        };
                        let Some(config) = load else {
                            return Ok(Some((release, None)));
                        };
                        match ops::get_tuple(conn, tables, &mut append::lock(&heads), &config) {
                            Ok(tuple) => Ok(Some((release, Some(tuple)))),
                            Err(e) => {
                                // The run does not start: its lease goes at once.
                                release.release_on(conn);
                                Err(e)
                            }
                        }
                    },
                    |conn, taken| {
                        if let Some((release, _)) = taken {
                            release.release_on(conn);
                        }
                    },
                )
                .await?
        };
        let Some((release, loaded)) = taken else {
            return Err(CheckpointError::ThreadBusy {
                thread_id: thread_id.to_owned(),
            });
        };
        let generation = release.generation;
        let lost = Arc::new(lease::Lost::default());
        self.worker.hold(lease::Held {
            thread_id: thread_id.to_owned(),
            generation,
            lost: Arc::clone(&lost),
        });
        let writer = Arc::new(lease::LeasedSaver {
            saver: self.handle(),
            fence: lease::Fence {
                thread_id: thread_id.to_owned(),
                owner,
                generation,
                ttl,
            },
            lost,
        });
        let end = Arc::clone(&writer);
        Ok((
            RunGuard::storing(move |last| release.finish_storing(end, last)).with_writer(writer),
            loaded,
        ))
    }
}

/// A storage failure with what was being done.
#[derive(Debug)]
pub(crate) struct StorageError {
    pub(crate) context: String,
    pub(crate) source: Option<rusqlite::Error>,
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.context),
            None => f.write_str(&self.context),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

pub(crate) fn storage(context: String, source: rusqlite::Error) -> CheckpointError {
    CheckpointError::Storage(Box::new(StorageError {
        context,
        source: Some(source),
    }))
}

pub(crate) fn storage_msg(context: impl Into<String>) -> CheckpointError {
    CheckpointError::Storage(Box::new(StorageError {
        context: context.into(),
        source: None,
    }))
}

/// Entry points of the cargo-fuzz targets in `fuzz/`; not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    /// Decodes a stored `(type, bytes)` pair as reading a row does.
    pub fn decode_stored(
        type_: Option<&str>,
        bytes: &[u8],
    ) -> Result<graph_core::checkpoint::Blob, String> {
        crate::decode::typed_to_blob(type_, crate::decode::Stored::Bytes(bytes))
            .map_err(|e| e.to_string())
    }
}
