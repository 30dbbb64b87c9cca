//! The Pregel superstep loop (docs/semantics.md §2): prepare the tasks a step triggers,
//! run them concurrently, apply their writes in deterministic task order, repeat.
//!
//! A [`Run`] owns the live state (channel values, control channels, pending
//! `Send`s) and composes four owners, each in its own file with its methods:
//!
//! | owner | file | holds |
//! |---|---|---|
//! | [`Schedule`](schedule::Schedule) | `schedule.rs` | versions, triggers seen, step and limit, task ids; `prepare` |
//! | [`Persist`](persistence::Persist) | `persistence.rs` | saver, current checkpoint, durability, background puts, lease |
//! | [`Interrupts`](interrupts::Interrupts) | `interrupts.rs` | breakpoints, resume answers, last resume |
//! | [`Streaming`](streaming::Streaming) | `streaming.rs` | where events go; the loop's own events |
//!
//! The loop itself is [`Run::run_steps`]: [`Run::begin`] decides what the run
//! starts from, [`Run::superstep`] runs one step, [`Run::finish`] stores the
//! end. Running tasks is `execute`'s, applying their writes `writes`', pausing
//! `pause`'s, resuming `resume`'s, checkpoint encoding `persist`'s.

mod append;
mod cancel;
mod control;
mod execute;
#[cfg(feature = "test-util")]
pub(crate) mod gate;
mod interrupts;
mod lease;
mod nested;
mod pause;
mod persist;
mod persistence;
mod resume;
mod schedule;
mod snapshot;
mod spare;
mod streaming;
mod update;
mod warm;
mod writes;

use crate::checkpoint::{CheckpointSource, CheckpointTuple, Checkpointer, PendingWrite, SharedStr};
use crate::command::Send;
use crate::compiled::Graph;
use crate::config::{Durability, RunConfig};
use crate::error::{ConfigError, EmptyInputError, GraphError};
use crate::ids::{self, TaskOrder};
use crate::interrupt::NullResume;
use crate::io::{GraphInput, GraphOutput, InputKind};
use crate::node::TaskInput;
use crate::state::{ManagedValues, State};
use crate::unwind;
use control::ControlChannel;
use interrupts::Interrupts;
use persistence::{Persist, Saver};
use schedule::Schedule;
use std::sync::Arc;
use streaming::Streaming;

pub(crate) use crate::scope::StepScope;
pub(crate) use nested::recast;
pub(crate) use pause::TaskInterrupt;
pub(crate) use persistence::VERSION_SALT_LEN;
pub(crate) use streaming::EventSink;
pub(crate) use warm::WarmStates;

/// Returns `Pending` once (waking itself), so whoever polls the run gets control.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// The root graph's checkpoint namespace, `""` (one shared allocation).
fn root_namespace() -> Arc<str> {
    static ROOT: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    Arc::clone(ROOT.get_or_init(|| Arc::from("")))
}

/// `update_state`'s special `as_node` that copies a checkpoint as a fork.
pub(crate) const COPY: &str = "__copy__";
/// `update_state`'s special `as_node` that treats the values as graph input.
pub(crate) const INPUT: &str = "__input__";

/// One task of a superstep.
pub(crate) struct Task<S: State> {
    pub(crate) node: usize,
    pub(crate) path: TaskOrder,
    pub(crate) id: String,
    pub(crate) input: Option<TaskInput<S>>,
}

/// The live state of one run of a compiled graph.
pub(crate) struct Run<S: State> {
    graph: Arc<Graph<S>>,
    config: RunConfig,
    /// The state fields' values.
    state: Arc<S>,
    /// The state fields' channels (what each field's reducer keeps).
    fields: S::Channels,
    /// Branch and join channels.
    control: Vec<ControlChannel>,
    /// The `__start__` channel: the graph input, one update per written field.
    start_input: Option<Vec<S::Update>>,
    /// The `__pregel_tasks` channel: the `Send`s the next step runs.
    sends: Vec<Send>,
    schedule: Schedule,
    persist: Persist,
    interrupts: Interrupts,
    stream: Streaming<S>,
    /// The checkpoint namespace of this run (`""` at the root).
    ns: Arc<str>,
    /// Set when this run is a subgraph running inside a task of another graph.
    nested: Option<Nested>,
    /// Where nodes with a cache policy keep their results.
    cache: Option<Arc<dyn crate::cache::Cache>>,
    /// The run's context value (a nested run shares its caller's).
    context: crate::context::RunContext,
    /// The long-term memory the nodes reach through their context.
    store: Option<Arc<dyn crate::store::Store>>,
    /// Where a root run of a state without managed fields finds and leaves
    /// its thread's state between runs.
    warm: Option<Arc<WarmStates<S>>>,
    /// The vector of the last step's tasks, emptied, for the next step's.
    spare_tasks: Vec<Task<S>>,
    /// A test's hold before each superstep's tasks (`crate::testing::Stepper`).
    #[cfg(feature = "test-util")]
    gate: Option<Arc<gate::Gate<S>>>,
}

/// A run of [`Run::run_held`] holding its thread, with the saver's guard and
/// the lease: dropped before [`Run::end_run`] took them (the run's future
/// dropped: cancelled), it stores what the run made (see
/// [`Run::store_when_cancelled`]).
struct OnCancel<'r, S: State> {
    run: &'r mut Run<S>,
    held: Option<(crate::checkpoint::RunGuard, Option<lease::ThreadLease>)>,
}

impl<S: State> Drop for OnCancel<'_, S> {
    fn drop(&mut self) {
        if let Some((guard, lease)) = self.held.take() {
            self.run.store_when_cancelled(guard, lease);
        }
    }
}

/// What a subgraph's run knows about the task that runs it.
pub(crate) struct Nested {
    /// The calling run is resuming (its first superstep): continue this graph's
    /// checkpoint rather than start over from the input.
    resuming: bool,
    /// The subgraph keeps one namespace across calls (its state persists).
    persistent: bool,
    /// The enclosing graphs' checkpoint ids, by namespace.
    parents: Arc<crate::scope::Ancestors>,
    /// The caller's `Command::resume` value, for an interrupt with no answer of
    /// its own.
    null_resume: Option<Arc<NullResume>>,
    /// How many graphs this one runs nested in (1 for a subgraph of the root).
    depth: usize,
}

/// What the first superstep of a run starts from ([`Run::begin`]).
struct Start {
    /// The checkpoint the run continues, if any.
    loaded: Option<CheckpointTuple>,
    /// The writes stored for its tasks (a resumed run's first step only).
    pending: Vec<PendingWrite>,
    /// A checkpoint named by id is replayed: its tasks run again, even those
    /// whose writes were stored.
    replaying: bool,
}

/// How a superstep ended ([`Run::superstep`]).
enum Next<S: State> {
    /// The run goes on with the next superstep.
    Continue,
    /// No task was left: the run completed.
    Done,
    /// The run stopped at an interrupt or a breakpoint, with this output.
    Paused(GraphOutput<Arc<S>>),
}

impl<S: State> Run<S> {
    /// A run of `graph` as `config` says, streaming to `events` and storing
    /// through `saver`.
    pub(crate) fn new(
        graph: Arc<Graph<S>>,
        config: RunConfig,
        events: Option<EventSink<S>>,
        saver: Option<Arc<dyn Checkpointer>>,
    ) -> Result<Self, GraphError> {
        if config.recursion_limit() < 1 {
            return Err(GraphError::InvalidConfig(ConfigError::RecursionLimitTooLow));
        }
        // The buffers of an earlier run of the graph, if one left them.
        let mut spare = spare::take(&graph.spares);
        let saver = match saver {
            Some(saver) => Some(root_saver(&config, saver, graph.num_fields(), &mut spare)?),
            None => None,
        };
        let n = graph.num_channels();
        let mut control = std::mem::take(&mut spare.control);
        control.extend(graph.control.iter().map(ControlChannel::new));
        Ok(Run {
            schedule: Schedule::new(n, graph.nodes.len(), saver.is_some(), &mut spare),
            persist: Persist::new(saver, &mut spare),
            interrupts: Interrupts::new(&graph, &config, &mut spare)?,
            stream: Streaming::new(events),
            control,
            graph,
            config,
            state: Arc::new(S::default()),
            fields: S::new_channels(),
            start_input: None,
            sends: Vec::new(),
            ns: root_namespace(),
            nested: None,
            cache: None,
            context: None,
            store: None,
            warm: None,
            spare_tasks: Vec::new(),
            #[cfg(feature = "test-util")]
            gate: None,
        })
    }

    /// The run with the compiled graph's node cache.
    pub(crate) fn with_cache(&mut self, cache: Option<Arc<dyn crate::cache::Cache>>) -> &mut Self {
        self.cache = cache;
        self
    }

    /// The run with the compiled graph's warm states (see `warm`); only a
    /// root run of a state without managed fields uses them.
    pub(crate) fn with_warm(&mut self, warm: &Arc<WarmStates<S>>) -> &mut Self {
        if !S::HAS_MANAGED && self.nested.is_none() {
            self.warm = Some(Arc::clone(warm));
        }
        self
    }

    /// The run with its context value, which its nodes and routers read.
    pub(crate) fn with_context(&mut self, context: crate::context::RunContext) -> &mut Self {
        self.context = context;
        self
    }

    /// The run with the compiled graph's store (a nested run keeps the one of
    /// the graph it runs in, if that has one).
    pub(crate) fn with_store(&mut self, store: Option<Arc<dyn crate::store::Store>>) -> &mut Self {
        if self.store.is_none() {
            self.store = store;
        }
        self
    }

    /// Runs from `input` until no task is left, or until the run pauses at an
    /// interrupt or a breakpoint; returns the state and why it paused.
    ///
    /// An `async` block, not an `async fn`: an `async fn` keeps its
    /// arguments twice in its future (as passed, and moved into its body),
    /// and the run is 840 bytes.
    #[allow(clippy::manual_async_fn)]
    pub(crate) fn run(
        mut self,
        input: GraphInput<S>,
    ) -> impl std::future::Future<Output = Result<GraphOutput<Arc<S>>, GraphError>> + std::marker::Send
    {
        async move {
            use tracing::Instrument;
            let span = tracing::debug_span!("graph_run", thread_id = self.config.thread_id());
            // The run stays where it is (in this future): the instrumented
            // future borrows it instead of moving it once more.
            let result = self.run_held(input).instrument(span).await;
            self.leave_spare();
            result
        }
    }

    /// Leaves the run's buffers to the graph's next run (see `spare`).
    fn leave_spare(&mut self) {
        use std::mem::take;
        let (step_writes, appends) = match &mut self.persist.saver {
            Some(p) => (take(&mut p.step_writes), p.appends.take()),
            None => Default::default(),
        };
        let mut seen_rows = take(&mut self.schedule.spare_rows);
        seen_rows.extend(self.schedule.seen.iter_mut().filter_map(Option::take));
        spare::keep(
            &self.graph.spares,
            spare::Spare {
                versions: take(&mut self.schedule.versions.values),
                seen: take(&mut self.schedule.seen),
                seen_rows,
                candidates: take(&mut self.schedule.candidates),
                live_branches: take(&mut self.schedule.live_branches),
                restored_versions: take(&mut self.persist.restored_versions),
                interrupts_seen: take(&mut self.interrupts.seen),
                control: take(&mut self.control),
                step_writes,
                appends,
            },
        );
    }

    /// [`run`](Self::run), within its span: holds the thread, runs the steps,
    /// and lets the thread go.
    async fn run_held(&mut self, input: GraphInput<S>) -> Result<GraphOutput<Arc<S>>, GraphError> {
        let lease = self.lease().await?;
        let guard = self.begin_run().await?;
        self.write_through(&guard);
        let mut run = OnCancel {
            run: self,
            held: Some((guard, lease)),
        };
        let result = unwind::contain(run.run.run_steps(input)).await;
        let Some((guard, lease)) = run.held.take() else {
            unreachable!("only the run's end takes its guard")
        };
        let output = run.run.end_run(guard, result).await;
        drop(lease);
        output
    }

    /// The superstep loop.
    async fn run_steps(&mut self, input: GraphInput<S>) -> Result<GraphOutput<Arc<S>>, GraphError> {
        let mut start = self.begin(input).await?;
        loop {
            match self.superstep(&mut start).await? {
                Next::Continue => {}
                Next::Done => return self.finish().await,
                Next::Paused(output) => {
                    self.persist.flush_at_end().await?;
                    return Ok(output);
                }
            }
        }
    }

    /// Loads the thread's checkpoint and takes the input: new input starts
    /// from `__start__` (stored as an `input` checkpoint); no input or a
    /// `Command` resumes the loaded checkpoint with its stored writes.
    async fn begin(&mut self, input: GraphInput<S>) -> Result<Start, GraphError> {
        let mut loaded = self.load().await?;
        if let Some(tuple) = &mut loaded {
            // Restored: the run needs the checkpoint's writes and metadata, not
            // its values. Dropping them lets a saver that shares its newest
            // values (the in-memory saver, extending a list in place) update
            // them without a copy.
            tuple.checkpoint.channel_values = crate::checkpoint::NameMap::new();
        }
        let limit = self.limit();
        let has_versions = self.schedule.versions.max > 0;
        if let Some(nested) = &self.nested {
            self.interrupts.null_resume = nested.null_resume.clone();
        }
        let replaying = self.config.checkpoint_id().is_some();
        // A subgraph re-run by a resuming parent continues its own checkpoint.
        let continues = has_versions && self.nested.as_ref().is_some_and(|n| n.resuming);
        let resume = match input.kind {
            InputKind::Update(_) if continues => Some(None),
            InputKind::Update(mut update) => {
                // Private fields are not part of the graph's input.
                S::without_private(&mut update);
                self.start_with_input(update, limit).await?;
                None
            }
            InputKind::Command(cmd) if !has_versions => {
                let update = self.command_on_new_thread(cmd)?;
                self.start_with_input(update, limit).await?;
                None
            }
            InputKind::Command(cmd) => Some(Some(cmd)),
            InputKind::None if has_versions => Some(None),
            InputKind::None => return Err(GraphError::EmptyInput(EmptyInputError::NoInput)),
        };
        let pending = match (resume, &mut loaded) {
            (Some(cmd), Some(tuple)) => {
                self.schedule.limit_steps(limit);
                self.interrupts.resuming = true;
                // Moved out: the run reads them from `Start::pending` from now on.
                let stored = std::mem::take(&mut tuple.pending_writes);
                self.resume_from(tuple, stored, cmd, replaying).await?
            }
            _ => Vec::new(),
        };
        Ok(Start {
            loaded,
            pending,
            replaying,
        })
    }

    /// One superstep: prepare its tasks, stop at a breakpoint before them, run
    /// them, and either stop (a failure, a command for the parent, an
    /// interrupt) or apply their writes and store the new checkpoint.
    async fn superstep(&mut self, start: &mut Start) -> Result<Next<S>, GraphError> {
        use tracing::Instrument;
        if self.schedule.step > self.schedule.stop {
            self.save_on_exit().await?;
            return Err(GraphError::RecursionLimit {
                limit: self.config.recursion_limit(),
            });
        }
        self.set_managed();
        let mut tasks = self.prepare()?;
        if self.persist.deferred.is_some() && tasks.iter().any(|t| t.node != 0) {
            // A node is about to run: the checkpoints before it are stored first.
            self.persist.flush_puts().await?;
        }
        if tasks.is_empty() && self.persist.deferred.is_some() && self.persist.stored_at_release {
            // The run's last checkpoint is stored with the thread's release,
            // and its event follows it there (see `Persist::event_at_release`).
            self.persist.event_at_release = true;
        } else {
            self.emit_checkpoint(&tasks);
        }
        if tasks.is_empty() {
            self.spare_tasks = tasks;
            return Ok(Next::Done);
        }
        tracing::trace!(
            step = self.schedule.step,
            tasks = tasks.len(),
            checkpoint = %ids::format_uuid(&self.persist.checkpoint),
            "superstep"
        );
        // Only the first superstep of a resumed run has stored writes: the
        // writes of tasks that completed (not re-run, unless replaying) and the
        // answers of tasks that paused at an interrupt.
        let (restored, answers) = match &start.loaded {
            Some(tuple) if !start.pending.is_empty() => {
                self.restore_pending(tuple, &tasks, &start.pending, !start.replaying)?
            }
            _ => (tasks.iter().map(|_| None).collect(), Vec::new()),
        };
        // The stored results of task calls (`crate::func`), for the tasks'
        // entrypoints to reuse (not when replaying: those run again).
        let pending = std::mem::take(&mut start.pending);
        let saved_calls = (!start.replaying)
            .then(|| crate::func::saved_calls(pending))
            .flatten();
        if self.should_interrupt(&self.interrupts.before, &tasks) {
            return self.stop_before(&tasks, restored).await.map(Next::Paused);
        }
        #[cfg(feature = "test-util")]
        if self.gate.is_some() {
            let done: Vec<bool> = restored.iter().map(Option::is_some).collect();
            self.at_gate(&tasks, &done).await;
        }
        self.emit_task_starts(&tasks, &restored);
        let sent_before = self.stream.sent();
        let span =
            tracing::debug_span!("superstep", step = self.schedule.step, tasks = tasks.len());
        let mut step = self
            .execute(&mut tasks, restored, answers, saved_calls)
            .instrument(span.clone())
            .await;
        if let Some(failure) = step.failure.take() {
            self.emit_task_failure(&tasks, &failure);
            self.persist_step(&tasks, &mut step.results, Some(&failure))
                .await?;
            return Err(failure);
        }
        if let Some(invalid) = step.late.take() {
            return Err(invalid);
        }
        // A command for the parent wins over a sibling's pause, as in
        // LangGraph: the graph ends with the command, not paused.
        if let Some((i, command)) = step.take_parent_command() {
            // The command leaves this graph: the task stores nothing, its
            // siblings keep their writes, and a sibling's pause its
            // interrupt (docs/semantics.md §8.5).
            self.persist_step(&tasks, &mut step.results, None).await?;
            return Err(GraphError::ParentCommand {
                node: self.graph.nodes[tasks[i].node].name.to_string(),
                task_id: tasks[i].id.clone(),
                command,
            });
        }
        if step.interrupted() {
            return self
                .pause_at_interrupts(&tasks, step.results)
                .await
                .map(Next::Paused);
        }
        // Collected in place (`flatten` would allocate a new vector).
        #[allow(clippy::filter_map_identity)]
        let results = step.results.into_iter().filter_map(|r| r).collect();
        // An error leaves the writes of the step's tasks to `settle_puts`.
        span.in_scope(|| self.apply(&tasks, results, None, true))?;
        self.save(CheckpointSource::Loop).await?;
        self.schedule.step += 1;
        self.interrupts.step_done();
        if self.should_interrupt(&self.interrupts.after, &tasks) {
            return self.stop_after(&tasks).await.map(Next::Paused);
        }
        tasks.clear();
        self.spare_tasks = tasks;
        if self.stream.sent() != sent_before {
            // Hand this step's events to the consumer before the next step
            // mutates the state: a consumer that drops each event then leaves
            // the engine the only owner, and `make_mut` updates in place.
            YieldOnce(false).await;
        }
        Ok(Next::Continue)
    }

    /// The run completed: its last checkpoint is stored (durability `exit`)
    /// and every background put has completed.
    async fn finish(&mut self) -> Result<GraphOutput<Arc<S>>, GraphError> {
        // Under durability `exit`, a subgraph that completes stores nothing unless
        // it keeps its state across calls (docs/semantics.md §2.10).
        let exit = self.persist.durability() == Some(Durability::Exit);
        if exit && self.nested.as_ref().is_some_and(|n| !n.persistent) {
            self.persist.flush_puts().await?;
        } else {
            self.save_on_exit().await?;
        }
        Ok(GraphOutput::finished(Arc::clone(&self.state)))
    }

    /// The recursion limit, as a number of steps.
    pub(super) fn limit(&self) -> i64 {
        i64::try_from(self.config.recursion_limit()).unwrap_or(i64::MAX / 4)
    }

    /// Sets the managed values (`remaining_steps`, `is_last_step`) in the state,
    /// before `prepare` hands it to tasks, so it is set in place.
    fn set_managed(&mut self) {
        if S::HAS_MANAGED {
            let managed = ManagedValues {
                remaining_steps: self.schedule.stop - self.schedule.step,
                is_last_step: self.schedule.step == self.schedule.stop - 1,
            };
            Arc::make_mut(&mut self.state).set_managed(&managed);
        }
    }

    /// New input: written to `__start__` as a new `input` checkpoint, which the
    /// run continues from.
    async fn start_with_input(&mut self, update: S::Update, limit: i64) -> Result<(), GraphError> {
        self.schedule.limit_steps(limit);
        self.apply_graph_input(update)?;
        if self.graph.direct_input {
            self.run_start_inline()?;
        }
        self.save(CheckpointSource::Input).await?;
        self.schedule.step += 1;
        Ok(())
    }
}

impl<S: State> Run<S> {
    /// The `__start__` step of a graph whose input is applied by its `input`
    /// checkpoint (LangGraph's entrypoints): the input's writes and the edges
    /// from `START` are applied now, so the checkpoint's next step runs the
    /// nodes after `START`. Its state is not a `values` event: LangGraph's
    /// entrypoint streams its output only.
    fn run_start_inline(&mut self) -> Result<(), GraphError> {
        let tasks = self.prepare()?;
        if tasks.iter().any(|t| t.node != 0) {
            return Ok(());
        }
        let updates = self.start_input.clone().unwrap_or_default();
        let results = tasks
            .iter()
            .map(|_| {
                writes::TaskResult::Output(crate::node::NodeOutput {
                    updates: updates.clone(),
                    ..Default::default()
                })
            })
            .collect();
        let events = self.stream.events.take();
        let applied = self.apply(&tasks, results, None, true);
        self.stream.events = events;
        applied
    }
}

/// A root run's saver: its thread's root namespace, at the configured
/// checkpoint. Not generic over the state, so that it is compiled once.
fn root_saver(
    config: &RunConfig,
    saver: Arc<dyn Checkpointer>,
    num_fields: usize,
    spare: &mut spare::Spare,
) -> Result<Box<Saver>, GraphError> {
    let Some(thread) = config.shared_thread_id() else {
        return Err(GraphError::InvalidConfig(
            ConfigError::NoThreadForCheckpointer,
        ));
    };
    let step_writes = std::mem::take(&mut spare.step_writes);
    let spare_appends = spare.appends.take();
    Ok(Box::new(Saver {
        thread: thread.clone(),
        config: crate::checkpoint::CheckpointConfig {
            thread_id: thread.clone(),
            // A root run always uses the root namespace.
            checkpoint_ns: SharedStr::default(),
            checkpoint_id: config.shared_checkpoint_id().cloned(),
        },
        durability: config.durability(),
        parent_id: None,
        book: persist::Book::default(),
        step_writes,
        appends: saver
            .stores_appends()
            .then(|| append::Appends::reusing(spare_appends, num_fields)),
        saver,
    }))
}
