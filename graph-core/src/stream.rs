//! Streaming: [`StreamMode`]s to ask for, and the typed [`StreamEvent`]s you get.

use crate::checkpoint::{CheckpointConfig, CheckpointMetadata};
use crate::interrupt::Interrupt;
use crate::state::State;
use std::fmt;
use std::sync::Arc;

/// What a stream reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamMode {
    /// The full state after every superstep that changed it.
    Values,
    /// Each node's updates as it finishes.
    Updates,
    /// Whatever nodes emit with [`Context::write_custom`](crate::Context::write_custom).
    Custom,
    /// Each task as it starts and as it finishes.
    Tasks,
    /// Each checkpoint a step starts from (with a checkpointer only).
    Checkpoints,
    /// Chat model output as it is generated: the chunks nodes emit with
    /// [`Context::write_message_chunk`](crate::Context::write_message_chunk).
    Messages,
    /// LangGraph's `debug` mode: the events of [`Checkpoints`](Self::Checkpoints)
    /// and [`Tasks`](Self::Tasks), in their order, each wrapped in a
    /// [`StreamEvent::Debug`] with its step.
    Debug,
}

impl StreamMode {
    fn bit(self) -> u8 {
        match self {
            StreamMode::Values => 1,
            StreamMode::Updates => 2,
            StreamMode::Custom => 4,
            StreamMode::Tasks => 8,
            StreamMode::Checkpoints => 16,
            StreamMode::Messages => 32,
            StreamMode::Debug => 64,
        }
    }
}

/// A set of [`StreamMode`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamModes(u8);

impl StreamModes {
    /// Whether `mode` is in the set.
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode.bit() != 0
    }

    /// The set with `mode` added.
    pub fn with(self, mode: StreamMode) -> Self {
        StreamModes(self.0 | mode.bit())
    }

    /// The same modes, also reported by every subgraph: their events come as
    /// [`StreamEvent::Subgraph`], with the namespace of the graph that emitted
    /// them (LangGraph's `subgraphs=True`).
    pub fn subgraphs(self) -> Self {
        StreamModes(self.0 | SUBGRAPHS)
    }

    /// Whether subgraphs report their events too.
    pub fn includes_subgraphs(self) -> bool {
        self.0 & SUBGRAPHS != 0
    }
}

/// The flag of [`StreamModes::subgraphs`].
const SUBGRAPHS: u8 = 128;

impl StreamMode {
    /// This mode, also reported by subgraphs (see [`StreamModes::subgraphs`]).
    pub fn with_subgraphs(self) -> StreamModes {
        StreamModes::from(self).subgraphs()
    }
}

/// Where in the graph hierarchy an event was emitted: the checkpoint namespace of
/// the emitting graph, one segment per level (`node:<task id>`; a subgraph that
/// keeps its state across calls has just `node`). Empty for the root graph.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Namespace(Vec<String>);

impl Namespace {
    pub(crate) fn parse(ns: &str) -> Self {
        if ns.is_empty() {
            Namespace(Vec::new())
        } else {
            Namespace(ns.split('|').map(str::to_owned).collect())
        }
    }

    /// The segments, outermost first (`["outer:<id>", "inner:<id>"]`).
    pub fn segments(&self) -> &[String] {
        &self.0
    }

    /// The node names of the segments, without task ids (`["outer", "inner"]`).
    pub fn nodes(&self) -> Vec<&str> {
        self.0
            .iter()
            .filter(|s| !s.bytes().all(|b| b.is_ascii_digit()))
            .map(|s| s.split(':').next().unwrap_or(s))
            .collect()
    }

    /// Whether this is the root graph's namespace.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("|"))
    }
}

/// An event of a subgraph, whose state type the parent's stream does not name:
/// recover it with [`downcast`](Self::downcast) to the subgraph's state.
pub struct SubgraphEvent {
    mode: StreamMode,
    event: Box<dyn std::any::Any + Send>,
    state_type: &'static str,
}

impl SubgraphEvent {
    pub(crate) fn new<C: State>(event: StreamEvent<C>) -> Self {
        SubgraphEvent {
            mode: event.mode(),
            event: Box::new(event),
            state_type: std::any::type_name::<C>(),
        }
    }

    /// The stream mode of the event.
    pub fn mode(&self) -> StreamMode {
        self.mode
    }

    /// The name of the subgraph's state type.
    pub fn state_type(&self) -> &'static str {
        self.state_type
    }

    /// The event, typed, if the subgraph's state is `C`.
    pub fn downcast<C: State>(self) -> Result<StreamEvent<C>, Self> {
        let SubgraphEvent {
            mode,
            event,
            state_type,
        } = self;
        match event.downcast::<StreamEvent<C>>() {
            Ok(event) => Ok(*event),
            Err(event) => Err(SubgraphEvent {
                mode,
                event,
                state_type,
            }),
        }
    }

    /// A reference to the event, typed, if the subgraph's state is `C`.
    pub fn downcast_ref<C: State>(&self) -> Option<&StreamEvent<C>> {
        self.event.downcast_ref()
    }
}

impl fmt::Debug for SubgraphEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubgraphEvent")
            .field("mode", &self.mode)
            .field("state_type", &self.state_type)
            .finish_non_exhaustive()
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        StreamModes(mode.bit())
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes
            .into_iter()
            .fold(StreamModes::default(), StreamModes::with)
    }
}

impl From<&[StreamMode]> for StreamModes {
    fn from(modes: &[StreamMode]) -> Self {
        modes
            .iter()
            .copied()
            .fold(StreamModes::default(), StreamModes::with)
    }
}

/// One event of a stream.
#[non_exhaustive]
pub enum StreamEvent<S: State> {
    /// The full state after a superstep (shared, not copied).
    Values(Arc<S>),
    /// The updates one node produced, in order (usually one).
    Updates {
        /// The node.
        node: Arc<str>,
        /// Its updates.
        updates: Vec<S::Update>,
    },
    /// `updates` mode: a task call of the Functional API (`#[task]`) finished
    /// with this result (LangGraph's `{task_name: result}` update).
    Call {
        /// The task.
        task: Arc<str>,
        /// Its result, as JSON.
        value: serde_json::Value,
        /// Whether the result came from the cache of a task with a cache
        /// policy instead of a run (LangGraph adds
        /// `'__metadata__': {'cached': True}` to the update).
        cached: bool,
    },
    /// A value a node emitted with `write_custom`.
    Custom {
        /// The node.
        node: Arc<str>,
        /// The value.
        value: serde_json::Value,
    },
    /// A task is about to run.
    TaskStart {
        /// The task id.
        id: String,
        /// The node.
        name: Arc<str>,
        /// The channels that triggered it (`__pregel_push` for a `Send`).
        triggers: Vec<String>,
    },
    /// A task finished (or failed).
    TaskResult {
        /// The task id.
        id: String,
        /// The node.
        name: Arc<str>,
        /// The error, if it failed.
        error: Option<String>,
        /// Its state updates, in order.
        updates: Vec<S::Update>,
        /// The interrupts it paused at (empty when it completed or failed).
        interrupts: Vec<Interrupt>,
    },
    /// `tasks` mode: a task call of the Functional API (`#[task]`) finished
    /// (LangGraph's `task_result` of a `__pregel_push` task, whose `result` is
    /// `{"__return__": value}`). Its start is a [`TaskStart`](Self::TaskStart)
    /// with the trigger `__pregel_push`; a call that returns its saved or
    /// cached result starts but reports no result, as in LangGraph.
    CallResult {
        /// The call's id.
        id: String,
        /// The task.
        task: Arc<str>,
        /// The error, if it failed.
        error: Option<String>,
        /// Its result, as JSON (`None` if it failed).
        value: Option<serde_json::Value>,
    },
    /// `updates` mode: a task paused at [`Context::interrupt`](crate::Context::interrupt)
    /// (its interrupts), or the run stopped at a static breakpoint (empty).
    Interrupt(Vec<Interrupt>),
    /// `values` mode: the state when a task paused, with its interrupts.
    ValuesAtInterrupt {
        /// The state (the paused superstep's writes not applied yet).
        values: Arc<S>,
        /// The task's interrupts.
        interrupts: Vec<Interrupt>,
    },
    /// The checkpoint a step starts from (the last one has an empty `next`).
    Checkpoint(CheckpointEvent<S>),
    /// An event of a subgraph (only with [`StreamModes::subgraphs`]).
    Subgraph {
        /// The namespace of the subgraph run that emitted it.
        namespace: Namespace,
        /// The event, typed by the subgraph's state.
        event: SubgraphEvent,
    },
    /// `debug` mode: a [`Checkpoint`](Self::Checkpoint),
    /// [`TaskStart`](Self::TaskStart), [`TaskResult`](Self::TaskResult) or
    /// [`CallResult`](Self::CallResult) event
    /// (LangGraph's `checkpoint`, `task` and `task_result`), with its step.
    /// With `debug` and the event's own mode both asked for, the event comes
    /// twice: as it is, then wrapped.
    Debug {
        /// For a checkpoint, its step (`metadata.step`); for a task, the
        /// superstep it runs in (one more than the checkpoint it starts from).
        step: i64,
        /// The event.
        event: Box<StreamEvent<S>>,
    },
    /// `messages` mode: a chunk of chat model output a node emitted with
    /// [`Context::write_message_chunk`](crate::Context::write_message_chunk).
    Message {
        /// The chunk, as the emitter serialised it (a token delta or a whole message).
        chunk: serde_json::Value,
        /// Which task emitted it.
        metadata: MessageMetadata,
    },
}

/// Where a [`StreamEvent::Message`] chunk comes from (LangGraph's `langgraph_node`,
/// `langgraph_step` and task id metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessageMetadata {
    /// The node that emitted the chunk.
    pub node: Arc<str>,
    /// The id of the emitting task.
    pub task_id: String,
    /// The superstep it ran in.
    pub step: i64,
}

/// The payload of [`StreamEvent::Checkpoint`].
#[non_exhaustive]
pub struct CheckpointEvent<S: State> {
    /// Where the checkpoint lives.
    pub config: CheckpointConfig,
    /// The checkpoint it descends from, as LangGraph reports it: the one
    /// stored before it (`None` for the first checkpoint of a thread). Under
    /// `Durability::Exit`, where the run stores only its last checkpoint, the
    /// parent of the checkpoint the run started from.
    pub parent_config: Option<CheckpointConfig>,
    /// The state at the checkpoint.
    pub values: Arc<S>,
    /// Its metadata.
    pub metadata: CheckpointMetadata,
    /// The nodes of the step about to run.
    pub next: Vec<String>,
}

impl<S: State> StreamEvent<S> {
    /// The mode this event belongs to.
    pub fn mode(&self) -> StreamMode {
        match self {
            StreamEvent::Values(_) | StreamEvent::ValuesAtInterrupt { .. } => StreamMode::Values,
            StreamEvent::Updates { .. } | StreamEvent::Interrupt(_) | StreamEvent::Call { .. } => {
                StreamMode::Updates
            }
            StreamEvent::Custom { .. } => StreamMode::Custom,
            StreamEvent::TaskStart { .. }
            | StreamEvent::TaskResult { .. }
            | StreamEvent::CallResult { .. } => StreamMode::Tasks,
            StreamEvent::Checkpoint(_) => StreamMode::Checkpoints,
            StreamEvent::Subgraph { event, .. } => event.mode(),
            StreamEvent::Message { .. } => StreamMode::Messages,
            StreamEvent::Debug { .. } => StreamMode::Debug,
        }
    }

    /// A copy of a `Checkpoint`, `TaskStart` or `TaskResult` event, for
    /// `debug` mode when the event's own mode is asked for too.
    pub(crate) fn debug_copy(&self) -> Option<Self> {
        Some(match self {
            StreamEvent::Checkpoint(c) => StreamEvent::Checkpoint(CheckpointEvent {
                config: c.config.clone(),
                parent_config: c.parent_config.clone(),
                values: Arc::clone(&c.values),
                metadata: c.metadata.clone(),
                next: c.next.clone(),
            }),
            StreamEvent::TaskStart { id, name, triggers } => StreamEvent::TaskStart {
                id: id.clone(),
                name: Arc::clone(name),
                triggers: triggers.clone(),
            },
            StreamEvent::TaskResult {
                id,
                name,
                error,
                updates,
                interrupts,
            } => StreamEvent::TaskResult {
                id: id.clone(),
                name: Arc::clone(name),
                error: error.clone(),
                updates: updates.clone(),
                interrupts: interrupts.clone(),
            },
            StreamEvent::CallResult {
                id,
                task,
                error,
                value,
            } => StreamEvent::CallResult {
                id: id.clone(),
                task: Arc::clone(task),
                error: error.clone(),
                value: value.clone(),
            },
            _ => return None,
        })
    }
}

impl<S> fmt::Debug for StreamEvent<S>
where
    S: State + fmt::Debug,
    S::Update: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamEvent::Values(s) => f.debug_tuple("Values").field(s).finish(),
            StreamEvent::Updates { node, updates } => f
                .debug_struct("Updates")
                .field("node", node)
                .field("updates", updates)
                .finish(),
            StreamEvent::Call {
                task,
                value,
                cached,
            } => f
                .debug_struct("Call")
                .field("task", task)
                .field("value", value)
                .field("cached", cached)
                .finish(),
            StreamEvent::CallResult {
                id,
                task,
                error,
                value,
            } => f
                .debug_struct("CallResult")
                .field("id", id)
                .field("task", task)
                .field("error", error)
                .field("value", value)
                .finish(),
            StreamEvent::Custom { node, value } => f
                .debug_struct("Custom")
                .field("node", node)
                .field("value", value)
                .finish(),
            StreamEvent::TaskStart { id, name, triggers } => f
                .debug_struct("TaskStart")
                .field("id", id)
                .field("name", name)
                .field("triggers", triggers)
                .finish(),
            StreamEvent::TaskResult {
                id,
                name,
                error,
                updates,
                interrupts,
            } => f
                .debug_struct("TaskResult")
                .field("id", id)
                .field("name", name)
                .field("error", error)
                .field("updates", updates)
                .field("interrupts", interrupts)
                .finish(),
            StreamEvent::Interrupt(interrupts) => {
                f.debug_tuple("Interrupt").field(interrupts).finish()
            }
            StreamEvent::ValuesAtInterrupt { values, interrupts } => f
                .debug_struct("ValuesAtInterrupt")
                .field("values", values)
                .field("interrupts", interrupts)
                .finish(),
            StreamEvent::Subgraph { namespace, event } => f
                .debug_struct("Subgraph")
                .field("namespace", namespace)
                .field("event", event)
                .finish(),
            StreamEvent::Checkpoint(c) => f
                .debug_struct("Checkpoint")
                .field("config", &c.config)
                .field("parent_config", &c.parent_config)
                .field("metadata", &c.metadata)
                .field("next", &c.next)
                .field("values", &c.values)
                .finish(),
            StreamEvent::Debug { step, event } => f
                .debug_struct("Debug")
                .field("step", step)
                .field("event", event)
                .finish(),
            StreamEvent::Message { chunk, metadata } => f
                .debug_struct("Message")
                .field("chunk", chunk)
                .field("metadata", metadata)
                .finish(),
        }
    }
}

/// How a run hands events of the graphs nested in it to the root's stream.
#[derive(Clone)]
pub(crate) struct NestedEvents {
    pub(crate) modes: StreamModes,
    pub(crate) forward: Arc<dyn Fn(Namespace, SubgraphEvent) + std::marker::Send + Sync>,
}
