//! Runs: queued in the database, started by the worker one per thread at a
//! time, their events kept for the clients that stream or join them.

use crate::auth::Caller;
use crate::db::{new_id, now, Db, RunRow};
use crate::error::{run_error_json, ApiError};
use crate::graph::{interrupts_of, pending_interrupts, RunInput, ServedGraph, WireEvent};
use crate::wire::{MultitaskStrategy, OnCompletion, RunCreate};
use futures::StreamExt;
use graph_core::checkpoint::{CheckpointConfig, Checkpointer, ListOptions};
use graph_core::{Durability, RunConfig};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
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
    events: Mutex<Vec<WireEvent>>,
    /// How many events there are, and whether the run is over.
    progress: watch::Sender<(usize, bool)>,
    cancel: watch::Sender<Option<CancelAction>>,
    /// What `wait` answers: the final values, or `{"__error__": ..}`.
    outcome: Mutex<Option<Value>>,
}

impl LiveRun {
    fn new(run_id: &str) -> Arc<Self> {
        let live = Arc::new(LiveRun {
            events: Mutex::default(),
            progress: watch::channel((0, false)).0,
            cancel: watch::channel(None).0,
            outcome: Mutex::default(),
        });
        live.push(WireEvent {
            event: "metadata".into(),
            data: json!({"run_id": run_id, "attempt": 1}).to_string().into(),
        });
        live
    }

    fn push(&self, event: WireEvent) {
        let len = match self.events.lock() {
            Ok(mut events) => {
                events.push(event);
                events.len()
            }
            Err(_) => return,
        };
        self.progress.send_modify(|p| p.0 = len);
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

    /// Waits for the end of the run; returns its outcome.
    pub(crate) async fn outcome(&self) -> Value {
        let mut rx = self.progress.subscribe();
        let _ = rx.wait_for(|p| p.1).await;
        self.outcome
            .lock()
            .ok()
            .and_then(|o| o.clone())
            .unwrap_or(Value::Null)
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
    ) -> impl futures::Stream<Item = (usize, WireEvent)> + Send + 'static {
        let rx = self.progress.subscribe();
        let state = (
            Arc::clone(self),
            rx,
            after,
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
                            queue.push_back((cursor + i + 1, e.clone()));
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

/// What every handler shares: the assistants, the database, the live runs.
pub(crate) struct Shared {
    pub assistants: Vec<Assistant>,
    pub db: Db,
    pub saver: Arc<dyn Checkpointer>,
    pub store: Option<Arc<dyn graph_core::store::Store>>,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    wake: Notify,
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
    pub(crate) async fn create_run(
        self: &Arc<Self>,
        caller: &Caller,
        thread_id: Option<&str>,
        body: RunCreate,
    ) -> Result<(RunRow, Arc<LiveRun>), ApiError> {
        let mut owned = Map::new();
        caller.stamp(&mut owned);
        let assistant = self.assistant(&body.assistant_id)?;
        assistant.graph.check_input(&RunInput {
            input: body.input.as_deref(),
            command: body.command.as_ref(),
        })?;
        let (thread_id, temporary) = match thread_id {
            Some(id) => {
                match self.db.thread(id)? {
                    Some(thread) if caller.owns(&thread) => {}
                    // Another caller's thread: as if it did not exist.
                    Some(_) => return Err(ApiError::thread(id)),
                    None if body.if_not_exists == Some(crate::wire::IfNotExists::Create) => {
                        self.db.insert_thread(id, &owned)?;
                    }
                    None => return Err(ApiError::thread(id)),
                }
                (id.to_owned(), false)
            }
            None => {
                let id = new_id();
                self.db.insert_thread(&id, &owned)?;
                (id, true)
            }
        };
        let strategy = body.multitask_strategy.unwrap_or_default();
        let active = self.db.active_runs(&thread_id)?;
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
        self.db.patch_thread(&thread_id, &tags)?;
        self.db.set_thread_status(&thread_id, "busy")?;
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
        let live = self.live_or_new(&run.run_id);
        self.db.insert_run(&run)?;
        self.wake.notify_one();
        Ok((run, live))
    }

    /// Cancels a run; with `wait`, returns when it has stopped.
    pub(crate) async fn cancel(
        &self,
        thread_id: &str,
        run_id: &str,
        action: CancelAction,
    ) -> Result<(), ApiError> {
        let Some(run) = self.db.run(thread_id, run_id)? else {
            return Err(ApiError::run(run_id));
        };
        match run.status.as_str() {
            "pending" => {
                // Not started: it never will.
                match action {
                    CancelAction::Interrupt => self.db.set_run_status(run_id, "interrupted")?,
                    CancelAction::Rollback => {
                        self.db.delete_run(run_id)?;
                    }
                }
                if let Some(live) = self.live(run_id) {
                    live.finish(json!({"__error__": {"error": "Cancelled", "message": "the run was cancelled before it started"}}));
                    self.forget(run_id);
                }
                self.settle_thread(thread_id).await?;
            }
            "running" => {
                if let Some(live) = self.live(run_id) {
                    live.cancel(action);
                    live.outcome().await;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Marks a thread idle (or interrupted) when no run is left on it.
    async fn settle_thread(&self, thread_id: &str) -> Result<(), ApiError> {
        if self.db.active_runs(thread_id)?.is_empty() {
            if let Some(thread) = self.db.thread(thread_id)? {
                let status = if thread["interrupts"]
                    .as_object()
                    .is_some_and(|m| !m.is_empty())
                {
                    "interrupted"
                } else {
                    "idle"
                };
                self.db.set_thread_status(thread_id, status)?;
            }
        }
        self.wake.notify_one();
        Ok(())
    }

    /// Deletes a thread: its runs (cancelled), its checkpoints, its row.
    pub(crate) async fn delete_thread(&self, thread_id: &str) -> Result<bool, ApiError> {
        for run in self.db.active_runs(thread_id)? {
            if let Some(live) = self.live(&run) {
                live.cancel(CancelAction::Interrupt);
            }
        }
        let found = self.db.delete_thread(thread_id)?;
        if found {
            self.saver.delete_thread(thread_id).await?;
        }
        Ok(found)
    }

    /// Starts queued runs until `stop` says so.
    pub(crate) async fn work(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        match self.db.requeue_running() {
            Ok(ids) if !ids.is_empty() => {
                tracing::info!(runs = ids.len(), "resuming the runs a stopped server left")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "could not requeue unfinished runs"),
        }
        if let Ok(ids) = self.db.pending_runs() {
            for id in ids {
                // Runs queued by an earlier process: their events start here.
                self.live_or_new(&id);
            }
        }
        loop {
            match self.db.claim() {
                Ok(runs) => {
                    for run in runs {
                        let live = self.live_or_new(&run.run_id);
                        tokio::spawn(Arc::clone(&self).execute(run, live));
                    }
                }
                Err(e) => tracing::error!(error = %e, "could not take queued runs"),
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Runs one claimed run to its end.
    async fn execute(self: Arc<Self>, run: RunRow, live: Arc<LiveRun>) {
        let outcome = self.run_graph(&run, &live).await;
        let (status, outcome, cancelled) = match outcome {
            Ok(Ended::Done) => ("success", None, None),
            Ok(Ended::Cancelled(action)) => ("interrupted", None, Some(action)),
            Err(error) => ("error", Some(error), None),
        };
        if let Some(error) = &outcome {
            live.push(WireEvent {
                event: "error".into(),
                data: error.to_string().into(),
            });
        }
        let result = self
            .finish_run(&run, status, outcome.as_ref(), cancelled)
            .await;
        let answer = match (result, outcome) {
            (_, Some(error)) => json!({ "__error__": error }),
            (Ok(values), None) => values,
            (Err(e), None) => {
                json!({"__error__": {"error": "ServerError", "message": e.to_string()}})
            }
        };
        live.finish(answer);
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
        self.wake.notify_one();
    }

    async fn run_graph(&self, run: &RunRow, live: &LiveRun) -> Result<Ended, Value> {
        let fail = |error: &str, message: String| json!({"error": error, "message": message});
        let body: RunCreate = serde_json::from_str(&run.kwargs)
            .map_err(|e| fail("ValueError", format!("the stored run cannot be read: {e}")))?;
        let assistant = self
            .assistant(&body.assistant_id)
            .map_err(|e| fail("NotFound", e.to_string()))?;
        let config = run_config(run, &body);
        // A run a stopped process had started continues from its checkpoint.
        let started = self
            .saver
            .get_tuple(&CheckpointConfig {
                thread_id: run.thread_id.clone(),
                checkpoint_ns: String::new(),
                checkpoint_id: None,
            })
            .await
            .ok()
            .flatten()
            .is_some_and(|t| t.metadata.extra.get("run_id") == Some(&json!(run.run_id)));
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
                    Some(Err(e)) => return Err(run_error_json(&e)),
                    None => return Ok(Ended::Done),
                },
                changed = cancel.changed() => {
                    if changed.is_ok() {
                        if let Some(action) = *cancel.borrow_and_update() {
                            return Ok(Ended::Cancelled(action));
                        }
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
            self.db.delete_run(&run.run_id)?;
            rewrite_thread(
                &*self.saver,
                &run.thread_id,
                &run.thread_id,
                Some(&run.run_id),
            )
            .await?;
        } else {
            self.db.set_run_status(&run.run_id, status)?;
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
        self.db.set_thread_state(
            &run.thread_id,
            thread_status,
            has_values.then_some(&state["values"]),
            &interrupts,
            error,
        )?;
        self.settle_thread_after(&run.thread_id, thread_status)?;
        let mut values = state["values"].clone();
        let pending = pending_interrupts(&state);
        if !pending.is_empty() {
            if let Value::Object(map) = &mut values {
                map.insert("__interrupt__".into(), json!(pending));
            }
        }
        if temporary_delete {
            self.db.delete_thread(&run.thread_id)?;
            self.saver.delete_thread(&run.thread_id).await?;
        }
        Ok(values)
    }

    fn settle_thread_after(&self, thread_id: &str, status: &str) -> Result<(), ApiError> {
        if !self.db.active_runs(thread_id)?.is_empty() {
            self.db.set_thread_status(thread_id, "busy")?;
        } else {
            self.db.set_thread_status(thread_id, status)?;
        }
        Ok(())
    }
}

enum Ended {
    Done,
    Cancelled(CancelAction),
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
        thread_id: from.to_owned(),
        checkpoint_ns: String::new(),
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
    let mut parent: Option<String> = None;
    for tuple in tuples {
        let target = CheckpointConfig {
            thread_id: to.to_owned(),
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
