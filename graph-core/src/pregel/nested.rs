//! Running a graph inside a task of another graph (docs/semantics.md §8.2, §8.3,
//! §8.4): the namespace, saver and resume values come from the calling task.

use super::{Nested, Run};
use crate::checkpoint::{Checkpointer, SharedStr};
use crate::compiled::Graph;
use crate::config::SubgraphCheckpoints;
use crate::context::Context;
use crate::error::{GraphError, NodeError};
use crate::io::{GraphInput, GraphOutput};
use crate::state::State;
use futures::future::{BoxFuture, FutureExt};
use std::sync::Arc;

/// A namespace without task ids, as a persistent subgraph keeps across calls:
/// `outer:<id>|inner:<id>|1` → `outer|inner` (call-index segments dropped).
pub(crate) fn recast(ns: &str) -> String {
    ns.split('|')
        .filter(|part| !part.is_empty() && !part.bytes().all(|b| b.is_ascii_digit()))
        .map(|part| part.split(':').next().unwrap_or(part))
        .collect::<Vec<_>>()
        .join("|")
}

impl<S: State> Run<S> {
    /// A run that reads or updates the checkpoints of `config`'s namespace (a
    /// subgraph's, when not empty) rather than running the graph as a root.
    pub(crate) fn at_namespace(
        graph: Arc<Graph<S>>,
        config: crate::config::RunConfig,
        saver: Option<Arc<dyn Checkpointer>>,
    ) -> Result<Self, GraphError> {
        let ns = config.shared_checkpoint_ns().clone();
        let mut run = Run::new(graph, config, None, saver)?;
        if !ns.is_empty() {
            if let Some(p) = &mut run.persist.saver {
                p.config.checkpoint_ns = ns.clone();
            }
            run.ns = ns.into();
        }
        Ok(run)
    }

    /// A run of `graph` nested in the task `ctx` belongs to. Its saver is the
    /// calling graph's (else the subgraph's own), unless `mode` is `Off`; its
    /// context value is the calling run's.
    pub(crate) fn nested<C: ?Sized>(
        graph: Arc<Graph<S>>,
        own_saver: Option<Arc<dyn Checkpointer>>,
        ctx: &Context<C>,
        mode: SubgraphCheckpoints,
    ) -> Result<Self, GraphError> {
        let scope = Arc::clone(ctx.scope());
        let mut ns = ctx.next_nested_ns();
        if mode == SubgraphCheckpoints::Persistent {
            ns = recast(&ns);
        }
        let saver = match mode {
            SubgraphCheckpoints::Off => None,
            _ => scope.saver.clone().or(own_saver),
        };
        // One copy of the namespace, shared by the run, its config and its
        // saver's.
        let ns: Arc<str> = Arc::from(ns);
        let config = ctx.config().for_nested(SharedStr::from(&ns));
        let events = scope
            .events
            .as_ref()
            .map(|events| super::EventSink::nested(events, &ns));
        let mut run = Run::new(graph, config, events, saver)?;
        run.stream.nested_events = scope.events.clone();
        // Subgraphs share the calling graph's store (LangGraph's runtime.store).
        run.store = scope.store.clone();
        if let Some(p) = &mut run.persist.saver {
            p.config.checkpoint_ns = SharedStr::from(&ns);
            if mode == SubgraphCheckpoints::Persistent {
                scope.claim_persistent(&ns, ctx.task_id(), &p.thread)?;
            }
        }
        run.ns = ns;
        run.context = scope.context.clone();
        run.interrupts.resume_map = scope
            .resume_map
            .as_deref()
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        run.nested = Some(Nested {
            resuming: ctx.nested_resumes(),
            persistent: mode == SubgraphCheckpoints::Persistent,
            parents: scope.parents_of_nested(),
            null_resume: scope.null_resume.clone(),
            depth: scope.depth + 1,
        });
        Ok(run)
    }

    /// Runs this nested run ([`Run::nested`]) to its end, for the node that
    /// runs it: its errors are the node's (a command for the parent graph
    /// becomes the node's result).
    ///
    /// A nested run is polled inside its parent's poll, so each level of
    /// nesting adds its frames to the thread's stack (about 100 KiB in a debug
    /// build, 15 KiB in release): at some depth a tokio worker's 2 MiB stack
    /// overflows, which aborts the process (17 levels in debug, 76 in release). Every [`INLINE_LEVELS`]th level
    /// therefore runs as a tokio task of its own, on a fresh stack, and the
    /// stack a run needs no longer grows with its depth; the levels between run
    /// inline, so shallow nesting (the common case) costs no task spawn.
    /// Without a tokio runtime every level runs inline.
    pub(crate) async fn run_nested(
        self,
        input: GraphInput<S>,
    ) -> Result<GraphOutput<Arc<S>>, NodeError> {
        match self.start_nested(input).await {
            Ok(result) => result.map_err(|e| match e {
                GraphError::ParentCommand { command, .. } => NodeError::parent(command),
                other => NodeError::from(other),
            }),
            // Raised again in the parent's task, as if the run were inline.
            Err(joined) if joined.is_panic() => std::panic::resume_unwind(joined.into_panic()),
            Err(_) => Err(NodeError::msg(
                "the nested graph's task was cancelled: the tokio runtime is shutting down",
            )),
        }
    }

    /// The nested run as a boxed future: inline, or waiting for its own task.
    /// Made outside `run_nested`'s poll, so that poll's frame holds a pointer
    /// and not the run's future (which debug builds copy onto the stack).
    fn start_nested(self, input: GraphInput<S>) -> BoxFuture<'static, Joined<S>> {
        let depth = self.nested.as_ref().map_or(0, |n| n.depth);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) if depth.is_multiple_of(INLINE_LEVELS) => {
                use tracing::Instrument;
                let thread = self.persist.saver.as_ref().map(|p| p.cancel_thread());
                Box::pin(AbortOnDrop {
                    task: Some(runtime.spawn(self.run(input).in_current_span())),
                    thread,
                })
            }
            _ => Box::pin(self.run(input).map(Ok)),
        }
    }
}

/// How a nested run ended: its result, or its task's panic.
type Joined<S> = Result<Result<GraphOutput<Arc<S>>, GraphError>, tokio::task::JoinError>;

/// How many levels of nested graphs run inline, polled by their parent, before
/// one runs as a task of its own ([`Run::run_nested`]).
const INLINE_LEVELS: usize = 4;

/// A spawned nested run, aborted when its parent stops waiting for it (the
/// parent was cancelled or failed). Aborted before it ended, the task is
/// handed to its thread's root run (`cancel::Thread`), which lets the thread
/// go only once the runtime has dropped it and the nested run stored what it
/// made.
struct AbortOnDrop<T: Send + 'static> {
    /// `None` only once dropped.
    task: Option<tokio::task::JoinHandle<T>>,
    /// The nested run's thread, when it has a saver.
    thread: Option<super::cancel::Thread>,
}

impl<T: Send + 'static> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut self.task {
            Some(task) => std::pin::Pin::new(task).poll(cx),
            None => std::task::Poll::Pending,
        }
    }
}

impl<T: Send + 'static> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            super::cancel::abandon(task, self.thread.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::recast;

    #[test]
    fn recasting_drops_task_ids_and_call_indices() {
        assert_eq!(recast("inner:0a1b"), "inner");
        assert_eq!(recast("outer:1|inner:2"), "outer|inner");
        assert_eq!(recast("outer:1|2"), "outer");
        assert_eq!(recast("a"), "a");
    }
}
