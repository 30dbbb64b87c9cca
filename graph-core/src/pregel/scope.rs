//! What the tasks of one superstep share with the graphs they run as subgraphs
//! (SEMANTICS.md §9): the namespace, the saver, whether the run is resuming, and
//! the resume values a nested interrupt may take.

use crate::checkpoint::{Blob, Checkpointer};
use crate::config::RunConfig;
use crate::interrupt::NullResume;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What the tasks of a running superstep share: its step and config, and what
/// they pass to graphs they run nested.
pub(crate) struct StepScope {
    /// The superstep (the `__start__` step is 0).
    pub(crate) step: i64,
    /// The first superstep the recursion limit forbids.
    pub(crate) stop: i64,
    /// The run's config.
    pub(crate) config: Arc<RunConfig>,
    /// The checkpoint namespace of the graph running the step (`""` at the root).
    pub(crate) graph_ns: Arc<str>,
    /// The saver of the graph running the step.
    pub(crate) saver: Option<Arc<dyn Checkpointer>>,
    /// Whether this is the first superstep of a resumed run: a subgraph then
    /// continues its own checkpoint instead of starting over from its input.
    pub(crate) resuming: bool,
    /// `Command::resume_map`'s answers, for interrupts raised at any depth.
    pub(crate) resume_map: Option<Arc<[(String, Blob)]>>,
    /// `Command::resume`'s value, if no task has taken it yet.
    pub(crate) null_resume: Option<Arc<NullResume>>,
    /// The id of the checkpoint the step started from.
    pub(crate) checkpoint: [u8; 16],
    /// Checkpoint ids of the enclosing graphs, by namespace.
    pub(crate) ancestors: Option<Arc<BTreeMap<String, String>>>,
    /// Where nested graphs send their events, when the caller streams subgraphs.
    pub(crate) events: Option<super::NestedEvents>,
}

impl StepScope {
    /// The `parents` of a checkpoint written by a graph nested in this step: the
    /// enclosing graphs' checkpoints and this one's.
    pub(crate) fn parents_of_nested(&self) -> BTreeMap<String, String> {
        let mut parents = self.ancestors.as_deref().cloned().unwrap_or_default();
        parents.insert(
            self.graph_ns.to_string(),
            super::ids::format_uuid(&self.checkpoint),
        );
        parents
    }

    /// The checkpoint namespace of the task `node:task_id` of this step.
    pub(crate) fn task_ns(&self, node: &str, task_id: &str) -> String {
        super::ids::task_namespace(&self.graph_ns, node, task_id)
    }
}
