//! What the tasks of one superstep share with the graphs they run as subgraphs
//! (docs/semantics.md §8): the namespace, the saver, whether the run is resuming,
//! and the resume values a nested interrupt may take.

use crate::checkpoint::{Blob, Checkpointer};
use crate::command::ParentRoute;
use crate::config::RunConfig;
use crate::interrupt::{Interrupt, NullResume};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// How a task ends that is not a result nor a failure: it paused at
/// interrupts (its own `ctx.interrupt`, or a subgraph it ran), or a subgraph it
/// ran handed a command to this graph (`Command::to_parent`).
pub(crate) enum Signal {
    Interrupts(Vec<Interrupt>),
    Parent(ParentRoute),
}

/// The signals the step's tasks raised, by task id, recorded where they are
/// raised. A node gets them as an `Err` for `?` to pass on, but the engine
/// does not rely on it: a node that handles errors generically (`.ok()`,
/// `map_err`, a retry-anything loop) still pauses, or still hands the command
/// on. A task's first signal is the one that counts.
#[derive(Default)]
pub(crate) struct Signals {
    /// Whether any task raised one (the common case, none, takes no lock).
    any: AtomicBool,
    raised: Mutex<Vec<(String, Signal)>>,
}

impl Signals {
    /// Task `task_id` raised `signal` (kept unless it raised one before; the
    /// interrupts of parallel task calls of one entrypoint add up, so that
    /// each can be answered by its id).
    pub(crate) fn raise(&self, task_id: &str, signal: Signal) {
        let mut raised = self.raised.lock().unwrap_or_else(PoisonError::into_inner);
        match (raised.iter_mut().find(|(id, _)| id == task_id), signal) {
            (None, signal) => raised.push((task_id.to_owned(), signal)),
            (Some((_, Signal::Interrupts(before))), Signal::Interrupts(more)) => {
                for interrupt in more {
                    if !before.iter().any(|b| b.id == interrupt.id) {
                        before.push(interrupt);
                    }
                }
            }
            (Some(_), _) => {}
        }
        self.any.store(true, Ordering::Release);
    }

    /// Whether task `task_id` raised a signal.
    pub(crate) fn raised(&self, task_id: &str) -> bool {
        self.any.load(Ordering::Acquire)
            && self
                .raised
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|(id, _)| id == task_id)
    }

    /// The signal task `task_id` raised, taken out.
    pub(crate) fn take(&self, task_id: &str) -> Option<Signal> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let mut raised = self.raised.lock().unwrap_or_else(PoisonError::into_inner);
        let at = raised.iter().position(|(id, _)| id == task_id)?;
        Some(raised.swap_remove(at).1)
    }
}

/// The context value of one run, shared by its tasks and the graphs nested in
/// them; `None` when an untyped graph was given none. Never checkpointed.
/// (Its type is [`crate::context::Untyped`], which `context` names for users.)
pub(crate) type RunContext = Option<Arc<dyn std::any::Any + Send + Sync>>;

/// What the tasks of a running superstep share: its step and config, and what
/// they pass to graphs they run nested.
pub(crate) struct StepScope {
    /// The superstep (the `__start__` step is 0).
    pub(crate) step: i64,
    /// The first superstep the recursion limit forbids.
    pub(crate) stop: i64,
    /// The run's config.
    pub(crate) config: RunConfig,
    /// The run's context value, which graphs nested in its tasks share.
    pub(crate) context: RunContext,
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
    pub(crate) events: Option<crate::stream::NestedEvents>,
    /// How many graphs the graph running the step is nested in (0 at the root).
    pub(crate) depth: usize,
    /// The control signals the step's tasks raised.
    pub(crate) signals: Signals,
    /// The stored results of task calls (`crate::func`) a resumed step's
    /// entrypoint may reuse: the loaded checkpoint's writes of that kind.
    pub(crate) saved_calls: Option<Arc<[crate::checkpoint::PendingWrite]>>,
    /// The long-term memory the graph was compiled with (the root graph's,
    /// for nested graphs).
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
    /// The cache the graph was compiled with, for task calls with a cache
    /// policy (`crate::func`).
    pub(crate) cache: Option<Arc<dyn crate::cache::Cache>>,
    /// The namespaces of the persistent subgraphs the step's tasks ran, each
    /// with the task that ran it ([`claim_persistent`](Self::claim_persistent)).
    pub(crate) persistent: Mutex<Vec<(Arc<str>, String)>>,
}

impl StepScope {
    /// Task `task_id` runs the persistent subgraph of namespace `ns`
    /// (docs/semantics.md §8.3): one task of a step may, any number of times; a
    /// second task is refused, whether or not the two runs would overlap in
    /// time (two tasks of one step run in no defined order).
    pub(crate) fn claim_persistent(
        &self,
        ns: &Arc<str>,
        task_id: &str,
        thread_id: &str,
    ) -> Result<(), crate::error::GraphError> {
        let mut claims = self
            .persistent
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match claims.iter().find(|(claimed, _)| claimed == ns) {
            Some((_, owner)) if owner != task_id => Err(crate::error::GraphError::ThreadBusy {
                thread_id: thread_id.to_owned(),
                checkpoint_ns: ns.to_string(),
            }),
            Some(_) => Ok(()),
            None => {
                claims.push((Arc::clone(ns), task_id.to_owned()));
                Ok(())
            }
        }
    }

    /// The enclosing checkpoints of a graph nested in this step: the enclosing
    /// graphs' and this one's.
    pub(crate) fn parents_of_nested(&self) -> Arc<Ancestors> {
        Arc::new(Ancestors {
            ns: Arc::clone(&self.graph_ns),
            checkpoint_id: crate::ids::format_uuid(&self.checkpoint),
            up: self.ancestors.clone(),
        })
    }

    /// The checkpoint namespace of the task `node:task_id` of this step.
    pub(crate) fn task_ns(&self, node: &str, task_id: &str) -> String {
        crate::ids::task_namespace(&self.graph_ns, node, task_id)
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
