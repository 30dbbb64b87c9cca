//! What the tasks of one superstep share with the graphs they run as subgraphs
//! (docs/semantics.md §8): the namespace, the saver, whether the run is resuming,
//! and the resume values a nested interrupt may take.

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
    /// Checkpoints of the enclosing graphs.
    pub(crate) ancestors: Option<Arc<Ancestors>>,
    /// Where nested graphs send their events, when the caller streams subgraphs.
    pub(crate) events: Option<super::NestedEvents>,
    /// How many graphs the graph running the step is nested in (0 at the root).
    pub(crate) depth: usize,
}

impl StepScope {
    /// The enclosing checkpoints of a graph nested in this step: the enclosing
    /// graphs' and this one's.
    pub(crate) fn parents_of_nested(&self) -> Arc<Ancestors> {
        Arc::new(Ancestors {
            ns: Arc::clone(&self.graph_ns),
            checkpoint_id: super::ids::format_uuid(&self.checkpoint),
            up: self.ancestors.clone(),
        })
    }

    /// The checkpoint namespace of the task `node:task_id` of this step.
    pub(crate) fn task_ns(&self, node: &str, task_id: &str) -> String {
        super::ids::task_namespace(&self.graph_ns, node, task_id)
    }
}

/// The checkpoints of the graphs a nested graph runs in, innermost first, as
/// a chain shared by the levels: a graph nested `d` deep adds one link instead
/// of copying its `d` ancestors, whose namespaces are up to `d` segments long
/// (copies made the memory of a nested run grow as `d³`).
pub(crate) struct Ancestors {
    ns: Arc<str>,
    checkpoint_id: String,
    up: Option<Arc<Ancestors>>,
}

impl Ancestors {
    /// The `parents` of a checkpoint: namespace → checkpoint id.
    pub(crate) fn to_map(&self) -> BTreeMap<String, String> {
        let mut parents = BTreeMap::new();
        let mut link = Some(self);
        while let Some(ancestor) = link {
            parents
                .entry(ancestor.ns.to_string())
                .or_insert_with(|| ancestor.checkpoint_id.clone());
            link = ancestor.up.as_deref();
        }
        parents
    }
}

impl Drop for Ancestors {
    /// Unlinks the chain iteratively: dropping the last holder of a chain
    /// thousands of links long must not recurse once per link.
    fn drop(&mut self) {
        let mut up = self.up.take();
        while let Some(link) = up {
            up = match Arc::try_unwrap(link) {
                Ok(mut ancestor) => ancestor.up.take(),
                Err(_) => None,
            };
        }
    }
}
