//! The Pregel superstep loop (docs/semantics.md §2): prepare the tasks a step triggers,
//! run them concurrently, apply their writes in deterministic task order, repeat.

mod control;
mod execute;

mod lease;
mod nested;
mod pause;
mod persist;
mod resume;
mod snapshot;
mod writes;

use crate::checkpoint::{
    Blob, CheckpointConfig, CheckpointSource, CheckpointTuple, Checkpointer, PendingWrite,
};
use crate::command::Send;
use crate::compiled::Graph;
use crate::config::{Durability, RunConfig};
use crate::error::{BreakpointSide, ConfigError, EmptyInputError, GraphError, SendError};
use crate::ids::{self, TaskIds, TaskPath};
use crate::interrupt::{Breakpoints, NullResume};
use crate::io::{GraphInput, GraphOutput, InputKind};
use crate::node::TaskInput;
use crate::snapshot::NodeUpdate;
use crate::state::{FieldSet, ManagedValues, State};
use crate::stream::{Namespace, NestedEvents, StreamEvent, StreamMode, StreamModes, SubgraphEvent};
use crate::unwind;
use control::ControlChannel;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;
use writes::TaskResult;

pub(crate) use crate::scope::StepScope;
pub(crate) use nested::recast;
pub(crate) use pause::TaskInterrupt;

/// Where a run reports its stream events.
pub(crate) struct EventSink<S: State> {
    modes: StreamModes,
    deliver: Box<dyn Fn(StreamEvent<S>) + std::marker::Send + Sync>,
    sent: std::sync::atomic::AtomicUsize,
}

impl<S: State> EventSink<S> {
    /// The sink of a root run: events go to the caller's stream.
    pub(crate) fn to_stream(modes: StreamModes, tx: UnboundedSender<StreamEvent<S>>) -> Self {
        EventSink {
            modes,
            // A dropped receiver means nobody listens any more; the run still completes.
            deliver: Box::new(move |event| drop(tx.send(event))),
            sent: Default::default(),
        }
    }

    /// The sink of a nested run at `ns`: events go up to the root's stream.
    pub(crate) fn nested(events: &NestedEvents, ns: &str) -> Self {
        let forward = Arc::clone(&events.forward);
        let namespace = Namespace::parse(ns);
        EventSink {
            modes: events.modes,
            deliver: Box::new(move |event| forward(namespace.clone(), SubgraphEvent::new(event))),
            sent: Default::default(),
        }
    }

    fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }

    fn emit(&self, event: StreamEvent<S>) {
        self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (self.deliver)(event);
    }

    fn sent(&self) -> usize {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }
}

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

/// Channel versions, indexed by channel id (0 = never written). The maximum is
/// tracked so a step's next version costs O(1), not O(channels), and so are the
/// channels whose version changed since the last stored checkpoint: storing one
/// costs what changed, not the size of the graph.
#[derive(Clone)]
pub(crate) struct Versions {
    values: Vec<u64>,
    max: u64,
    /// Channels set since [`clear_changed`](Self::clear_changed), in the order
    /// first set (tracked only for a run that stores checkpoints).
    changed: smallvec::SmallVec<[usize; 8]>,
    is_changed: FieldSet,
    track: bool,
}

impl Versions {
    fn new(n: usize, track: bool) -> Self {
        Versions {
            values: vec![0; n],
            max: 0,
            changed: smallvec::SmallVec::new(),
            is_changed: FieldSet::default(),
            track,
        }
    }

    fn set(&mut self, channel: usize, version: u64) {
        self.values[channel] = version;
        self.max = self.max.max(version);
        if self.track && !self.is_changed.contains(channel) {
            self.is_changed.insert(channel);
            self.changed.push(channel);
        }
    }

    /// Whether `channel` was set since the last stored checkpoint.
    fn is_changed(&self, channel: usize) -> bool {
        self.is_changed.contains(channel)
    }

    /// The channels set since the last stored checkpoint.
    fn changed(&self) -> &[usize] {
        &self.changed
    }

    /// Every version is stored now.
    fn clear_changed(&mut self) {
        for c in self.changed.drain(..) {
            self.is_changed.remove(c);
        }
    }
}

impl std::ops::Index<usize> for Versions {
    type Output = u64;

    fn index(&self, channel: usize) -> &u64 {
        &self.values[channel]
    }
}

/// The random fraction of the version strings a run makes, LangGraph's
/// `.{random():016}` (e.g. `.0.8719233457614553`): two runs forking one checkpoint
/// make the same version numbers, and must not collide on a blob key.
fn version_salt() -> [u8; VERSION_SALT_LEN] {
    let mut salt = *b".0.0000000000000000";
    ids::put_digits(&mut salt[3..], fastrand::u64(..10_000_000_000_000_000));
    salt
}

/// The length of a run's version salt (`.0.` and 16 digits).
pub(crate) const VERSION_SALT_LEN: usize = 19;

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
    pub(crate) path: TaskPath,
    pub(crate) id: String,
    pub(crate) input: Option<TaskInput<S>>,
}

/// Where a run persists: the saver, the checkpoint its next put descends from,
/// and what the run tracks to build each checkpoint in what changed. Boxed in
/// the run: a run without a saver (a subgraph in a fan-out, say) stays small.
struct Persistence {
    saver: Arc<dyn Checkpointer>,
    /// Thread and namespace; `checkpoint_id` = the last checkpoint stored (the parent).
    config: CheckpointConfig,
    durability: Durability,
    book: persist::Book,
}

/// The live state of one run of a compiled graph.
pub(crate) struct Run<S: State> {
    graph: Arc<Graph<S>>,
    config: Arc<RunConfig>,
    state: Arc<S>,
    fields: S::Channels,
    control: Vec<ControlChannel>,
    /// The `__start__` channel: the graph input, one update per written field.
    start_input: Option<Vec<S::Update>>,
    sends: Vec<Send>,
    versions: Versions,
    /// Version strings read from a checkpoint, kept verbatim (they key stored blobs).
    restored_versions: Vec<Option<(u64, crate::checkpoint::SharedStr)>>,
    /// The random fraction of version strings made by this run.
    version_salt: [u8; VERSION_SALT_LEN],

    /// Per node: the version of each trigger when the node last ran.
    seen: Vec<Option<Vec<u64>>>,
    /// Channels updated (and available) by the previous step.
    updated: FieldSet,
    /// Whether `updated` is known (false right after loading an old checkpoint).
    updated_known: bool,
    /// Control channels of the ephemeral kind currently holding a value.
    live_branches: Vec<usize>,
    step: i64,
    stop: i64,
    /// The id of the current checkpoint (the state the next step starts from).
    checkpoint: [u8; 16],
    /// Whether the current checkpoint has been stored (or is being stored).
    checkpoint_saved: bool,
    /// The put running in the background (durability `async`).
    background_put: Option<tokio::task::JoinHandle<Result<(), crate::checkpoint::CheckpointError>>>,
    /// Source and step of the current checkpoint (stored later under `exit`).
    pending_source: CheckpointSource,
    checkpoint_step: i64,
    ids: TaskIds,
    /// `prepare`'s list of nodes to check, kept between steps.
    candidates: Vec<usize>,
    events: Option<Arc<EventSink<S>>>,
    persistence: Option<Box<Persistence>>,
    /// Per channel: its version when the thread was last resumed
    /// (`versions_seen["__interrupt__"]`, 0 = never); breakpoints fire only after
    /// something changed since.
    interrupt_seen: Vec<u64>,
    /// The highest of `interrupt_seen` when it was set: any version above it
    /// was written since (every new version is above all earlier ones).
    interrupt_seen_max: u64,
    /// A restored checkpoint had a channel newer than `interrupt_seen`.
    interrupt_changed: bool,

    interrupt_before: Breakpoints,
    interrupt_after: Breakpoints,
    /// `Command::resume`'s value, for the first superstep of the run.
    null_resume: Option<Arc<NullResume>>,
    /// `Command::resume_map`'s answers by interrupt id.
    resume_map: Vec<(String, Blob)>,
    /// The checkpoint namespace of this run (`""` at the root).
    ns: Arc<str>,
    /// Whether the current superstep is the first of a resumed run.
    resuming: bool,
    /// Set when this run is a subgraph running inside a task of another graph.
    nested: Option<Nested>,
    /// Where graphs nested in this run send their events (`subgraphs` streaming).
    nested_events: Option<NestedEvents>,
    /// Where nodes with a cache policy keep their results.
    cache: Option<Arc<dyn crate::cache::Cache>>,
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

impl<S: State> Run<S> {
    pub(crate) fn new(
        graph: Arc<Graph<S>>,
        config: RunConfig,
        events: Option<EventSink<S>>,
        saver: Option<Arc<dyn Checkpointer>>,
    ) -> Result<Self, GraphError> {
        if config.get_recursion_limit() < 1 {
            return Err(GraphError::InvalidConfig(ConfigError::RecursionLimitTooLow));
        }
        let persistence = match saver {
            Some(saver) => {
                let Some(thread_id) = config.thread_id() else {
                    return Err(GraphError::InvalidConfig(
                        ConfigError::NoThreadForCheckpointer,
                    ));
                };
                Some(Box::new(Persistence {
                    saver,
                    config: CheckpointConfig {
                        thread_id: thread_id.to_owned(),
                        // A root run always uses the root namespace.
                        checkpoint_ns: String::new(),
                        checkpoint_id: config.get_checkpoint_id().map(str::to_owned),
                    },
                    durability: config.get_durability(),
                    book: persist::Book::default(),
                }))
            }
            None => None,
        };
        let n = graph.num_channels();
        let control = graph.control.iter().map(ControlChannel::new).collect();
        let events = events.map(Arc::new);
        let nested_events = events
            .as_ref()
            .filter(|e| e.modes.includes_subgraphs())
            .map(|root| {
                let root = Arc::clone(root);
                NestedEvents {
                    modes: root.modes,
                    forward: Arc::new(move |namespace, event| {
                        root.emit(StreamEvent::Subgraph { namespace, event })
                    }),
                }
            });
        let interrupt_before = Self::breakpoints(&graph, config.get_interrupt_before(), true)?;
        let interrupt_after = Self::breakpoints(&graph, config.get_interrupt_after(), false)?;
        Ok(Run {
            interrupt_seen: vec![0; n],
            interrupt_seen_max: 0,
            interrupt_changed: false,

            interrupt_before,
            interrupt_after,
            null_resume: None,
            resume_map: Vec::new(),
            ns: root_namespace(),
            resuming: false,
            nested: None,
            nested_events,
            cache: None,
            seen: vec![None; graph.nodes.len()],
            graph,
            config: Arc::new(config),
            state: Arc::new(S::default()),
            fields: S::new_channels(),
            control,
            start_input: None,
            sends: Vec::new(),
            versions: Versions::new(n, persistence.is_some()),
            restored_versions: vec![None; n],
            version_salt: version_salt(),

            updated: FieldSet::with_capacity(n),
            updated_known: true,
            live_branches: Vec::new(),
            step: -1,
            stop: 0,
            checkpoint: [0; 16],
            checkpoint_saved: false,
            background_put: None,
            pending_source: CheckpointSource::Input,
            checkpoint_step: -1,
            ids: TaskIds::default(),
            candidates: Vec::new(),
            events,
            persistence,
        })
    }

    /// Runs from `input` until no task is left, or until the run pauses at an
    /// interrupt or a breakpoint; returns the state and why it paused.
    pub(crate) async fn run(self, input: GraphInput<S>) -> Result<GraphOutput<Arc<S>>, GraphError> {
        use tracing::Instrument;
        let span = tracing::debug_span!("graph_run", thread_id = self.config.thread_id());
        async move {
            let _lease = self.lease()?;
            let guard = self.begin_run().await?;
            let mut run = self.write_through(&guard);
            let result = unwind::contain(run.run_steps(input)).await;
            if let Err(e) = &result {
                run.settle_puts(e).await;
            }
            guard.release().await;
            result
        }
        .instrument(span)
        .await
    }

    /// A run that fails still waits for the checkpoint it was storing in the
    /// background (durability `async`) before it returns and gives up its
    /// thread: the next run then reads that checkpoint, not the one before it.
    async fn settle_puts(&mut self, failure: &GraphError) {
        if let Err(e) = self.flush_puts().await {
            tracing::warn!(error = %e, %failure, "a failed run could not store its last checkpoint");
        }
    }

    async fn run_steps(&mut self, input: GraphInput<S>) -> Result<GraphOutput<Arc<S>>, GraphError> {
        use tracing::Instrument;
        let loaded = self.load().await?;
        let limit = i64::try_from(self.config.get_recursion_limit()).unwrap_or(i64::MAX / 4);
        let has_versions = self.versions.max > 0;
        if let Some(nested) = &self.nested {
            self.null_resume = nested.null_resume.clone();
        }
        // A checkpoint named by id is replayed: its tasks run again, even those
        // whose writes were stored.
        let replaying = self.config.get_checkpoint_id().is_some();
        // A subgraph re-run by a resuming parent continues its own checkpoint.
        let continues = has_versions && self.nested.as_ref().is_some_and(|n| n.resuming);
        let resume = match input.kind {
            InputKind::Update(_) if continues => Some(None),
            InputKind::Update(update) => {
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
        let mut pending: Vec<PendingWrite> = match (resume, &loaded) {
            (Some(cmd), Some(tuple)) => {
                self.stop = self.step + limit + 1;
                self.resuming = true;
                self.resume_from(tuple, cmd, replaying).await?
            }
            _ => Vec::new(),
        };

        let mut first = true;
        loop {
            if self.step > self.stop {
                self.save_on_exit().await?;
                return Err(GraphError::RecursionLimit {
                    limit: self.config.get_recursion_limit(),
                });
            }
            if S::HAS_MANAGED {
                // Before `prepare` hands the state to tasks, so it is set in place.
                let managed = ManagedValues {
                    remaining_steps: self.stop - self.step,
                    is_last_step: self.step == self.stop - 1,
                };
                Arc::make_mut(&mut self.state).set_managed(&managed);
            }
            let mut tasks = self.prepare()?;
            self.emit_checkpoint(&tasks);
            if tasks.is_empty() {
                break;
            }
            tracing::trace!(
                step = self.step,
                tasks = tasks.len(),
                checkpoint = %ids::format_uuid(&self.checkpoint),
                "superstep"
            );
            // Only the first superstep of a resumed run has stored writes: the
            // writes of tasks that completed (not re-run, unless replaying) and the
            // answers of tasks that paused at an interrupt.
            let (restored, answers) = match &loaded {
                Some(tuple) if first && !pending.is_empty() => {
                    self.restore_pending(tuple, &tasks, &pending, !replaying)?
                }
                _ => (tasks.iter().map(|_| None).collect(), Vec::new()),
            };
            pending.clear();
            if self.should_interrupt(&self.interrupt_before, &tasks) {
                return self.stop_before(&tasks, restored).await;
            }
            self.emit_task_starts(&tasks, &restored);
            let sent_before = self.events.as_ref().map_or(0, |e| e.sent());
            let span = tracing::debug_span!("superstep", step = self.step, tasks = tasks.len());
            let mut step = self
                .execute(&mut tasks, restored, answers)
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
                return self.pause_at_interrupts(&tasks, step.results).await;
            }
            let results = step.results.into_iter().flatten().collect();
            span.in_scope(|| self.apply(&tasks, results, None, true))?;
            self.save(CheckpointSource::Loop).await?;
            self.step += 1;
            first = false;
            self.resuming = false;
            self.null_resume = None;
            self.resume_map.clear();
            if self.should_interrupt(&self.interrupt_after, &tasks) {
                return self.stop_after(&tasks).await;
            }
            if self
                .events
                .as_ref()
                .is_some_and(|e| e.sent() != sent_before)
            {
                // Hand this step's events to the consumer before the next step
                // mutates the state: a consumer that drops each event then leaves
                // the engine the only owner, and `make_mut` updates in place.
                YieldOnce(false).await;
            }
        }
        // Under durability `exit`, a subgraph that completes stores nothing unless
        // it keeps its state across calls (docs/semantics.md §2.10).
        let exit = self.persistence.as_ref().map(|p| p.durability) == Some(Durability::Exit);
        if exit && self.nested.as_ref().is_some_and(|n| !n.persistent) {
            self.flush_puts().await?;
        } else {
            self.save_on_exit().await?;
        }
        Ok(GraphOutput::finished(Arc::clone(&self.state)))
    }

    /// New input: written to `__start__` as a new `input` checkpoint, which the
    /// run continues from.
    async fn start_with_input(&mut self, update: S::Update, limit: i64) -> Result<(), GraphError> {
        self.stop = self.step + limit + 1;
        self.apply_graph_input(update)?;
        self.save(CheckpointSource::Input).await?;
        self.step += 1;
        Ok(())
    }

    /// The run with the compiled graph's node cache.
    pub(crate) fn with_cache(mut self, cache: Option<Arc<dyn crate::cache::Cache>>) -> Self {
        self.cache = cache;
        self
    }

    /// The breakpoints of a run: the call's, else the graph's.
    fn breakpoints(
        graph: &Graph<S>,
        call: Option<&Breakpoints>,
        before: bool,
    ) -> Result<Breakpoints, GraphError> {
        let Some(call) = call else {
            return Ok(if before {
                graph.interrupt_before.clone()
            } else {
                graph.interrupt_after.clone()
            });
        };
        if let Breakpoints::Nodes(names) = call {
            if let Some(unknown) = names
                .iter()
                .find(|n| graph.node_by_name.get(n.as_str()).is_none_or(|&i| i == 0))
            {
                return Err(GraphError::InvalidConfig(ConfigError::UnknownBreakpoint {
                    side: if before {
                        BreakpointSide::Before
                    } else {
                        BreakpointSide::After
                    },
                    node: unknown.clone(),
                }));
            }
        }
        Ok(call.clone())
    }

    /// The saver's guard of the thread of a run that is not nested in another
    /// ([`Checkpointer::begin_run`]): across processes, what the lease is within
    /// one. A run at a subgraph's namespace (`update_state` of a subgraph's
    /// state) holds the whole thread too; a nested run is covered by its root's.
    async fn begin_run(&self) -> Result<crate::checkpoint::RunGuard, GraphError> {
        use crate::checkpoint::RunGuard;
        let Some(p) = self.persistence.as_ref().filter(|_| self.nested.is_none()) else {
            return Ok(RunGuard::none());
        };
        Ok(p.saver
            .begin_run(&p.config.thread_id, &p.config.checkpoint_ns)
            .await?)
    }

    /// The run, storing through the guard's writer when it has one (a saver
    /// view that fences this run's writes; see `RunGuard::with_writer`). Graphs
    /// nested in the run use it too: they take the saver from the run.
    fn write_through(mut self, guard: &crate::checkpoint::RunGuard) -> Self {
        if let (Some(p), Some(writer)) = (&mut self.persistence, guard.writer()) {
            p.saver = Arc::clone(writer);
        }
        self
    }

    /// The lease on this run's thread and namespace (none without a saver).
    fn lease(&self) -> Result<Option<lease::ThreadLease>, GraphError> {
        self.persistence
            .as_ref()
            .map(|p| {
                lease::ThreadLease::acquire(&p.saver, &p.config.thread_id, &p.config.checkpoint_ns)
            })
            .transpose()
    }

    /// `update_state`: writes `values` as if node `as_node` had produced them,
    /// on top of the addressed (or latest) checkpoint, and stores the result as a
    /// new `update` checkpoint. Returns its config.
    pub(crate) async fn update_state(
        self,
        values: Option<S::Update>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig, GraphError> {
        self.bulk_update_state(vec![vec![NodeUpdate {
            values,
            as_node: as_node.map(str::to_owned),
        }]])
        .await
    }

    /// `bulk_update_state`: each superstep is a list of `(values, as_node)` applied
    /// together and stored as one checkpoint (docs/semantics.md §7.4).
    pub(crate) async fn bulk_update_state(
        self,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError> {
        if supersteps.is_empty() {
            return Err(GraphError::InvalidConfig(ConfigError::NoSupersteps));
        }
        if supersteps.iter().any(Vec::is_empty) {
            return Err(GraphError::InvalidConfig(ConfigError::NoUpdates));
        }
        let _lease = self.lease()?;
        let guard = self.begin_run().await?;
        let result =
            unwind::contain(self.write_through(&guard).bulk_update_steps(supersteps)).await;
        guard.release().await;
        result
    }

    async fn bulk_update_steps(
        mut self,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError> {
        let invalid = |m: &str| GraphError::InvalidUpdate(crate::error::InvalidUpdateError::new(m));
        let mut loaded = self.load().await?;
        let limit = i64::try_from(self.config.get_recursion_limit()).unwrap_or(i64::MAX / 4);
        for updates in supersteps {
            let special = updates.iter().find_map(|u| {
                u.as_node
                    .as_deref()
                    .filter(|n| [COPY, INPUT, crate::END].contains(n))
            });
            if let Some(special) = special {
                if updates.len() > 1 {
                    return Err(invalid(&format!(
                        "{special} cannot be combined with other updates in one superstep"
                    )));
                }
            }
            if updates.len() > 1 && updates.iter().any(|u| u.as_node.is_none()) {
                return Err(invalid(
                    "as_node is required when applying multiple updates",
                ));
            }
            match special {
                Some(COPY) => {
                    let copied = self.copy_checkpoint(loaded).await?;
                    return Ok(copied);
                }
                Some(INPUT) => {
                    // The values are graph input: an `input` checkpoint, `__start__` next.
                    let update = updates.into_iter().next().and_then(|u| u.values);
                    let update = update.ok_or_else(|| invalid("__input__ needs values"))?;
                    self.stop = self.step + limit + 1;
                    self.apply_graph_input(update)?;
                    self.store_update(CheckpointSource::Input).await?;
                }
                Some(_) => {
                    // END: tasks that completed keep their writes, the others are
                    // marked as run without writes: nothing is left to run.
                    self.stop = self.step + 2;
                    let mut tasks = self.prepare()?;
                    let restored = match &loaded {
                        Some(tuple) if !tuple.pending_writes.is_empty() => {
                            self.restore_pending(tuple, &tasks, &tuple.pending_writes, true)?
                                .0
                        }
                        _ => tasks.iter().map(|_| None).collect(),
                    };
                    let results = restored
                        .into_iter()
                        .map(|w| TaskResult::Restored(w.unwrap_or_default()))
                        .collect();
                    for task in &mut tasks {
                        task.input = None;
                    }
                    self.apply(&tasks, results, None, true)?;
                    self.store_update(CheckpointSource::Update).await?;
                }
                None => {
                    let graph = Arc::clone(&self.graph);
                    let mut tasks = Vec::with_capacity(updates.len());
                    let mut results = Vec::with_capacity(updates.len());
                    for (i, NodeUpdate { values, as_node }) in updates.into_iter().enumerate() {
                        let node = match as_node.as_deref() {
                            Some(name) => *graph
                                .node_by_name
                                .get(name)
                                .ok_or_else(|| invalid(&format!("Node {name} does not exist")))?,
                            None => self.infer_as_node()?,
                        };
                        let mut out = crate::node::NodeOutput::default();
                        if let Some(values) = values {
                            out = out.with_update(values);
                        }
                        let task = Task {
                            node,
                            // A pseudo task (LangGraph's triggers `[__interrupt__]`):
                            // no trigger is consumed, but the step is bumped.
                            path: TaskPath::Push(i),
                            id: String::new(),
                            input: None,
                        };
                        results.push(TaskResult::Restored(self.resolve_alone(&task, out)?));
                        tasks.push(task);
                    }
                    if loaded.is_none() && self.versions.max == 0 {
                        self.step = 0;
                    }
                    self.apply(&tasks, results, None, true)?;
                    self.store_update(CheckpointSource::Update).await?;
                }
            }
            // The next superstep builds on the checkpoint just stored.
            loaded = None;
            self.step += 1;
        }
        self.current_config()
    }

    /// Writes graph input to `__start__`. Tasks still pending at the current
    /// checkpoint are discarded: their triggers are marked seen, they never run.
    /// On a fresh thread there are none, and the write does not bump the step.
    fn apply_graph_input(&mut self, update: S::Update) -> Result<(), GraphError> {
        let discarded = self.prepare()?;
        let results = discarded
            .iter()
            .map(|_| TaskResult::Restored(Default::default()))
            .collect();
        let bump = !discarded.is_empty();
        self.apply(&discarded, results, Some(vec![update]), bump)
    }

    /// Stores the state as a checkpoint of `source` at the current step.
    /// Whatever the durability mode (updates and forks are stored at once).
    async fn store_update(&mut self, source: CheckpointSource) -> Result<(), GraphError> {
        self.new_checkpoint(source);
        self.put_current(source).await?;
        self.flush_puts().await
    }

    /// The state now is a new checkpoint of `source` at the current step, not yet
    /// stored.
    fn new_checkpoint(&mut self, source: CheckpointSource) {
        self.checkpoint = ids::checkpoint_id(self.step);
        self.checkpoint_saved = false;
        self.pending_source = source;
        self.checkpoint_step = self.step;
    }

    /// `update_state(.., as_node = "__copy__")`: the checkpoint again, unchanged, as a
    /// sibling (same parent) with a new id and source `fork`.
    async fn copy_checkpoint(
        self,
        loaded: Option<CheckpointTuple>,
    ) -> Result<CheckpointConfig, GraphError> {
        let Some(p) = &self.persistence else {
            return Err(GraphError::NoCheckpointer("update_state"));
        };
        let Some(tuple) = loaded else {
            return Err(GraphError::InvalidUpdate(
                crate::error::InvalidUpdateError::new(
                    "Cannot copy a checkpoint of a thread that has none",
                ),
            ));
        };
        let mut checkpoint = tuple.checkpoint.clone();
        checkpoint.id = ids::format_uuid(&ids::checkpoint_id(tuple.metadata.step + 1));
        checkpoint.ts = ids::now_iso8601();
        let mut metadata = tuple.metadata.clone();
        metadata.source = CheckpointSource::Fork;
        metadata.step = tuple.metadata.step + 1;
        let parent = CheckpointConfig {
            checkpoint_id: tuple
                .parent_config
                .as_ref()
                .and_then(|c| c.checkpoint_id.clone()),
            ..tuple.config.clone()
        };
        // Every version is already stored: the copy adds no blob.
        let stored = p
            .saver
            .put(&parent, checkpoint, metadata, Default::default())
            .await?;
        Ok(stored)
    }

    /// The node an update without `as_node` is attributed to (docs/semantics.md §7.3).
    fn infer_as_node(&self) -> Result<usize, GraphError> {
        let graph = &self.graph;
        if graph.nodes.len() == 2 {
            return Ok(1);
        }
        let latest: Vec<(usize, u64)> = self
            .seen
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(n, seen)| {
                seen.as_ref()
                    .map(|s| (n, s.iter().copied().max().unwrap_or(0)))
            })
            .collect();
        let Some(max) = latest.iter().map(|(_, v)| *v).max() else {
            return Ok(0);
        };
        let at_max: Vec<usize> = latest
            .iter()
            .filter(|(_, v)| *v == max)
            .map(|(n, _)| *n)
            .collect();
        match at_max.as_slice() {
            [only] => Ok(*only),
            _ => Err(GraphError::InvalidUpdate(
                crate::error::InvalidUpdateError::new("Ambiguous update, specify as_node"),
            )),
        }
    }

    fn current_config(&self) -> Result<CheckpointConfig, GraphError> {
        self.persistence
            .as_ref()
            .map(|p| p.config.clone())
            .ok_or(GraphError::NoCheckpointer("update_state"))
    }

    /// `checkpoints` mode: the checkpoint this step starts from (with a saver).
    fn emit_checkpoint(&self, tasks: &[Task<S>]) {
        let (Some(events), Some(p)) = (&self.events, &self.persistence) else {
            return;
        };
        if !events.wants(StreamMode::Checkpoints) {
            return;
        }
        let config = CheckpointConfig {
            checkpoint_id: Some(ids::format_uuid(&self.checkpoint)),
            ..p.config.clone()
        };
        let parent_config = if self.checkpoint_saved {
            None
        } else {
            p.config.checkpoint_id.as_ref().map(|_| p.config.clone())
        };
        events.emit(StreamEvent::Checkpoint(crate::stream::CheckpointEvent {
            config,
            parent_config,
            values: Arc::clone(&self.state),
            metadata: self.metadata(self.pending_source, self.checkpoint_step),
            next: tasks
                .iter()
                .map(|t| self.graph.nodes[t.node].name.to_string())
                .collect(),
        }));
    }

    /// `tasks` mode: a start event per task that will run (hidden `__start__` excluded).
    fn emit_task_starts(&self, tasks: &[Task<S>], restored: &[Option<writes::TaskWrites<S>>]) {
        let Some(events) = self.events.as_ref().filter(|e| e.wants(StreamMode::Tasks)) else {
            return;
        };
        for (task, restored) in tasks.iter().zip(restored) {
            if task.node == 0 || restored.is_some() {
                continue;
            }
            let spec = &self.graph.nodes[task.node];
            let triggers = match task.path {
                TaskPath::Push(_) => vec!["__pregel_push".to_owned()],
                TaskPath::Pull(_) => spec
                    .triggers
                    .iter()
                    .map(|&c| self.graph.channel_names[c].to_string())
                    .collect(),
            };
            events.emit(StreamEvent::TaskStart {
                id: task.id.clone(),
                name: Arc::clone(&spec.name),
                triggers,
            });
        }
    }

    fn emit_task_failure(&self, tasks: &[Task<S>], failure: &GraphError) {
        let Some(events) = self.events.as_ref().filter(|e| e.wants(StreamMode::Tasks)) else {
            return;
        };
        if let Some(task_id) = failure.failed_task() {
            if let Some(task) = tasks.iter().find(|t| t.id == task_id) {
                events.emit(StreamEvent::TaskResult {
                    id: task.id.clone(),
                    name: Arc::clone(&self.graph.nodes[task.node].name),
                    error: Some(failure.to_string()),
                    updates: Vec::new(),
                    interrupts: Vec::new(),
                });
            }
        }
    }

    /// Loads the thread's checkpoint (the addressed one, or the latest).
    async fn load(&mut self) -> Result<Option<CheckpointTuple>, GraphError> {
        let Some(p) = &self.persistence else {
            self.checkpoint = ids::checkpoint_id(self.step);
            return Ok(None);
        };
        let tuple = p.saver.get_tuple(&p.config).await?;
        match &tuple {
            Some(tuple) => {
                self.restore(tuple)?;
                self.checkpoint_step = tuple.metadata.step;
                self.pending_source = tuple.metadata.source;
                self.step = tuple.metadata.step + 1;
                if let Some(bytes) = ids::parse_uuid(&tuple.checkpoint.id) {
                    self.checkpoint = bytes;
                }
                self.checkpoint_saved = true;
                if let Some(p) = &mut self.persistence {
                    p.config.checkpoint_id = Some(tuple.checkpoint.id.clone());
                }
            }
            None => {
                if let Some(id) = &p.config.checkpoint_id {
                    return Err(GraphError::Checkpoint(
                        crate::checkpoint::CheckpointError::NotFound {
                            thread_id: p.config.thread_id.clone(),
                            checkpoint_ns: p.config.checkpoint_ns.clone(),
                            checkpoint_id: id.clone(),
                        },
                    ));
                }
                self.checkpoint = ids::checkpoint_id(self.step);
            }
        }
        Ok(tuple)
    }

    /// Creates the checkpoint of the current state and stores it as the durability
    /// mode says; the step's new checkpoint id is taken either way.
    async fn save(&mut self, source: CheckpointSource) -> Result<(), GraphError> {
        self.new_checkpoint(source);
        match &self.persistence {
            Some(p) if p.durability != Durability::Exit => self.put_current(source).await,
            _ => Ok(()),
        }
    }

    /// Stores the current checkpoint (if not stored yet).
    async fn put_current(&mut self, source: CheckpointSource) -> Result<(), GraphError> {
        if self.checkpoint_saved {
            return Ok(());
        }
        let Some(durability) = self.persistence.as_ref().map(|p| p.durability) else {
            return Ok(());
        };
        let id = ids::format_uuid(&self.checkpoint);
        // `update_state` checkpoints record no updated channels (docs/semantics.md
        // §6.1, §7.3): whoever loads one considers every node.
        let with_updated = self.updated_known && source != CheckpointSource::Update;
        let (checkpoint, new_versions) = self.create_checkpoint(id.clone(), with_updated)?;
        // The checkpoint holds every change so far: the next one holds only later ones.
        self.versions.clear_changed();
        let metadata = self.metadata(source, self.checkpoint_step);
        let in_background = durability == Durability::Async
            && source == CheckpointSource::Loop
            && tokio::runtime::Handle::try_current().is_ok();
        // Puts are ordered: the previous one finishes before the next starts.
        self.flush_puts().await?;
        let Some(p) = &mut self.persistence else {
            return Ok(());
        };
        if in_background {
            let (saver, parent) = (Arc::clone(&p.saver), p.config.clone());
            self.background_put = Some(tokio::spawn(async move {
                saver
                    .put(&parent, checkpoint, metadata, new_versions)
                    .await
                    .map(drop)
            }));
        } else {
            p.saver
                .put(&p.config, checkpoint, metadata, new_versions)
                .await?;
        }
        // The next checkpoint descends from this one.
        p.config.checkpoint_id = Some(id);
        self.checkpoint_saved = true;
        Ok(())
    }

    /// Waits for the checkpoint being stored in the background (durability `async`).
    async fn flush_puts(&mut self) -> Result<(), GraphError> {
        if let Some(handle) = self.background_put.take() {
            match handle.await {
                Ok(result) => result?,
                Err(e) => {
                    return Err(GraphError::Checkpoint(
                        crate::checkpoint::CheckpointError::Storage(
                            format!("storing a checkpoint in the background failed: {e}").into(),
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    /// The end of a run: the final checkpoint is stored (durability `exit`) and
    /// every background put has completed.
    async fn save_on_exit(&mut self) -> Result<(), GraphError> {
        let source = self.pending_source;
        self.put_current(source).await?;
        self.flush_puts().await
    }

    fn next_version(&self) -> u64 {
        self.versions.max + 1
    }

    /// Whether some channel was written since the thread was last resumed
    /// (breakpoints fire only then).
    fn changed_since_resume(&self) -> bool {
        self.interrupt_changed || self.versions.max > self.interrupt_seen_max
    }

    /// Node `node` ran and saw versions up to `seen` (see `persist::Book::ran`).
    fn ran(&mut self, node: usize, seen: u64) {
        if let Some(p) = &mut self.persistence {
            p.book.ran(&self.graph.nodes, node, seen);
        }
    }

    fn channel_available(&self, c: usize) -> bool {
        let g = &self.graph;
        if c < g.num_fields() {
            self.state.is_available(&self.fields, c)
        } else if c == g.start_channel() {
            self.start_input.is_some()
        } else if c == g.tasks_channel() {
            !self.sends.is_empty()
        } else {
            self.control[c - g.control_base()].is_available()
        }
    }

    /// The namespace a task of node `name` hashes into its id: the node's name,
    /// under this run's namespace in a subgraph.
    fn task_ns<'a>(&self, name: &'a str) -> std::borrow::Cow<'a, str> {
        if self.ns.is_empty() {
            std::borrow::Cow::Borrowed(name)
        } else {
            std::borrow::Cow::Owned(format!("{}|{name}", self.ns))
        }
    }

    /// The tasks of the current step: PUSH tasks for pending `Send`s, then PULL
    /// tasks for nodes whose triggers have new versions (in node-name order).
    fn prepare(&mut self) -> Result<Vec<Task<S>>, GraphError> {
        let graph = Arc::clone(&self.graph);
        let mut tasks = Vec::with_capacity(self.sends.len() + 1);
        let mut step = itoa::Buffer::new();
        let step_str = step.format(self.step);

        for (i, send) in self.sends.iter().enumerate() {
            let Some(&node) = graph.node_by_name.get(send.node()) else {
                tracing::warn!(
                    node = send.node(),
                    "Ignoring unknown node name {} in pending sends",
                    send.node()
                );
                continue;
            };
            let Some(runner) = graph.nodes[node].runner.as_ref() else {
                tracing::warn!("Ignoring a Send to __start__");
                continue;
            };
            let (expected, expected_name) = runner.input_type();
            let (actual, actual_name) = send.payload_type();
            if expected != actual {
                return Err(GraphError::InvalidSend(SendError::PayloadType {
                    node: send.node().to_string(),
                    payload_type: actual_name,
                    input_type: expected_name,
                }));
            }
            let name = &graph.nodes[node].name;
            let mut index_text = itoa::Buffer::new();
            let index = index_text.format(i);
            let task_ns = self.task_ns(name);
            let id = self.ids.id(
                &self.checkpoint,
                &task_ns,
                [step_str, name, "__pregel_push", index].into_iter(),
            );
            tasks.push(Task {
                node,
                path: TaskPath::Push(i),
                id,
                input: Some(TaskInput::Payload(send.payload_arc())),
            });
        }

        if self.versions.max == 0 {
            return Ok(tasks);
        }
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        if self.updated_known {
            for c in self.updated.iter() {
                candidates.extend_from_slice(&graph.trigger_to_nodes[c]);
            }
            candidates.sort_unstable_by_key(|n| graph.nodes[*n].rank);
            candidates.dedup();
        } else {
            candidates.extend(0..graph.nodes.len());
        }
        for &node in &candidates {
            let spec = &graph.nodes[node];
            let seen = self.seen[node].as_deref();
            let fires = spec.triggers.iter().enumerate().any(|(i, &c)| {
                self.channel_available(c) && seen.is_none_or(|s| self.versions[c] > s[i])
            });
            if !fires {
                continue;
            }
            if !spec.input_is_state {
                let (_, input) = spec
                    .runner
                    .as_ref()
                    .map_or((std::any::TypeId::of::<()>(), "?"), |r| r.input_type());
                return Err(GraphError::InvalidSend(SendError::RoutedToPayloadNode {
                    node: spec.name.to_string(),
                    input_type: input,
                }));
            }
            let parts = [step_str, &*spec.name, "__pregel_pull"]
                .into_iter()
                .chain(spec.triggers.iter().map(|&c| &*graph.channel_names[c]));
            let task_ns = self.task_ns(&spec.name);
            let id = self.ids.id(&self.checkpoint, &task_ns, parts);
            let input = if node == 0 {
                None
            } else {
                Some(TaskInput::State(Arc::clone(&self.state)))
            };
            tasks.push(Task {
                node,
                path: TaskPath::Pull(spec.rank),
                id,
                input,
            });
        }
        self.candidates = candidates;
        Ok(tasks)
    }
}
