//! [`StateSnapshot`]: an immutable view of a thread at one checkpoint.

use crate::checkpoint::{CheckpointConfig, CheckpointMetadata};
use crate::state::State;

/// A task of the step that follows a checkpoint.
#[non_exhaustive]
pub struct SnapshotTask<S: State> {
    /// The task id (deterministic for a checkpoint).
    pub id: String,
    /// The node it runs.
    pub name: String,
    /// The error it failed with, if it failed.
    pub error: Option<String>,
    /// Its state updates, if it completed (`None` if it has not run).
    pub result: Option<Vec<S::Update>>,
    /// The interrupts it is paused at (resume them with `Command::resume`).
    pub interrupts: Vec<crate::Interrupt>,
}

impl<S: State> Clone for SnapshotTask<S> {
    fn clone(&self) -> Self {
        SnapshotTask {
            id: self.id.clone(),
            name: self.name.clone(),
            error: self.error.clone(),
            result: self.result.clone(),
            interrupts: self.interrupts.clone(),
        }
    }
}

impl<S: State> std::fmt::Debug for SnapshotTask<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotTask")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("error", &self.error)
            .field("result", &self.result.as_ref().map(Vec::len))
            .field("interrupts", &self.interrupts)
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
