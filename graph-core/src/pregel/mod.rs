//! The Pregel superstep loop (SEMANTICS.md §2): prepare the tasks a step triggers,
//! run them concurrently, apply their writes in deterministic task order, repeat.

mod control;
mod execute;
pub(crate) mod ids;
mod writes;

use crate::command::Send;
use crate::config::RunConfig;
use crate::error::GraphError;
use crate::graph::compiled::Graph;
use crate::node::TaskInput;
use crate::state::{FieldSet, ManagedValues, State};
use crate::stream::{StreamEvent, StreamMode, StreamModes};
use control::ControlChannel;
use ids::{TaskIds, TaskPath};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// Where a run reports its stream events.
pub(crate) struct EventSink<S: State> {
    pub(crate) modes: StreamModes,
    pub(crate) tx: UnboundedSender<StreamEvent<S>>,
    pub(crate) sent: std::sync::atomic::AtomicUsize,
}

impl<S: State> EventSink<S> {
    fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }

    fn emit(&self, event: StreamEvent<S>) {
        self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // A dropped receiver means nobody listens any more; the run still completes.
        let _ = self.tx.send(event);
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
/// tracked so a step's next version costs O(1), not O(channels).
#[derive(Clone)]
pub(crate) struct Versions {
    values: Vec<u64>,
    max: u64,
}

impl Versions {
    fn new(n: usize) -> Self {
        Versions {
            values: vec![0; n],
            max: 0,
        }
    }

    fn set(&mut self, channel: usize, version: u64) {
        self.values[channel] = version;
        self.max = self.max.max(version);
    }
}

impl std::ops::Index<usize> for Versions {
    type Output = u64;

    fn index(&self, channel: usize) -> &u64 {
        &self.values[channel]
    }
}

/// One task of a superstep.
pub(crate) struct Task<S: State> {
    pub(crate) node: usize,
    pub(crate) path: TaskPath,
    pub(crate) id: String,
    pub(crate) input: Option<TaskInput<S>>,
}

/// The live state of one run of a compiled graph.
pub(crate) struct Run<S: State> {
    graph: Arc<Graph<S>>,
    config: Arc<RunConfig>,
    state: Arc<S>,
    fields: S::Channels,
    control: Vec<ControlChannel>,
    start_input: Option<S::Update>,
    sends: Vec<Send>,
    versions: Versions,
    /// Per node: the version of each trigger when the node last ran.
    seen: Vec<Option<Vec<u64>>>,
    /// Channels updated (and available) by the previous step.
    updated: FieldSet,
    /// Control channels of the ephemeral kind currently holding a value.
    live_branches: Vec<usize>,
    step: i64,
    stop: i64,
    checkpoint: [u8; 16],
    ids: TaskIds,
    events: Option<Arc<EventSink<S>>>,
}

impl<S: State> Run<S> {
    pub(crate) fn new(
        graph: Arc<Graph<S>>,
        config: RunConfig,
        events: Option<EventSink<S>>,
    ) -> Result<Self, GraphError> {
        let limit = config.get_recursion_limit();
        if limit < 1 {
            return Err(GraphError::InvalidConfig(
                "recursion_limit must be at least 1".to_owned(),
            ));
        }
        let n = graph.num_channels();
        let control = graph.control.iter().map(ControlChannel::new).collect();
        // A fresh thread: the empty checkpoint has step -2, so the input step is -1.
        let step: i64 = -1;
        let stop = step.saturating_add(i64::try_from(limit).unwrap_or(i64::MAX - 1)) + 1;
        Ok(Run {
            seen: vec![None; graph.nodes.len()],
            graph,
            config: Arc::new(config),
            state: Arc::new(S::default()),
            fields: S::new_channels(),
            control,
            start_input: None,
            sends: Vec::new(),
            versions: Versions::new(n),
            updated: FieldSet::with_capacity(n),
            live_branches: Vec::new(),
            step,
            stop,
            checkpoint: ids::checkpoint_id(step),
            ids: TaskIds::default(),
            events: events.map(Arc::new),
        })
    }

    /// Runs to completion from `input` and returns the final state.
    pub(crate) async fn run(self, input: Option<S::Update>) -> Result<Arc<S>, GraphError> {
        use tracing::Instrument;
        let span = tracing::debug_span!("graph_run", thread_id = self.config.thread_id());
        self.run_steps(input).instrument(span).await
    }

    async fn run_steps(mut self, input: Option<S::Update>) -> Result<Arc<S>, GraphError> {
        match input {
            Some(update) => self.apply_input(update),
            None => {
                return Err(GraphError::EmptyInput(
                    "Received no input for __start__".to_owned(),
                ))
            }
        }
        loop {
            if self.step > self.stop {
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
            let tasks = self.prepare()?;
            if tasks.is_empty() {
                break;
            }
            tracing::trace!(
                step = self.step,
                tasks = tasks.len(),
                checkpoint = %ids::format_uuid(&self.checkpoint),
                "superstep"
            );
            let mut tasks = tasks;
            let sent_before = self.events.as_ref().map_or(0, |e| e.sent());
            let outputs = self.execute(&mut tasks).await?;
            self.apply(tasks, outputs)?;
            self.checkpoint = ids::checkpoint_id(self.step);
            self.step += 1;
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
        Ok(self.state)
    }

    /// Writes the input to `__start__` (a pseudo task without triggers: no step bump).
    fn apply_input(&mut self, update: S::Update) {
        let nv = self.next_version();
        let start = self.graph.start_channel();
        self.start_input = Some(update);
        self.versions.set(start, nv);
        self.updated.clear();
        self.updated.insert(start);
        self.checkpoint = ids::checkpoint_id(self.step);
        self.step += 1;
    }

    /// The version every channel changed by this step gets (one per step, §2.2).
    fn next_version(&self) -> u64 {
        self.versions.max + 1
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

    /// The tasks of the current step: PUSH tasks for pending `Send`s, then PULL
    /// tasks for nodes whose triggers have new versions (in node-name order).
    fn prepare(&mut self) -> Result<Vec<Task<S>>, GraphError> {
        let graph = Arc::clone(&self.graph);
        let mut tasks = Vec::new();
        let step_str = self.step.to_string();

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
                return Err(GraphError::InvalidSend(format!(
                    "a Send to node `{}` carries a `{actual_name}`, but the node takes a \
                     `{expected_name}`; build Sends with `send(node, input)` so the compiler checks the payload",
                    send.node()
                )));
            }
            let name = &graph.nodes[node].name;
            let index = i.to_string();
            let id = self.ids.id(
                &self.checkpoint,
                &[name, &step_str, name, "__pregel_push", &index],
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
        let mut candidates: Vec<usize> = Vec::new();
        for c in self.updated.iter() {
            candidates.extend_from_slice(&graph.trigger_to_nodes[c]);
        }
        candidates.sort_unstable_by_key(|n| graph.nodes[*n].rank);
        candidates.dedup();
        let mut parts: Vec<&str> = Vec::with_capacity(8);
        for node in candidates {
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
                return Err(GraphError::InvalidSend(format!(
                    "node `{}` takes a `{input}` as input, not the graph state, so it can only be \
                     started by a Send; a route by name (a string goto or router result) reached it",
                    spec.name
                )));
            }
            parts.clear();
            parts.extend([&*spec.name, step_str.as_str(), &*spec.name, "__pregel_pull"]);
            parts.extend(spec.triggers.iter().map(|&c| &*graph.channel_names[c]));
            let id = self.ids.id(&self.checkpoint, &parts);
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
        Ok(tasks)
    }
}
