//! Running the tasks of one superstep: concurrently on tokio when there are several,
//! inline when there is one; panics are caught; the first failure cancels siblings.

use super::persistence::Rows;
use super::writes::{TaskResult, TaskWrites};
use super::{Run, StepScope, Task, TaskInterrupt};
use crate::checkpoint::Blob;
use crate::context::{CallEvent, CallSink, Context, CustomSink, MessageSink, StreamSinks};
use crate::error::{GraphError, NodeError, PanicSite, SerdeValue};
use crate::interrupt::Scratchpad;
use crate::node::{NodeFuture, NodeOutput};
use crate::scope::Signal;
use crate::state::State;
use crate::stream::{MessageMetadata, StreamEvent, StreamMode};
use crate::unwind;
use futures::stream::{FuturesUnordered, StreamExt};
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

enum Failure {
    Error(NodeError),
    Panic(String),
    /// Code of the user's other than the node's body panicked for the task.
    Elsewhere(GraphError),
}

/// A panic of a retry policy's `retry_on` predicate, travelling out of the
/// task's future as its error ([`PanicSite::RetryPredicate`] once the task is known).
#[derive(Debug)]
struct RetryPredicatePanicked(String);

impl std::fmt::Display for RetryPredicatePanicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the retry_on predicate panicked: {}", self.0)
    }
}

impl std::error::Error for RetryPredicatePanicked {}

/// A node future that runs the node again after an error its policy retries. Each
/// attempt gets the same input and a context with the attempt number. A panic is
/// not an error here: it escapes and is caught (and not retried) by the caller.
fn retrying<S: State>(
    runner: Arc<dyn crate::node::ErasedNode<S>>,
    input: crate::node::TaskInput<S>,
    ctx: Context,
    policy: crate::retry::RetryPolicy,
    timeout: Option<std::time::Duration>,
) -> NodeFuture<S> {
    NodeFuture::new(async move {
        let mut attempt = 1;
        loop {
            let attempt_ctx = ctx.for_attempt(attempt);
            let result = match timeout {
                Some(limit) if runner.is_blocking() => {
                    let runner = Arc::clone(&runner);
                    off_executor(limit, ctx.node(), runner, input.clone(), attempt_ctx).await
                }
                _ => match runner.call(input.clone(), attempt_ctx) {
                    Ok(fut) => match timeout {
                        Some(limit) => within(limit, ctx.node(), fut).await,
                        None => fut.await,
                    },
                    Err(e) => Err(e),
                },
            };
            let error = match result {
                Ok(out) => return Ok(out),
                Err(e) => e,
            };
            if let Some(error) = retry_after(&ctx, &policy, attempt, error).await {
                return Err(error);
            }
            attempt += 1;
        }
    })
}

/// After failed attempt `attempt`: `Some` error to end the task with, or `None`
/// once it is time for the next attempt. Not generic over the state, so that
/// it is compiled once.
async fn retry_after(
    ctx: &Context,
    policy: &crate::retry::RetryPolicy,
    attempt: u32,
    error: NodeError,
) -> Option<NodeError> {
    // A pause or a command for the parent ends the task, whatever error
    // the node made of it: never retried.
    if ctx.signalled() {
        return Some(error);
    }
    let wait = match unwind::catch(|| policy.next_wait(attempt, &error)) {
        Ok(Some(wait)) => wait,
        Ok(None) => return Some(error),
        Err(panic) => return Some(NodeError::from(RetryPredicatePanicked(panic.message))),
    };
    tracing::debug!(attempt, ?wait, error = %error, "retrying a failed task");
    if !wait.is_zero() {
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::time::sleep(wait).await;
        } else {
            // No tokio timer outside a tokio runtime: wait on this thread.
            std::thread::sleep(wait);
        }
    }
    None
}

/// Runs one attempt of a node, cancelled after `limit`.
async fn within<S: State>(
    limit: std::time::Duration,
    node: &str,
    fut: NodeFuture<S>,
) -> Result<NodeOutput<S>, NodeError> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(no_timer(node));
    }
    match tokio::time::timeout(limit, fut).await {
        Ok(result) => result,
        Err(_) => Err(timed_out(node, limit, false)),
    }
}

/// Runs one attempt of a blocking node (a sync `fn`) on tokio's blocking pool,
/// so that its timeout fires on time. A thread cannot be interrupted: past
/// `limit` the attempt is abandoned, not cancelled — it runs to its end in the
/// background, its side effects happen, and its result is discarded.
async fn off_executor<S: State>(
    limit: std::time::Duration,
    node: &str,
    runner: Arc<dyn crate::node::ErasedNode<S>>,
    input: crate::node::TaskInput<S>,
    ctx: Context,
) -> Result<NodeOutput<S>, NodeError> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Err(no_timer(node));
    };
    let on_pool = runtime.clone();
    // The future of a blocking node is ready when first polled; `block_on`
    // drives it on the pool's thread all the same.
    let attempt = runtime.spawn_blocking(move || on_pool.block_on(runner.call(input, ctx)?));
    match tokio::time::timeout(limit, attempt).await {
        Ok(Ok(result)) => result,
        // Raised again here, where the executor catches node panics.
        Ok(Err(joined)) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
        Ok(Err(_)) => Err(NodeError::msg(format!(
            "node `{node}` was cancelled on tokio's blocking pool: the runtime is shutting down"
        ))),
        Err(_) => Err(timed_out(node, limit, true)),
    }
}

fn no_timer(node: &str) -> NodeError {
    NodeError::msg(format!(
        "node `{node}` has a timeout, which needs a tokio runtime with its timer; run the graph \
         inside one (e.g. #[tokio::main]) or remove the timeout"
    ))
}

fn timed_out(node: &str, limit: std::time::Duration, abandoned: bool) -> NodeError {
    NodeError::from(crate::error::NodeTimeout {
        node: node.to_owned(),
        limit,
        abandoned,
    })
}

/// Polls a node's future once, catching a panic; `None` when it is still pending.
async fn poll_once<S: State>(fut: &mut TaskFuture<S>) -> Option<Result<NodeOutput<S>, Failure>> {
    futures::future::poll_fn(|cx| {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *fut).poll(cx)));
        std::task::Poll::Ready(match polled {
            Ok(std::task::Poll::Ready(Ok(out))) => Some(Ok(out)),
            Ok(std::task::Poll::Ready(Err(e))) => Some(Err(Failure::Error(e))),
            Ok(std::task::Poll::Pending) => None,
            Err(panic) => Some(Err(Failure::Panic(unwind::message(&*panic)))),
        })
    })
    .await
}

async fn guarded<S: State>(fut: TaskFuture<S>) -> Result<NodeOutput<S>, Failure> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(e)) => Err(Failure::Error(e)),
        Err(panic) => Err(Failure::Panic(unwind::message(&*panic))),
    }
}

/// A node's future, run in its task's scope of task calls (`crate::func`).
type TaskFuture<S> = crate::func::Scoped<NodeFuture<S>>;

/// A step's tasks running as tokio tasks, each with its index, aborted when
/// dropped (the run was cancelled) or by [`abort_all`](Self::abort_all) (a
/// sibling failed). A task still running when dropped is handed to its
/// thread's root run (`cancel::Thread`), which lets the thread go only once
/// the task has ended: the runtime drops an aborted task later, and a nested
/// run inside it then stores what it made through the root's lease.
struct Spawned<T: Send + 'static> {
    running: FuturesUnordered<Indexed<T>>,
    /// The thread of the step's run, when it has a saver.
    thread: Option<super::cancel::Thread>,
}

/// A spawned task and the index of the step's task it runs.
struct Indexed<T> {
    index: usize,
    task: tokio::task::JoinHandle<T>,
}

impl<T> Future for Indexed<T> {
    type Output = (usize, Result<T, tokio::task::JoinError>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Self::Output> {
        let index = self.index;
        Pin::new(&mut self.task)
            .poll(cx)
            .map(|joined| (index, joined))
    }
}

impl<T: Send + 'static> Spawned<T> {
    fn abort_all(&self) {
        for spawned in &self.running {
            spawned.task.abort();
        }
    }
}

impl<T: Send + 'static> Drop for Spawned<T> {
    fn drop(&mut self) {
        for spawned in std::mem::take(&mut self.running) {
            super::cancel::abandon(spawned.task, self.thread.as_ref());
        }
    }
}

/// Stores the writes of each task of a step, in the background, one `put_writes`
/// per task (LangGraph's `put_writes` on task completion): tasks that complete
/// while a sibling still runs at once, in completion order, so that a crash
/// before the step's checkpoint re-runs only the tasks that had not completed;
/// the others when the step's tasks have all completed. The stored writes are
/// the `result`s of the thread's history (docs/semantics.md §7.2).
///
/// The writer runs as a tokio task that first waits for the checkpoint put still
/// running in the background (the step's writes belong to that checkpoint), and
/// takes its place in `background_put`: the step's own checkpoint is stored only
/// after every write was (durability `sync` waits for both before the step ends;
/// `async` lets them finish in the background, in that order).
pub(super) struct EarlyWrites {
    tx: tokio::sync::mpsc::UnboundedSender<Rows>,
}

/// The writer's tokio task: waits for `previous` (the checkpoint put still
/// running), then stores each task's rows as they arrive. Not generic over the
/// state, so that tokio's task code for it is compiled once.
fn spawn_writer(
    saver: Arc<dyn crate::checkpoint::Checkpointer>,
    config: crate::checkpoint::CheckpointConfig,
    previous: Option<tokio::task::JoinHandle<Result<(), crate::checkpoint::CheckpointError>>>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Rows>,
) -> tokio::task::JoinHandle<Result<(), crate::checkpoint::CheckpointError>> {
    tokio::spawn(async move {
        if let Some(previous) = previous {
            super::persistence::background_result(previous.await)?;
        }
        while let Some((task_id, rows)) = rx.recv().await {
            saver.put_writes(&config, rows, &task_id).await?;
        }
        Ok(())
    })
}

impl EarlyWrites {
    fn send(&self, rows: Rows) {
        // The writer only stops early on a storage error, which the step's
        // checkpoint put reports (it waits for the writer first).
        drop(self.tx.send(rows));
    }
}

impl<S: State> Run<S> {
    pub(super) fn custom_sink(&self) -> Option<CustomSink> {
        let events = self.stream.events.as_ref()?;
        if !events.wants(StreamMode::Custom) {
            return None;
        }
        let events = Arc::clone(events);
        Some(Arc::new(move |node: &Arc<str>, value| {
            events.emit(StreamEvent::Custom {
                node: Arc::clone(node),
                value,
            })
        }))
    }

    /// Where task calls (`crate::func`) report their starts and results:
    /// results as `updates` (LangGraph's `{task: result}`); starts and results
    /// as `tasks` and `debug` events, as LangGraph's `__pregel_push` tasks.
    fn call_sink(&self) -> Option<CallSink> {
        let events = self.stream.events.as_ref()?;
        let (updates, tasks) = (
            events.wants(StreamMode::Updates),
            events.wants(StreamMode::Tasks),
        );
        if !updates && !tasks {
            return None;
        }
        let events = Arc::clone(events);
        let step = self.schedule.step;
        Some(Arc::new(move |event: CallEvent<'_>| match event {
            CallEvent::Start { id, task } => {
                if tasks {
                    events.emit_at(
                        step,
                        StreamEvent::TaskStart {
                            id: id.to_owned(),
                            name: Arc::from(task),
                            triggers: vec!["__pregel_push".to_owned()],
                        },
                    );
                }
            }
            CallEvent::Done {
                id,
                task,
                result,
                cached,
            } => {
                let task: Arc<str> = Arc::from(task);
                let (value, error) = match result {
                    Ok(blob) => (
                        Some(
                            serde_json::from_str::<serde_json::Value>(blob.as_str())
                                .unwrap_or_default(),
                        ),
                        None,
                    ),
                    Err(e) => (None, Some(e)),
                };
                if let (true, Some(value)) = (updates, &value) {
                    events.emit(StreamEvent::Call {
                        task: Arc::clone(&task),
                        value: value.clone(),
                        cached,
                    });
                }
                if tasks && !cached {
                    events.emit_at(
                        step,
                        StreamEvent::CallResult {
                            id: id.to_owned(),
                            task,
                            error,
                            value,
                        },
                    );
                }
            }
        }))
    }

    pub(super) fn message_sink(&self) -> Option<MessageSink> {
        let events = self.stream.events.as_ref()?;
        if !events.wants(StreamMode::Messages) {
            return None;
        }
        let events = Arc::clone(events);
        Some(Arc::new(
            move |node: &Arc<str>, task_id: &str, step, chunk| {
                events.emit(StreamEvent::Message {
                    chunk,
                    metadata: MessageMetadata {
                        node: Arc::clone(node),
                        task_id: task_id.to_owned(),
                        step,
                    },
                })
            },
        ))
    }

    /// The cache key of a task whose node has a cache policy (with a cache set).
    /// Its input's `Serialize` impl panicking is the task's failure.
    fn cache_key(&self, task: &Task<S>) -> Result<Option<u128>, Failure> {
        let spec = &self.graph.nodes[task.node];
        let (Some(_), Some(_), Some(runner), Some(input)) = (
            &self.cache,
            &spec.cache,
            spec.runner.as_ref(),
            task.input.as_ref(),
        ) else {
            return Ok(None);
        };
        unwind::catch(|| runner.cache_key(input)).map_err(|panic| {
            Failure::Elsewhere(panic.at(PanicSite::Serializing {
                value: SerdeValue::CacheKey(spec.name.to_string()),
                step: self.schedule.step,
            }))
        })
    }

    /// The cached output of `task`'s node for `key`, if fresh.
    fn cached(&self, task: &Task<S>, key: u128) -> Option<NodeOutput<S>> {
        let name = &self.graph.nodes[task.node].name;
        let value = self.cache.as_ref()?.get(name, key)?;
        let out = value.downcast_ref::<NodeOutput<S>>()?.try_clone()?;
        tracing::debug!(node = %name, "cache hit");
        Some(out)
    }

    /// Stores task `i`'s output in the cache if it missed it (and its slot still
    /// holds the node's output).
    fn cache_output(
        &self,
        tasks: &[Task<S>],
        keys: &[Option<u128>],
        i: usize,
        slot: &Option<TaskResult<S>>,
    ) {
        if let (Some(Some(key)), Some(TaskResult::Output(out))) = (keys.get(i), slot) {
            self.store_cached(&tasks[i], *key, out);
        }
    }

    fn store_cached(&self, task: &Task<S>, key: u128, out: &NodeOutput<S>) {
        let (Some(cache), spec) = (&self.cache, &self.graph.nodes[task.node]) else {
            return;
        };
        let (Some(policy), Some(copy)) = (&spec.cache, out.try_clone()) else {
            return;
        };
        cache.set(&spec.name, key, Arc::new(copy), policy.get_ttl());
    }

    /// Whether this step stores the writes of its tasks as they complete: with a
    /// saver and a durability other than `exit`, the step's checkpoint stored
    /// (or being stored), and a tokio runtime for the writer.
    fn stores_early(&self) -> bool {
        self.persist.saved
            && self
                .persist
                .durability()
                .is_some_and(|d| d != crate::config::Durability::Exit)
            && tokio::runtime::Handle::try_current().is_ok()
    }

    /// Whether this step keeps the writes of tasks that complete while a
    /// sibling still runs for the put of its checkpoint, without storing them
    /// yet: durability `exit` with a saver. A run cancelled before the step
    /// ends stores them with the checkpoint (`Run::store_when_cancelled`), as
    /// LangGraph's exit stores its pending writes; so the tasks that completed
    /// are not run again when the thread resumes.
    fn holds_early(&self) -> bool {
        self.persist.durability() == Some(crate::config::Durability::Exit)
    }

    /// The step's writer (see [`EarlyWrites`]), started on first use.
    fn early_writer<'w>(&mut self, writer: &'w mut Option<EarlyWrites>) -> Option<&'w EarlyWrites> {
        if writer.is_none() {
            let p = self.persist.saver.as_ref()?;
            let (saver, config) = (Arc::clone(&p.saver), p.config.clone());
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Rows>();
            let previous = self.persist.background_put.take();
            self.persist.background_put = Some(spawn_writer(saver, config, previous, rx));
            *writer = Some(EarlyWrites { tx });
        }
        writer.as_ref()
    }

    /// A task completed: its writes are resolved now (its conditional edges
    /// read the state with only its own writes, as they would at the end of the
    /// step) and handed to the step's writer while a sibling still runs
    /// (`writer`), or else (`None`: every task has completed, or durability
    /// `exit`) kept in `Saver::step_writes` for the put that stores them
    /// without a writer task of their own; the slot then holds them as
    /// `Restored`, so nothing stores them again. A task whose command leaves for the parent graph stores
    /// nothing. An error resolving the routes is kept for the end of the step,
    /// where it would have occurred.
    fn store_early(
        &mut self,
        task: &Task<S>,
        slot: &mut Option<TaskResult<S>>,
        writer: Option<&mut Option<EarlyWrites>>,
        late: &mut Option<GraphError>,
    ) {
        let Some(TaskResult::Output(out)) =
            slot.take_if(|r| matches!(r, TaskResult::Output(out) if out.parent.is_none()))
        else {
            return;
        };
        let resolved = self
            .resolve_alone(task, out)
            .and_then(|writes| self.encode_writes(&writes).map(|rows| (writes, rows)));
        match resolved {
            Ok((writes, rows)) => {
                match writer {
                    Some(writer) => {
                        if let Some(writer) = self.early_writer(writer) {
                            writer.send((task.id.clone(), rows));
                        }
                    }
                    None => {
                        if let Some(p) = &mut self.persist.saver {
                            p.step_writes.push((task.id.clone(), rows));
                        }
                    }
                }
                *slot = Some(TaskResult::Restored(writes));
            }
            Err(e) => {
                late.get_or_insert(e);
            }
        }
    }

    /// [`store_early`](Self::store_early) for every task that has completed.
    fn store_all_early(
        &mut self,
        tasks: &[Task<S>],
        slots: &mut [Option<TaskResult<S>>],
        keys: &[Option<u128>],
        mut writer: Option<&mut Option<EarlyWrites>>,
        late: &mut Option<GraphError>,
    ) {
        for (i, (task, slot)) in tasks.iter().zip(slots.iter_mut()).enumerate() {
            self.cache_output(tasks, keys, i, slot);
            self.store_early(task, slot, writer.as_deref_mut(), late);
        }
    }

    /// What this step's tasks pass to the graphs they run nested.
    pub(super) fn step_scope(&self) -> StepScope {
        StepScope {
            step: self.schedule.step,
            stop: self.schedule.stop,
            config: self.config.clone(),
            context: self.context.clone(),
            graph_ns: Arc::clone(&self.ns),
            saver: self.persist.saver.as_ref().map(|p| Arc::clone(&p.saver)),
            resuming: self.interrupts.resuming,
            resume_map: (!self.interrupts.resume_map.is_empty())
                .then(|| Arc::from(self.interrupts.resume_map.as_slice())),
            null_resume: self.interrupts.null_resume.clone(),
            checkpoint: self.persist.checkpoint,
            ancestors: self.nested.as_ref().map(|n| Arc::clone(&n.parents)),
            events: self.stream.nested_events.clone(),
            depth: self.nested.as_ref().map_or(0, |n| n.depth),
            signals: Default::default(),
            saved_calls: None,
            store: self.store.clone(),
            cache: self.cache.clone(),
            persistent: Default::default(),
        }
    }

    fn failure(&self, task: &Task<S>, failure: Failure) -> GraphError {
        let node = self.graph.nodes[task.node].name.to_string();
        match failure {
            Failure::Error(e) => match e.downcast_ref::<RetryPredicatePanicked>() {
                Some(panic) => GraphError::Panicked {
                    site: PanicSite::RetryPredicate {
                        node,
                        task_id: task.id.clone(),
                        step: self.schedule.step,
                    },
                    message: panic.0.clone(),
                },
                None => GraphError::NodeFailed {
                    node,
                    task_id: task.id.clone(),
                    step: self.schedule.step,
                    transient: e.is_transient(),
                    source: e.into_boxed(),
                },
            },
            Failure::Elsewhere(e) => e,
            Failure::Panic(message) => GraphError::NodePanicked {
                node,
                task_id: task.id.clone(),
                step: self.schedule.step,
                message,
            },
        }
    }

    /// Starts a task's node; the synchronous part of a closure node runs here.
    /// A task that has answers for its interrupts (or may take the run's resume
    /// value) gets a scratchpad, returned in `pad`.
    fn start(
        &self,
        task: &mut Task<S>,
        sinks: &StreamSinks,
        scope: &Arc<StepScope>,
        answers: Vec<Blob>,
        pad: &mut Option<Arc<Scratchpad>>,
    ) -> Result<TaskFuture<S>, Failure> {
        let spec = &self.graph.nodes[task.node];
        #[cfg(feature = "test-util")]
        let faked = spec.runner.as_ref().and_then(|r| self.faked(task, r));
        #[cfg(feature = "test-util")]
        let runner = faked.as_ref().or(spec.runner.as_ref());
        #[cfg(not(feature = "test-util"))]
        let runner = spec.runner.as_ref();
        let (Some(runner), Some(input)) = (runner, task.input.take()) else {
            // `__start__`: forwards the input to the state fields.
            let mut out = NodeOutput::default();
            if let Some(updates) = &self.start_input {
                out.updates.extend(updates.iter().cloned());
            }
            return Ok(TaskFuture::new(NodeFuture::ready(Ok(out)), None));
        };
        if !answers.is_empty() || self.interrupts.null_resume.is_some() {
            *pad = Some(Arc::new(Scratchpad::new(
                self.interrupt_id_of(task),
                answers,
                self.interrupts.null_resume.clone(),
            )));
        }
        let ctx = Context::new(
            Arc::clone(&spec.name),
            task.id.clone(),
            Arc::clone(scope),
            sinks.clone(),
            pad.clone(),
        );
        let node_ctx = ctx.clone();
        let span = tracing::debug_span!(
            "task",
            node = %spec.name,
            task_id = %task.id,
            step = self.schedule.step,
            thread_id = self.config.thread_id(),
        );
        let call = || match (&spec.retry, spec.timeout) {
            (None, None) => runner.call(input, ctx),
            (policy, timeout) => {
                let policy = policy
                    .clone()
                    .unwrap_or_else(|| crate::retry::RetryPolicy::new().max_attempts(1));
                Ok(retrying(Arc::clone(runner), input, ctx, policy, timeout))
            }
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| span.in_scope(call))) {
            // Wrapped only when a subscriber listens: the hot path pays nothing.
            Ok(Ok(fut)) if !span.is_disabled() => {
                use tracing::Instrument;
                Ok(TaskFuture::new(
                    NodeFuture::new(fut.instrument(span)),
                    Some(node_ctx),
                ))
            }
            Ok(Ok(fut)) => Ok(TaskFuture::new(fut, Some(node_ctx))),
            Ok(Err(e)) => Err(Failure::Error(e)),
            Err(panic) => Err(Failure::Panic(unwind::message(&*panic))),
        }
    }

    /// Runs every task of the step that has no restored writes; returns each task's
    /// result in task order. Tasks that pause at an interrupt end `Interrupted`
    /// (their siblings keep running). On the first failure, running siblings are
    /// cancelled and the failure is returned with the results of the tasks that
    /// had ended.
    ///
    /// Each task's future is first polled once, inline: a node that completes
    /// without waiting (every sync node, most async ones) costs no task spawn and
    /// no cross-thread wake-up. Futures still pending after that poll — nodes really
    /// waiting on I/O — then run concurrently as tokio tasks.
    pub(super) async fn execute(
        &mut self,
        tasks: &mut [Task<S>],
        restored: Vec<Option<TaskWrites<S>>>,
        mut answers: Vec<Vec<Blob>>,
        saved_calls: Option<Arc<[crate::checkpoint::PendingWrite]>>,
    ) -> StepRun<S> {
        let mut scope = self.step_scope();
        scope.saved_calls = saved_calls;
        let scope = Arc::new(scope);
        let sinks = StreamSinks {
            custom: self.custom_sink(),
            messages: self.message_sink(),
            calls: self.call_sink(),
        };
        let mut slots: Vec<Option<TaskResult<S>>> = restored
            .into_iter()
            .map(|r| r.map(TaskResult::Restored))
            .collect();
        let mut pads: Vec<Option<Arc<Scratchpad>>> = Vec::new();
        let mut pending: Vec<(usize, TaskFuture<S>)> = Vec::new();
        let mut failure: Option<(usize, Failure)> = None;
        // Cache keys of the tasks that missed the cache, to store their output.
        let mut cache_keys: Vec<Option<u128>> = Vec::new();
        let early = self.stores_early();
        // Writes kept while a sibling runs: stored now (`early`) or held for
        // the step's put (`exit`).
        let keeps = early || self.holds_early();
        let mut writer: Option<EarlyWrites> = None;
        let mut late: Option<GraphError> = None;
        for (i, task) in tasks.iter_mut().enumerate() {
            if slots[i].is_some() {
                continue;
            }
            let key = match self.cache_key(task) {
                Ok(key) => key,
                Err(f) => {
                    failure = Some((i, f));
                    pending.clear();
                    break;
                }
            };
            if let Some(key) = key {
                if let Some(out) = self.cached(task, key) {
                    slots[i] = Some(TaskResult::Output(out));
                    continue;
                }
                cache_keys.resize(i + 1, None);
                cache_keys[i] = Some(key);
            }
            let mine = answers.get_mut(i).map(std::mem::take).unwrap_or_default();
            let mut pad = None;
            let started = self.start(task, &sinks, &scope, mine, &mut pad);
            if pad.is_some() {
                pads.resize_with(i + 1, || None);
                pads[i] = pad;
            }
            let result = match started {
                Ok(mut fut) => match poll_once(&mut fut).await {
                    Some(result) => result,
                    None => {
                        pending.push((i, fut));
                        continue;
                    }
                },
                Err(failure) => Err(failure),
            };
            match ended(result, pads.get(i), &scope, task) {
                Ok(r) => slots[i] = Some(r),
                Err(f) => {
                    // Tasks not started yet, or still pending, are dropped unrun.
                    failure = Some((i, f));
                    pending.clear();
                    break;
                }
            }
        }

        // Tasks that completed at once are stored while the others run (once
        // those are running).
        let completed_at_once = keeps && failure.is_none() && !pending.is_empty();
        if failure.is_none() && pending.len() == 1 {
            if completed_at_once {
                let writer = early.then_some(&mut writer);
                self.store_all_early(tasks, &mut slots, &cache_keys, writer, &mut late);
            }
            if let Some((i, fut)) = pending.pop() {
                match ended(guarded(fut).await, pads.get(i), &scope, &tasks[i]) {
                    Ok(r) => slots[i] = Some(r),
                    Err(f) => failure = Some((i, f)),
                }
            }
        } else if let (false, Ok(handle)) =
            (pending.is_empty(), tokio::runtime::Handle::try_current())
        {
            // Dropping the run (cancellation) or failing early aborts what still runs.
            let mut spawned = Spawned {
                running: pending
                    .drain(..)
                    .map(|(index, f)| Indexed {
                        index,
                        task: handle.spawn(guarded(f)),
                    })
                    .collect(),
                thread: self.persist.saver.as_ref().map(|p| p.cancel_thread()),
            };
            if completed_at_once {
                let writer = early.then_some(&mut writer);
                self.store_all_early(tasks, &mut slots, &cache_keys, writer, &mut late);
            }
            while let Some((i, joined)) = spawned.running.next().await {
                let result = match joined {
                    Ok(r) => r,
                    Err(e) if e.is_panic() => {
                        Err(Failure::Panic(unwind::message(&*e.into_panic())))
                    }
                    Err(_) => Err(Failure::Error(NodeError::msg("the task was cancelled"))),
                };
                match ended(result, pads.get(i), &scope, &tasks[i]) {
                    Ok(r) => {
                        slots[i] = Some(r);
                        // Stored at once while a sibling still runs; the last to
                        // complete is stored with the step's checkpoint.
                        if keeps && !spawned.running.is_empty() {
                            self.cache_output(tasks, &cache_keys, i, &slots[i]);
                            let writer = early.then_some(&mut writer);
                            self.store_early(&tasks[i], &mut slots[i], writer, &mut late);
                        }
                    }
                    Err(f) => {
                        spawned.abort_all();
                        // Siblings that completed before the abort keep their
                        // results (stored with the failure); the others stop.
                        while let Some((j, joined)) = spawned.running.next().await {
                            if let Ok(Ok(r)) =
                                joined.map(|result| ended(result, pads.get(j), &scope, &tasks[j]))
                            {
                                slots[j] = Some(r);
                            }
                        }
                        failure = Some((i, f));
                        break;
                    }
                }
            }
        } else if !pending.is_empty() {
            // No tokio runtime: run the rest concurrently on the caller's executor.
            let (indices, futures): (Vec<usize>, Vec<_>) = pending.drain(..).unzip();
            let done = futures::future::join_all(futures.into_iter().map(guarded)).await;
            for (i, result) in indices.into_iter().zip(done) {
                match ended(result, pads.get(i), &scope, &tasks[i]) {
                    Ok(r) => slots[i] = Some(r),
                    Err(f) => {
                        failure.get_or_insert((i, f));
                    }
                }
            }
        }

        // The tasks that completed last (or alone) are stored too, by the put of
        // the step's checkpoint, first (after the writer): every task of a past
        // checkpoint shows its result in the thread's history, as in LangGraph.
        // A failed step stores its completed tasks with the failure.
        // Either way each task's output goes to the node cache once.
        if early && failure.is_none() {
            self.store_all_early(tasks, &mut slots, &cache_keys, None, &mut late);
        } else {
            for (i, slot) in slots.iter().enumerate() {
                self.cache_output(tasks, &cache_keys, i, slot);
            }
        }
        let failure = failure.map(|(i, f)| self.failure(&tasks[i], f));
        StepRun {
            results: slots,
            failure,
            late,
        }
    }
}

/// What the tasks of one superstep did.
pub(super) struct StepRun<S: State> {
    /// Per task: how it ended (`None`: it did not end, because a sibling failed).
    pub(super) results: Vec<Option<TaskResult<S>>>,
    /// The first failure, if any.
    pub(super) failure: Option<GraphError>,
    /// An error resolving the writes of a task stored early (an invalid route),
    /// reported where resolving them at the end of the step would have.
    pub(super) late: Option<GraphError>,
}

impl<S: State> StepRun<S> {
    /// The first task (in task order) that returned a command for the parent
    /// graph, with that command; its result slot is emptied.
    pub(super) fn take_parent_command(&mut self) -> Option<(usize, crate::command::ParentRoute)> {
        self.results.iter_mut().enumerate().find_map(|(i, slot)| {
            let Some(TaskResult::Output(out)) = slot else {
                return None;
            };
            let command = out.parent.take()?;
            *slot = None;
            Some((i, command))
        })
    }

    /// Whether some task paused at an interrupt.
    pub(super) fn interrupted(&self) -> bool {
        self.results
            .iter()
            .any(|r| matches!(r, Some(TaskResult::Interrupted(_))))
    }
}

/// How a task ended: its output, a pause at an interrupt (with the answers it
/// consumed, from its scratchpad), or a failure. A signal the task raised
/// (`scope.signals`) decides, whatever the node returned: a node that
/// swallowed its pause (`.ok()`, `map_err`) still pauses. A panic still fails.
fn ended<S: State>(
    result: Result<NodeOutput<S>, Failure>,
    pad: Option<&Option<Arc<Scratchpad>>>,
    scope: &StepScope,
    task: &Task<S>,
) -> Result<TaskResult<S>, Failure> {
    if !matches!(result, Err(Failure::Panic(_))) {
        match scope.signals.take(&task.id) {
            Some(Signal::Interrupts(interrupts)) => {
                return Ok(TaskResult::Interrupted(TaskInterrupt {
                    interrupts,
                    answers: pad.and_then(Option::as_ref).and_then(|p| p.resume_write()),
                }))
            }
            Some(Signal::Parent(route)) => {
                return route
                    .into_output::<S>()
                    .map(TaskResult::Output)
                    .map_err(Failure::Error)
            }
            None => {}
        }
    }
    match result {
        Ok(out) => Ok(TaskResult::Output(out)),
        Err(Failure::Error(e)) => match e.into_interrupts() {
            Ok(interrupts) => Ok(TaskResult::Interrupted(TaskInterrupt {
                interrupts,
                answers: pad.and_then(Option::as_ref).and_then(|p| p.resume_write()),
            })),
            // A subgraph's command for this graph: the task's result.
            Err(e) => match e.into_parent() {
                Ok(route) => route
                    .into_output::<S>()
                    .map(TaskResult::Output)
                    .map_err(Failure::Error),
                Err(e) => Err(Failure::Error(e)),
            },
        },
        Err(panic) => Err(panic),
    }
}
