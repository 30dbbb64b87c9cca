//! [`StateSnapshot`]: an immutable view of a thread at one checkpoint.

use crate::checkpoint::{CheckpointConfig, CheckpointMetadata};
use crate::state::State;

/// Where a task comes from: LangGraph's `PregelTask.path`.
///
/// `Display` writes it as Python prints the tuple:
/// `('__pregel_pull', 'node')`, `('__pregel_push', 0, False)`.
///
/// ```
/// use stategraph::TaskPath;
/// assert_eq!(
///     TaskPath::Pull { node: "agent".into() }.to_string(),
///     "('__pregel_pull', 'agent')"
/// );
/// assert_eq!(TaskPath::Push { index: 1 }.to_string(), "('__pregel_push', 1, False)");
/// assert_eq!(
///     TaskPath::Pull { node: "it's".into() }.to_string(),
///     r#"('__pregel_pull', "it's")"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskPath {
    /// The node ran because its triggers were updated (an edge, a `Command`'s
    /// `goto` to a node name, the graph input): `('__pregel_pull', node)`.
    Pull {
        /// The node's name.
        node: String,
    },
    /// The node ran for a pending [`Send`](crate::Send), from a conditional
    /// edge or a [`Command`](crate::Command)'s `goto` alike:
    /// `('__pregel_push', index, False)`.
    Push {
        /// The send's position among the sends the previous step made (the
        /// index LangGraph's path holds).
        index: usize,
    },
}

impl std::fmt::Display for TaskPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskPath::Pull { node } => {
                f.write_str("('__pregel_pull', ")?;
                python_repr(f, node)?;
                f.write_str(")")
            }
            TaskPath::Push { index } => write!(f, "('__pregel_push', {index}, False)"),
        }
    }
}

/// `text` as Python's `repr` of a `str` writes it: in single quotes, or in
/// double quotes when it holds a single quote and no double quote; backslashes,
/// the quote and control characters escaped.
fn python_repr(f: &mut std::fmt::Formatter<'_>, text: &str) -> std::fmt::Result {
    use std::fmt::Write;
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    f.write_char(quote)?;
    for c in text.chars() {
        match c {
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if c == quote => write!(f, "\\{c}")?,
            c if matches!(c as u32, 0..=0x1f | 0x7f..=0x9f) => write!(f, "\\x{:02x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char(quote)
}

/// A task of the step that follows a checkpoint.
#[non_exhaustive]
pub struct SnapshotTask<S: State> {
    /// The task id (deterministic for a checkpoint).
    pub id: String,
    /// The node it runs.
    pub name: String,
    /// Why it runs: its node's triggers, or which pending `Send`.
    pub path: TaskPath,
    /// The error it failed with, if it failed.
    pub error: Option<String>,
    /// Its state updates, if it completed (`None` if it has not run).
    pub result: Option<Vec<S::Update>>,
    /// The interrupts it is paused at (resume them with `Command::resume`).
    pub interrupts: Vec<crate::Interrupt>,
    /// The task's checkpoint namespace (`node:<task id>`): where a subgraph it
    /// runs keeps its checkpoints.
    pub checkpoint_ns: String,
    /// For a [`Subgraph`](crate::Subgraph) node, with
    /// [`get_state_with_subgraphs`](crate::CompiledGraph::get_state_with_subgraphs):
    /// the subgraph's own snapshot.
    pub state: Option<SubgraphSnapshot>,
}

/// A subgraph's [`StateSnapshot`], whose state type the parent's snapshot does
/// not name: [`downcast_ref`](Self::downcast_ref) it to the subgraph's state.
#[derive(Clone)]
pub struct SubgraphSnapshot {
    snapshot: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    state_type: &'static str,
    /// Where the subgraph's checkpoint lives.
    pub config: CheckpointConfig,
    /// The subgraph's next nodes.
    pub next: Vec<String>,
    /// The subgraph's pending interrupts.
    pub interrupts: Vec<crate::Interrupt>,
}

impl SubgraphSnapshot {
    pub(crate) fn new<C: State>(snapshot: StateSnapshot<C>) -> Self {
        SubgraphSnapshot {
            config: snapshot.config.clone(),
            next: snapshot.next.clone(),
            interrupts: snapshot.interrupts.clone(),
            snapshot: std::sync::Arc::new(snapshot),
            state_type: std::any::type_name::<C>(),
        }
    }

    /// The snapshot, typed, if the subgraph's state is `C`.
    pub fn downcast_ref<C: State>(&self) -> Option<&StateSnapshot<C>> {
        self.snapshot.downcast_ref()
    }

    /// The name of the subgraph's state type.
    pub fn state_type(&self) -> &'static str {
        self.state_type
    }
}

impl std::fmt::Debug for SubgraphSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubgraphSnapshot")
            .field("state_type", &self.state_type)
            .field("config", &self.config)
            .field("next", &self.next)
            .field("interrupts", &self.interrupts)
            .finish_non_exhaustive()
    }
}

impl<S: State> Clone for SnapshotTask<S> {
    fn clone(&self) -> Self {
        SnapshotTask {
            id: self.id.clone(),
            name: self.name.clone(),
            path: self.path.clone(),
            error: self.error.clone(),
            result: self.result.clone(),
            interrupts: self.interrupts.clone(),
            checkpoint_ns: self.checkpoint_ns.clone(),
            state: self.state.clone(),
        }
    }
}

impl<S: State> std::fmt::Debug for SnapshotTask<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotTask")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("path", &self.path)
            .field("error", &self.error)
            .field("result", &self.result.as_ref().map(Vec::len))
            .field("interrupts", &self.interrupts)
            .field("checkpoint_ns", &self.checkpoint_ns)
            .field("state", &self.state)
            .finish()
    }
}

/// The state of a thread at one checkpoint, and what runs next (LangGraph's
/// `StateSnapshot`). Returned by `get_state` and `get_state_history`.
///
/// A thread without checkpoints gives an empty snapshot: default values, no
/// `next`, no metadata — check `next.is_empty()` and `metadata.is_none()`.
#[non_exhaustive]
pub struct StateSnapshot<S: State> {
    /// The state values (pending writes of completed tasks applied, for the latest).
    pub values: S,
    /// Nodes that will run next (tasks without stored writes).
    pub next: Vec<String>,
    /// Where this checkpoint lives.
    pub config: CheckpointConfig,
    /// Why and at which step it was written (`None` for an empty thread).
    pub metadata: Option<CheckpointMetadata>,
    /// When it was written (ISO-8601).
    pub created_at: Option<String>,
    /// The previous checkpoint.
    pub parent_config: Option<CheckpointConfig>,
    /// The tasks of the next step, with their errors and results so far.
    pub tasks: Vec<SnapshotTask<S>>,
    /// Every task's pending interrupts, in task order.
    pub interrupts: Vec<crate::Interrupt>,
}

impl<S: State + std::fmt::Debug> std::fmt::Debug for StateSnapshot<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSnapshot")
            .field("values", &self.values)
            .field("next", &self.next)
            .field("config", &self.config)
            .field("metadata", &self.metadata)
            .field("created_at", &self.created_at)
            .field("parent_config", &self.parent_config)
            .field("tasks", &self.tasks)
            .field("interrupts", &self.interrupts)
            .finish()
    }
}

/// One update of [`bulk_update_state`](crate::CompiledGraph::bulk_update_state):
/// values written as if `as_node` had returned them (LangGraph's `StateUpdate`).
#[non_exhaustive]
pub struct NodeUpdate<S: State> {
    /// The values (`None`: the node wrote nothing).
    pub values: Option<S::Update>,
    /// The node they are attributed to (`None`: inferred; required when a superstep
    /// has several updates).
    pub as_node: Option<String>,
}

impl<S: State> NodeUpdate<S> {
    /// An update attributed to the node that ran last.
    pub fn new(values: impl Into<Option<S::Update>>) -> Self {
        NodeUpdate {
            values: values.into(),
            as_node: None,
        }
    }

    /// Attributes the update to `node` (or `END`, `"__input__"`, `"__copy__"`).
    pub fn as_node(mut self, node: impl Into<String>) -> Self {
        self.as_node = Some(node.into());
        self
    }
}
