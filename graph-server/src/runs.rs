//! Runs: queued in the database, started by a worker one per thread at a
//! time, their events kept for the clients that stream or join them.
//!
//! With SQLite one process owns the file and every run is live here. With
//! PostgreSQL any server process may execute a run: the one a client talks to
//! takes the run itself when it can (a stream or a `wait`), else the run goes
//! to whichever process claims it first, and clients elsewhere follow it
//! through its row (`wait`, `join`) — see `db/postgres.rs` for the queue.

use crate::auth::Caller;
#[cfg(feature = "postgres")]
use crate::db::is_final;
use crate::db::{cancelled_outcome, new_id, now, Db, RunRow, SqliteDb};
use crate::error::{run_error_json, ApiError};
use crate::graph::{interrupts_of, pending_interrupts, RunInput, ServedGraph, WireEvent};
use crate::wire::{MultitaskStrategy, OnCompletion, RunCreate};
use futures::StreamExt;
use graph_core::checkpoint::{CheckpointConfig, Checkpointer, ListOptions};
use graph_core::{Durability, RunConfig};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// How a run is cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelAction {
    /// Stop it; its checkpoints stay (status `interrupted`).
    Interrupt,
    /// Stop it and delete it with its checkpoints.
    Rollback,
}

/// A served graph under its assistant id.
pub(crate) struct Assistant {
    pub id: String,
    pub graph_id: String,
    pub graph: Arc<dyn ServedGraph>,
    pub created_at: String,
}

impl Assistant {
    pub(crate) fn to_json(&self) -> Value {
        let mut metadata = Map::new();
        metadata.insert("created_by".into(), "system".into());
        json!(crate::wire::Assistant {
            assistant_id: &self.id,
            graph_id: &self.graph_id,
            config: Map::new(),
            context: Map::new(),
            metadata,
            name: &self.graph_id,
            created_at: &self.created_at,
            updated_at: &self.created_at,
            version: 1,
            description: None,
        })
    }
}

/// A run this process knows of: its events so far and how it ended.
pub(crate) struct LiveRun {
    /// How many events earlier attempts (in other processes) had: the id of
    /// this attempt's first event is `first + 1`.
    first: usize,
    events: Mutex<Vec<WireEvent>>,
    /// With PostgreSQL, where each event also goes (with its id) to be stored
    /// for the clients of other processes; closed when the run ends.
    sink: Mutex<Option<EventSink>>,
    /// How many events there are, and whether the run is over.
    progress: watch::Sender<(usize, bool)>,
    cancel: watch::Sender<Option<CancelAction>>,
    /// What `wait` answers: the final values, or `{"__error__": ..}`; `None`
    /// when the run ended here without an outcome (handed over to another
    /// process).
    outcome: Mutex<Option<Value>>,
}

impl LiveRun {
    fn new(run_id: &str) -> Arc<Self> {
        Self::attempt(run_id, 0, 1, None)
    }

    /// Attempt `attempt` of a run whose earlier attempts had `first` events.
    fn attempt(run_id: &str, first: usize, attempt: i32, sink: Option<EventSink>) -> Arc<Self> {
        let live = Arc::new(LiveRun {
            first,
            sink: Mutex::new(sink),
            events: Mutex::default(),
            progress: watch::channel((0, false)).0,
            cancel: watch::channel(None).0,
            outcome: Mutex::default(),
        });
        live.push(WireEvent {
            event: "metadata".into(),
            data: json!({"run_id": run_id, "attempt": attempt})
                .to_string()
                .into(),
        });
        live
    }

    fn push(&self, event: WireEvent) {
        if let Ok(sink) = self.sink.lock()
            && let Some(sink) = sink.as_ref()
        {
            let id = self.first + self.progress.borrow().0 + 1;
            let _ = sink.send((id, event.clone()));
        }
        let len = match self.events.lock() {
            Ok(mut events) => {
                events.push(event);
                events.len()
            }
            Err(_) => return,
        };
        self.progress.send_modify(|p| p.0 = len);
    }

    /// Stops sending events to be stored (the run is over here).
    fn close_sink(&self) {
        if let Ok(mut sink) = self.sink.lock() {
            sink.take();
        }
    }

    fn finish(&self, outcome: Value) {
        if let Ok(mut slot) = self.outcome.lock() {
            *slot = Some(outcome);
        }
        self.progress.send_modify(|p| p.1 = true);
    }

    /// Whether the run is over.
    pub(crate) fn is_done(&self) -> bool {
        self.progress.borrow().1
    }

    /// Waits for the end of the run here; returns its outcome (`None` when the
    /// run was handed over to another process).
    pub(crate) async fn outcome(&self) -> Option<Value> {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(|p| p.1).await;
        self.outcome.lock().ok().and_then(|o| o.clone())
    }

    /// Ends the run here without an outcome: it goes on in another process.
    #[cfg(feature = "postgres")]
    fn hand_over(&self) {
        self.progress.send_modify(|p| p.1 = true);
    }

    /// Asks the run to stop.
    pub(crate) fn cancel(&self, action: CancelAction) {
        self.cancel.send_replace(Some(action));
    }

    /// The events after the `after`-th (ids start at 1), then the live ones
    /// until the run ends. Each comes with its id.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        after: usize,
    ) -> impl futures::Stream<Item = (usize, WireEvent)> + Send + 'static + use<> {
        let rx = self.progress.subscribe();
        let state = (
            Arc::clone(self),
            rx,
            after.saturating_sub(self.first),
            std::collections::VecDeque::new(),
        );
        futures::stream::unfold(state, |(live, mut rx, mut cursor, mut queue)| async move {
            loop {
                if let Some(item) = queue.pop_front() {
                    return Some((item, (live, rx, cursor, queue)));
                }
                let (len, done) = *rx.borrow_and_update();
                if len > cursor {
                    if let Ok(events) = live.events.lock() {
                        for (i, e) in events[cursor..len].iter().enumerate() {
                            queue.push_back((live.first + cursor + i + 1, e.clone()));
                        }
                    }
                    cursor = len;
                    continue;
                }
                if done || rx.changed().await.is_err() {
                    return None;
                }
            }
        })
    }
}

/// Where a run's events go to be stored, with their ids.
type EventSink = tokio::sync::mpsc::UnboundedSender<(usize, WireEvent)>;

/// What every handler shares: the assistants, the database, the live runs.
pub(crate) struct Shared {
    pub assistants: Vec<Assistant>,
    pub db: Db,
    pub saver: Arc<dyn Checkpointer>,
    pub store: Option<Arc<dyn graph_core::store::Store>>,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    wake: Notify,
    /// How many runs this process executes now (PostgreSQL: at most
    /// [`MAX_RUNS_PER_PROCESS`]).
    executing: AtomicUsize,
    /// Turns true when the server shuts down, once its worker has stopped
    /// taking runs: the runs in progress then stop (PostgreSQL).
    stopping: watch::Sender<bool>,
}

/// With PostgreSQL, a process executes at most this many runs at once and
/// leaves the rest of the queue to the other processes (each run holds a
/// thread lock on a connection of the saver's lock pool, 64 by default).
#[cfg(feature = "postgres")]
const MAX_RUNS_PER_PROCESS: usize = 32;

/// How often a process looks for runs queued by other processes.
#[cfg(feature = "postgres")]
const POLL: Duration = Duration::from_millis(200);

/// How often a process looks for cancellations of its runs asked of other
/// processes (while it executes any).
#[cfg(feature = "postgres")]
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Aborts a task when dropped (the worker's helper tasks end with it).
#[cfg(feature = "postgres")]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

#[cfg(feature = "postgres")]
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Shared {
    pub(crate) fn new(
        assistants: Vec<Assistant>,
        db: Db,
        saver: Arc<dyn Checkpointer>,
        store: Option<Arc<dyn graph_core::store::Store>>,
    ) -> Self {
        Shared {
            assistants,
            db,
            saver,
            store,
            live: Mutex::default(),
            wake: Notify::new(),
            executing: AtomicUsize::new(0),
            stopping: watch::channel(false).0,
        }
    }

    /// With PostgreSQL, once the worker has stopped: stops the runs of this
    /// process and waits (up to 10 s) until they are back in the queue.
    pub(crate) async fn hand_back(&self) {
        if !self.db.keeps_outcomes() {
            return;
        }
        self.stopping.send_replace(true);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while self.executing.load(Ordering::Relaxed) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The assistant with this id or graph name.
    pub(crate) fn assistant(&self, id: &str) -> Result<&Assistant, ApiError> {
        self.assistants
            .iter()
            .find(|a| a.id == id || a.graph_id == id)
            .ok_or_else(|| ApiError::assistant(id))
    }

    /// The graph of a thread: the assistant its runs used, else the graph
    /// its metadata names (`graph_id`, as a client creating a thread for a
    /// graph sets it), else the first.
    pub(crate) fn thread_graph(&self, thread: &Value) -> Result<&Assistant, ApiError> {
        let metadata = &thread["metadata"];
        match metadata["assistant_id"]
            .as_str()
            .or_else(|| metadata["graph_id"].as_str())
        {
            Some(id) => self.assistant(id),
            None => self
                .assistants
                .first()
                .ok_or_else(|| ApiError::assistant("")),
        }
    }

    /// The run, if this process executes it (or has its events).
    pub(crate) fn live(&self, run_id: &str) -> Option<Arc<LiveRun>> {
        self.live.lock().ok()?.get(run_id).cloned()
    }

    fn live_or_new(&self, run_id: &str) -> Arc<LiveRun> {
        match self.live.lock() {
            Ok(mut live) => Arc::clone(
                live.entry(run_id.to_owned())
                    .or_insert_with(|| LiveRun::new(run_id)),
            ),
            Err(_) => LiveRun::new(run_id),
        }
    }

    fn forget(&self, run_id: &str) {
        if let Ok(mut live) = self.live.lock() {
            live.remove(run_id);
        }
    }

    /// Creates a run: on `thread_id`, or on a new temporary thread when `None`.
    /// With `here` (a client waits for its events or outcome), a PostgreSQL
    /// server executes it in this process when its thread is free.
    pub(crate) async fn create_run(
        self: &Arc<Self>,
        caller: &Caller,
        thread_id: Option<&str>,
        body: RunCreate,
        here: bool,
    ) -> Result<RunRow, ApiError> {
        let mut owned = Map::new();
        caller.stamp(&mut owned);
        let assistant = self.assistant(&body.assistant_id)?;
        assistant.graph.check_input(&RunInput {
            input: body.input.as_deref(),
            command: body.command.as_ref(),
        })?;
        let (thread_id, temporary) = match thread_id {
            Some(id) => {
                match self.db.thread(id).await? {
                    Some(thread) if caller.owns(&thread) => {}
                    // Another caller's thread: as if it did not exist.
                    Some(_) => return Err(ApiError::thread(id)),
                    None if body.if_not_exists == Some(crate::wire::IfNotExists::Create) => {
                        self.db.insert_thread(id, &owned).await?;
                    }
                    None => return Err(ApiError::thread(id)),
                }
                (id.to_owned(), false)
            }
            None => {
                let id = new_id();
                self.db.insert_thread(&id, &owned).await?;
                (id, true)
            }
        };
        let strategy = body.multitask_strategy.unwrap_or_default();
        let active = self.db.active_runs(&thread_id).await?;
        if !active.is_empty() {
            match strategy {
                MultitaskStrategy::Reject => return Err(ApiError::ThreadBusy(thread_id)),
                MultitaskStrategy::Interrupt => {
                    for run in &active {
                        self.cancel(&thread_id, run, CancelAction::Interrupt)
                            .await?;
                    }
                }
                MultitaskStrategy::Rollback => {
                    for run in &active {
                        self.cancel(&thread_id, run, CancelAction::Rollback).await?;
                    }
                }
                MultitaskStrategy::Enqueue => {}
            }
        }
        let mut tags = Map::new();
        tags.insert("graph_id".into(), json!(assistant.graph_id));
        tags.insert("assistant_id".into(), json!(assistant.id));
        self.db.patch_thread_busy(&thread_id, &tags).await?;
        let now = now();
        let run = RunRow {
            run_id: new_id(),
            thread_id: thread_id.clone(),
            assistant_id: assistant.id.clone(),
            created_at: now.clone(),
            updated_at: now,
            status: "pending".into(),
            metadata: body.metadata.clone().unwrap_or_default(),
            kwargs: serde_json::to_string(&body).map_err(|e| ApiError::Internal {
                message: format!("the run's request could not be stored: {e}"),
            })?,
            multitask_strategy: serde_json::to_value(strategy)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            temporary,
        };
        let reject = strategy == MultitaskStrategy::Reject;
        match &self.db {
            Db::Sqlite(_) => {
                // Every run of a SQLite server is live here from the start.
                self.live_or_new(&run.run_id);
                self.db.insert_run(&run, reject).await?;
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                let queue_id = self.db.insert_run(&run, reject).await?;
                if let (true, Some(queue_id)) = (here, queue_id) {
                    match db.claim_run(queue_id).await {
                        Ok(Some(claimed)) => Arc::clone(self).start_claimed(claimed).await,
                        Ok(None) => {}
                        Err(e) => tracing::warn!(error = %e, "could not take a new run"),
                    }
                }
            }
        }
        let _ = here;
        self.wake.notify_one();
        Ok(run)
    }

    /// Waits for the end of a run (here, or in whichever process executes
    /// it); returns what `wait` answers.
    pub(crate) async fn outcome(&self, run_id: &str) -> Result<Value, ApiError> {
        if let Some(live) = self.live(run_id)
            && let Some(outcome) = live.outcome().await
        {
            return Ok(outcome);
        }
        match &self.db {
            // A SQLite server's runs are all live here while they run.
            Db::Sqlite(_) => Ok(Value::Null),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                let mut delay = Duration::from_millis(10);
                loop {
                    match db.run_state(run_id).await {
                        Ok(None) => return Ok(cancelled_outcome()),
                        Ok(Some((status, outcome, _))) if is_final(&status) => {
                            return Ok(outcome.unwrap_or(Value::Null))
                        }
                        Ok(Some(_)) => {}
                        // The database went away: the run waits for it too.
                        Err(e) => tracing::warn!(error = %e, run_id, "cannot read a run's state"),
                    }
                    if let Some(live) = self.live(run_id)
                        && let Some(outcome) = live.outcome().await
                    {
                        return Ok(outcome);
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_millis(250));
                }
            }
        }
    }

    /// The events of a run this process does not execute (PostgreSQL), after
    /// the `after`-th, as the process that executes it stores them, until the
    /// run is over: polled from the database (every 100 ms while none come).
    #[cfg(feature = "postgres")]
    pub(crate) fn stored_events(
        self: &Arc<Self>,
        run_id: &str,
        after: usize,
    ) -> impl futures::Stream<Item = (usize, WireEvent)> + Send + 'static + use<> {
        let state = (Arc::clone(self), run_id.to_owned(), after, false);
        futures::stream::unfold(state, |(shared, run_id, cursor, over)| async move {
            let Db::Postgres(db) = &shared.db else {
                return None;
            };
            loop {
                let events = match db.events_after(&run_id, cursor).await {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::warn!(error = %e, run_id, "cannot read a run's events");
                        Vec::new()
                    }
                };
                if !events.is_empty() {
                    let cursor = events.last().map_or(cursor, |(id, _)| *id);
                    let batch = futures::stream::iter(events);
                    return Some((batch, (shared, run_id, cursor, over)));
                }
                if over {
                    return None;
                }
                // Its events are stored before its end is: once it is over,
                // one more read gets the last of them.
                match db.run_state(&run_id).await {
                    Ok(None) => return None,
                    Ok(Some((status, _, _))) if is_final(&status) => {
                        return Some((
                            futures::stream::iter(Vec::new()),
                            (shared, run_id, cursor, true),
                        ))
                    }
                    _ => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        })
        .flatten()
    }

    /// Cancels a run; returns when it has stopped.
    pub(crate) async fn cancel(
        &self,
        thread_id: &str,
        run_id: &str,
        action: CancelAction,
    ) -> Result<(), ApiError> {
        let Some(run) = self.db.run(thread_id, run_id).await? else {
            return Err(ApiError::run(run_id));
        };
        let rollback = action == CancelAction::Rollback;
        if run.status == "pending" && self.db.cancel_pending(run_id, rollback).await? {
            // Not started: it never will.
            if let Some(live) = self.live(run_id) {
                live.finish(cancelled_outcome());
                self.forget(run_id);
            }
            return self.settle_thread(thread_id).await;
        }
        // Running (or it started since we looked).
        if let Some(live) = self.live(run_id) {
            live.cancel(action);
            live.outcome().await;
            return Ok(());
        }
        #[cfg(feature = "postgres")]
        if let Db::Postgres(db) = &self.db {
            let name = if rollback { "rollback" } else { "interrupt" };
            if db.request_cancel(run_id, name).await? {
                self.outcome(run_id).await?;
            }
        }
        Ok(())
    }

    /// Marks a thread idle (or interrupted) when no run is left on it.
    async fn settle_thread(&self, thread_id: &str) -> Result<(), ApiError> {
        if self.db.active_runs(thread_id).await?.is_empty()
            && let Some(thread) = self.db.thread(thread_id).await?
        {
            let status = if thread["interrupts"]
                .as_object()
                .is_some_and(|m| !m.is_empty())
            {
                "interrupted"
            } else {
                "idle"
            };
            self.db.set_thread_status(thread_id, status).await?;
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Deletes a thread: its runs (cancelled), its checkpoints, its row.
    pub(crate) async fn delete_thread(&self, thread_id: &str) -> Result<bool, ApiError> {
        for run in self.db.active_runs(thread_id).await? {
            if self.db.keeps_outcomes() {
                // It may run in another process, holding the thread's
                // checkpoints: wait until it has stopped.
                self.cancel(thread_id, &run, CancelAction::Interrupt)
                    .await?;
            } else if let Some(live) = self.live(&run) {
                live.cancel(CancelAction::Interrupt);
            }
        }
        let found = self.db.delete_thread(thread_id).await?;
        if found {
            self.saver.delete_thread(thread_id).await?;
        }
        Ok(found)
    }

    /// Starts queued runs until `stop` says so.
    pub(crate) async fn work(self: Arc<Self>, stop: watch::Receiver<bool>) {
        match &self.db {
            Db::Sqlite(db) => {
                match db.requeue_running() {
                    Ok(ids) if !ids.is_empty() => {
                        tracing::info!(runs = ids.len(), "resuming the runs a stopped server left")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "could not requeue unfinished runs"),
                }
                if let Ok(ids) = db.pending_runs() {
                    for id in ids {
                        // Runs queued by an earlier process: their events start here.
                        self.live_or_new(&id);
                    }
                }
                self.work_sqlite(stop).await
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => self.work_postgres(stop).await,
        }
    }

    #[cfg_attr(not(feature = "postgres"), allow(irrefutable_let_patterns))]
    async fn work_sqlite(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            if let Db::Sqlite(db) = &self.db {
                match crate::db::blocking(db, SqliteDb::claim).await {
                    Ok(runs) => {
                        for run in runs {
                            let live = self.live_or_new(&run.run_id);
                            tokio::spawn(Arc::clone(&self).execute(run, live, None));
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "could not take queued runs"),
                }
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Claims runs from the shared queue while this process has room for
    /// them; gives up runs whose last attempt died (`fail_exhausted`) once
    /// per lease.
    #[cfg(feature = "postgres")]
    async fn work_postgres(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let Db::Postgres(db) = &self.db else { return };
        let cancels = tokio::spawn(Arc::clone(&self).watch_cancels());
        let _stop_cancels = AbortOnDrop(cancels);
        let mut swept: Option<std::time::Instant> = None;
        loop {
            if swept.is_none_or(|t| t.elapsed() >= db.lease) {
                swept = Some(std::time::Instant::now());
                match db.fail_exhausted().await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!(runs = n, "runs failed: every attempt died"),
                    Err(e) => tracing::warn!(error = %e, "cannot check for abandoned runs"),
                }
                if let Err(e) = db.forget_old_events().await {
                    tracing::warn!(error = %e, "cannot delete the events of old runs");
                }
            }
            while self.executing.load(Ordering::Relaxed) < MAX_RUNS_PER_PROCESS {
                match db.claim().await {
                    Ok(Some(claimed)) => Arc::clone(&self).start_claimed(claimed).await,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not take queued runs");
                        break;
                    }
                }
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Stops the runs of this process that another process was asked to
    /// cancel: reads the requests every [`CANCEL_POLL`].
    #[cfg(feature = "postgres")]
    async fn watch_cancels(self: Arc<Self>) {
        let Db::Postgres(db) = &self.db else { return };
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            if self.executing.load(Ordering::Relaxed) == 0 {
                continue;
            }
            match db.cancel_requests().await {
                Ok(requests) => {
                    for (run_id, action) in requests {
                        if let Some(live) = self.live(&run_id) {
                            live.cancel(if action == "rollback" {
                                CancelAction::Rollback
                            } else {
                                CancelAction::Interrupt
                            });
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read cancellation requests"),
            }
        }
    }

    /// Executes a run this process claimed from the queue.
    #[cfg(feature = "postgres")]
    async fn start_claimed(self: Arc<Self>, claimed: graph_postgres::QueuedRun) {
        let Db::Postgres(db) = &self.db else { return };
        match db.take(&claimed).await {
            Ok(Some(run)) => {
                if claimed.attempt > 1 {
                    tracing::info!(
                        run_id = %run.run_id,
                        attempt = claimed.attempt,
                        "resuming a run whose process stopped"
                    );
                }
                let first = match db.last_event(&run.run_id).await {
                    Ok(first) => first,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not start a claimed run");
                        return;
                    }
                };
                let (sink, events) = tokio::sync::mpsc::unbounded_channel();
                let live = LiveRun::attempt(&run.run_id, first, claimed.attempt, Some(sink));
                if let Ok(mut map) = self.live.lock() {
                    map.insert(run.run_id.clone(), Arc::clone(&live));
                }
                let stored =
                    tokio::spawn(Arc::clone(&self).store_events(run.run_id.clone(), events));
                tokio::spawn(Arc::clone(&self).execute(run, live, Some((claimed, stored))));
            }
            Ok(None) => {}
            // Its lease runs out, and the run is claimed again.
            Err(e) => tracing::warn!(error = %e, "could not start a claimed run"),
        }
    }

    /// Stores a run's events as they come, in batches, until the run closes
    /// its sink.
    #[cfg(feature = "postgres")]
    async fn store_events(
        self: Arc<Self>,
        run_id: String,
        mut events: tokio::sync::mpsc::UnboundedReceiver<(usize, WireEvent)>,
    ) {
        let Db::Postgres(db) = &self.db else { return };
        let mut batch = Vec::new();
        while events.recv_many(&mut batch, 256).await > 0 {
            if let Err(e) = db.store_events(&run_id, &batch).await {
                tracing::warn!(error = %e, run_id, "cannot store a run's events for other processes");
            }
            batch.clear();
        }
    }

    /// Runs one claimed run to its end (`claim`: its queue entry and the task
    /// storing its events, with PostgreSQL).
    async fn execute(
        self: Arc<Self>,
        run: RunRow,
        live: Arc<LiveRun>,
        claim: Option<(Claim, tokio::task::JoinHandle<()>)>,
    ) {
        self.executing.fetch_add(1, Ordering::Relaxed);
        let (claim, stored) = match claim {
            Some((claim, stored)) => (Some(claim), Some(stored)),
            None => (None, None),
        };
        let outcome = self.run_claimed(&run, &live, claim.as_ref()).await;
        let (status, outcome, cancelled) = match outcome {
            Ok(Ended::Done) => ("success", None, None),
            Ok(Ended::Cancelled(action)) => ("interrupted", None, Some(action)),
            #[cfg(feature = "postgres")]
            Ok(ended @ (Ended::HandedOver(_) | Ended::Stopping)) => {
                // Another attempt (here or elsewhere) continues it from its
                // last checkpoint; clients waiting here follow its row.
                if let (Some(claimed), Db::Postgres(db)) = (&claim, &self.db) {
                    let given = match &ended {
                        Ended::HandedOver(why) => {
                            tracing::warn!(run_id = %run.run_id, reason = %why, "run handed back to the queue");
                            db.retry(claimed, why).await
                        }
                        _ => db.release(claimed).await,
                    };
                    if let Err(e) = given {
                        tracing::warn!(error = %e, "cannot requeue the run; its lease will expire");
                    }
                }
                live.close_sink();
                if let Some(stored) = stored {
                    let _ = stored.await;
                }
                live.hand_over();
                self.forget(&run.run_id);
                self.executing.fetch_sub(1, Ordering::Relaxed);
                self.wake.notify_one();
                return;
            }
            Err(error) => ("error", Some(error), None),
        };
        if let Some(error) = &outcome {
            live.push(WireEvent {
                event: "error".into(),
                data: error.to_string().into(),
            });
        }
        // Every event is stored before the run's end is recorded.
        live.close_sink();
        if let Some(stored) = stored {
            let _ = stored.await;
        }
        let result = self
            .finish_run(&run, status, outcome.as_ref(), cancelled)
            .await;
        let answer = match (result, outcome) {
            (Ok(answer), _) => Some(answer),
            (Err(e), Some(error)) => {
                tracing::warn!(error = %e, "cannot record a failed run");
                Some(json!({ "__error__": error }))
            }
            (Err(e), None) => {
                tracing::warn!(error = %e, run_id = %run.run_id, "cannot record how a run ended");
                None
            }
        };
        #[cfg(feature = "postgres")]
        if let (Some(claimed), Db::Postgres(db)) = (&claim, &self.db) {
            // Not recorded (the database went away): its lease expires and
            // another attempt finds the run finished in its checkpoints and
            // records it.
            if answer.is_some()
                && let Err(e) = db.complete(claimed).await
            {
                tracing::warn!(error = %e, "cannot complete a run's queue entry");
            }
        }
        match answer {
            Some(answer) => live.finish(answer),
            None => match &self.db {
                Db::Sqlite(_) => live.finish(
                    json!({"__error__": {"error": "ServerError", "message": "the run's end could not be recorded"}}),
                ),
                #[cfg(feature = "postgres")]
                Db::Postgres(_) => live.hand_over(),
            },
        }
        let resumable = serde_json::from_str::<RunCreate>(&run.kwargs)
            .map(|b| b.stream_resumable)
            .unwrap_or(false);
        if resumable {
            // Kept for clients that reconnect with `Last-Event-ID`.
            let shared = Arc::clone(&self);
            let run_id = run.run_id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(300)).await;
                shared.forget(&run_id);
            });
        } else {
            self.forget(&run.run_id);
        }
        self.executing.fetch_sub(1, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// Runs the graph, with PostgreSQL under the claim's lease: a heartbeat
    /// renews it and reads the cancellations other processes ask for; a lost
    /// lease (another process took the run over) stops the run here.
    async fn run_claimed(
        &self,
        run: &RunRow,
        live: &LiveRun,
        claim: Option<&Claim>,
    ) -> Result<Ended, Value> {
        #[cfg(feature = "postgres")]
        if let (Some(claimed), Db::Postgres(db)) = (claim, &self.db) {
            let tick = db.lease / 3;
            let heartbeat = async {
                loop {
                    tokio::time::sleep(tick).await;
                    match db.renew(claimed).await {
                        Ok(true) => {}
                        Ok(false) => return "another process took the run over".to_owned(),
                        Err(e) => tracing::warn!(error = %e, "cannot renew a run's lease"),
                    }
                    // Deleted with its thread? (Cancellations are read by
                    // `watch_cancels`, for every run of the process at once.)
                    match db.run_state(&run.run_id).await {
                        Ok(None) => live.cancel(CancelAction::Interrupt),
                        Ok(Some(_)) => {}
                        Err(e) => tracing::warn!(error = %e, "cannot read a run's state"),
                    }
                }
            };
            let mut stopping = self.stopping.subscribe();
            return tokio::select! {
                ended = self.run_graph(run, live, Some(claimed)) => ended,
                lost = heartbeat => Ok(Ended::HandedOver(lost)),
                Ok(_) = stopping.wait_for(|stop| *stop) => Ok(Ended::Stopping),
            };
        }
        self.run_graph(run, live, claim).await
    }

    async fn run_graph(
        &self,
        run: &RunRow,
        live: &LiveRun,
        claim: Option<&Claim>,
    ) -> Result<Ended, Value> {
        let fail = |error: &str, message: String| json!({"error": error, "message": message});
        let body: RunCreate = serde_json::from_str(&run.kwargs)
            .map_err(|e| fail("ValueError", format!("the stored run cannot be read: {e}")))?;
        let assistant = self
            .assistant(&body.assistant_id)
            .map_err(|e| fail("NotFound", e.to_string()))?;
        #[cfg_attr(not(feature = "postgres"), allow(unused_mut))]
        let mut config = run_config(run, &body);
        // A run an earlier attempt had started continues from its checkpoint
        // (its input was applied then).
        let started = match claim {
            #[cfg(feature = "postgres")]
            Some(claimed) => {
                config = config.with_metadata(graph_postgres::RUN_ID_METADATA_KEY, claimed.id);
                match claimed.started(&*self.saver).await {
                    Ok(started) => started,
                    Err(e) => return Ok(Ended::HandedOver(e.to_string())),
                }
            }
            _ => self
                .saver
                .get_tuple(&CheckpointConfig {
                    thread_id: run.thread_id.clone().into(),
                    checkpoint_ns: graph_core::checkpoint::SharedStr::default(),
                    checkpoint_id: None,
                })
                .await
                .ok()
                .flatten()
                .is_some_and(|t| t.metadata.extra.get("run_id") == Some(&json!(run.run_id))),
        };
        let input = if started {
            RunInput::default()
        } else {
            RunInput {
                input: body.input.as_deref(),
                command: body.command.as_ref(),
            }
        };
        let mut cancel = live.cancel.subscribe();
        if let Some(action) = *cancel.borrow_and_update() {
            return Ok(Ended::Cancelled(action));
        }
        let mut stream = assistant
            .graph
            .stream(&input, &config, &body.modes(), body.stream_subgraphs)
            .map_err(|e| fail("ValueError", e.to_string()))?;
        loop {
            tokio::select! {
                event = stream.next() => match event {
                    Some(Ok(event)) => live.push(event),
                    #[cfg(feature = "postgres")]
                    Some(Err(e)) if claim.is_some() && lost_database(&e) => {
                        return Ok(Ended::HandedOver(e.to_string()))
                    }
                    Some(Err(e)) => return Err(run_error_json(&e)),
                    None => return Ok(Ended::Done),
                },
                changed = cancel.changed() => {
                    if changed.is_ok()
                        && let Some(action) = *cancel.borrow_and_update() {
                            return Ok(Ended::Cancelled(action));
                        }
                }
            }
        }
    }

    /// Records how a run ended; returns what `wait` answers for it.
    async fn finish_run(
        &self,
        run: &RunRow,
        status: &str,
        error: Option<&Value>,
        cancelled: Option<CancelAction>,
    ) -> Result<Value, ApiError> {
        if cancelled == Some(CancelAction::Rollback) {
            self.db.delete_run(&run.run_id).await?;
            rewrite_thread(
                &*self.saver,
                &run.thread_id,
                &run.thread_id,
                Some(&run.run_id),
            )
            .await?;
        }
        let body: Option<RunCreate> = serde_json::from_str(&run.kwargs).ok();
        let temporary_delete = run.temporary
            && body.as_ref().and_then(|b| b.on_completion) != Some(OnCompletion::Keep);
        let assistant = self.assistant(&run.assistant_id)?;
        let state = assistant
            .graph
            .get_state(RunConfig::thread(&run.thread_id))
            .await?;
        let interrupts = interrupts_of(&state);
        let thread_status = if error.is_some() {
            "error"
        } else if state["next"].as_array().is_some_and(|n| !n.is_empty()) {
            "interrupted"
        } else {
            "idle"
        };
        let has_values = state["metadata"].is_object();
        let mut values = state["values"].clone();
        let pending = pending_interrupts(&state);
        if !pending.is_empty()
            && let Value::Object(map) = &mut values
        {
            map.insert("__interrupt__".into(), json!(pending));
        }
        let answer = match error {
            Some(error) => json!({ "__error__": error }),
            None => values,
        };
        if cancelled != Some(CancelAction::Rollback) {
            self.db.finish_run(&run.run_id, status, &answer).await?;
        }
        if temporary_delete {
            // Its state is not recorded: the thread goes.
            self.db.delete_thread(&run.thread_id).await?;
            self.saver.delete_thread(&run.thread_id).await?;
        } else {
            // `busy` instead if another run is queued on the thread.
            self.db
                .set_thread_state(
                    &run.thread_id,
                    thread_status,
                    has_values.then_some(&state["values"]),
                    &interrupts,
                    error,
                )
                .await?;
        }
        Ok(answer)
    }
}

/// A run's claim on the shared queue (PostgreSQL); nothing with SQLite.
#[cfg(feature = "postgres")]
type Claim = graph_postgres::QueuedRun;
/// A run's claim on the shared queue (PostgreSQL); nothing with SQLite.
#[cfg(not(feature = "postgres"))]
type Claim = std::convert::Infallible;

/// Whether a run failed because its database did (the connection, its
/// thread's lock or lease): then it is handed back to the queue, not failed.
#[cfg(feature = "postgres")]
fn lost_database(e: &graph_core::GraphError) -> bool {
    use graph_core::checkpoint::CheckpointError;
    use graph_core::GraphError;
    matches!(
        e,
        GraphError::ThreadBusy { .. }
            | GraphError::LeaseLost { .. }
            | GraphError::Checkpoint(CheckpointError::Storage(_))
    )
}

enum Ended {
    Done,
    Cancelled(CancelAction),
    /// PostgreSQL: the run cannot go on here (its lease was lost, or its
    /// database went away); another attempt continues it.
    #[cfg(feature = "postgres")]
    HandedOver(String),
    /// PostgreSQL: the server is shutting down; the run goes back to the
    /// queue without counting the attempt.
    #[cfg(feature = "postgres")]
    Stopping,
}

/// The engine's config of a run: its thread, checkpoint, breakpoints, and the
/// metadata LangGraph Server stores on its checkpoints.
fn run_config(run: &RunRow, body: &RunCreate) -> RunConfig {
    let mut config = RunConfig::thread(&run.thread_id);
    for (k, v) in &run.metadata {
        config = config.with_metadata(k.clone(), v.clone());
    }
    config = config
        .with_metadata("run_id", run.run_id.clone())
        .with_metadata("thread_id", run.thread_id.clone())
        .with_metadata("assistant_id", run.assistant_id.clone())
        .with_metadata("graph_id", body.assistant_id.clone());
    if let Some(Value::Object(c)) = &body.config {
        if let Some(limit) = c.get("recursion_limit").and_then(Value::as_u64) {
            config = config.with_recursion_limit(limit);
        }
        if let Some(Value::Object(configurable)) = c.get("configurable") {
            for (k, v) in configurable {
                if k == "checkpoint_id" {
                    if let Some(id) = v.as_str() {
                        config = config.with_checkpoint_id(id);
                    }
                } else if k != "thread_id" && k != "checkpoint_ns" {
                    config = config.with_configurable(k.clone(), v.clone());
                }
            }
        }
    }
    let checkpoint_id = body.checkpoint_id.clone().or_else(|| {
        body.checkpoint
            .as_ref()
            .and_then(|c| c.checkpoint_id.clone())
    });
    if let Some(id) = checkpoint_id {
        config = config.with_checkpoint_id(id);
    }
    if let Some(b) = &body.interrupt_before {
        config = config.with_interrupt_before(b.to_breakpoints());
    }
    if let Some(b) = &body.interrupt_after {
        config = config.with_interrupt_after(b.to_breakpoints());
    }
    match body.durability.as_deref() {
        Some("sync") => config = config.with_durability(Durability::Sync),
        Some("exit") => config = config.with_durability(Durability::Exit),
        Some("async") => config = config.with_durability(Durability::Async),
        _ => {}
    }
    config
}

/// Copies the checkpoints of thread `from` (root namespace) to thread `to`,
/// leaving out those written by run `without`. With `from == to` (a rollback)
/// the thread is rewritten without that run's checkpoints.
pub(crate) async fn rewrite_thread(
    saver: &dyn Checkpointer,
    from: &str,
    to: &str,
    without: Option<&str>,
) -> Result<(), ApiError> {
    let source = CheckpointConfig {
        thread_id: from.into(),
        checkpoint_ns: graph_core::checkpoint::SharedStr::default(),
        checkpoint_id: None,
    };
    let mut tuples = saver.list(Some(&source), &ListOptions::default()).await?;
    tuples.reverse();
    if let Some(run_id) = without {
        let run_id = json!(run_id);
        tuples.retain(|t| t.metadata.extra.get("run_id") != Some(&run_id));
    }
    if from == to {
        saver.delete_thread(from).await?;
    }
    let mut parent: Option<graph_core::checkpoint::SharedStr> = None;
    for tuple in tuples {
        let target = CheckpointConfig {
            thread_id: to.into(),
            checkpoint_ns: tuple.config.checkpoint_ns.clone(),
            checkpoint_id: parent.clone(),
        };
        let versions = tuple.checkpoint.channel_versions.clone();
        let mut metadata = tuple.metadata.clone();
        metadata.extra.insert("thread_id".into(), json!(to));
        let stored = saver
            .put(&target, tuple.checkpoint, metadata, versions)
            .await?;
        let mut by_task: Vec<(String, Vec<(String, graph_core::checkpoint::Blob)>)> = Vec::new();
        for write in tuple.pending_writes {
            match by_task.iter_mut().find(|(t, _)| *t == write.task_id) {
                Some((_, writes)) => writes.push((write.channel, write.value)),
                None => by_task.push((write.task_id, vec![(write.channel, write.value)])),
            }
        }
        for (task, writes) in by_task {
            saver.put_writes(&stored, writes, &task).await?;
        }
        parent = stored.checkpoint_id;
    }
    Ok(())
}
