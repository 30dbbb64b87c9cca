//! Running a graph inside a task of another graph (SEMANTICS.md §9.1, §9.3): the
//! namespace, saver and resume values come from the calling task.

use super::{Nested, Run};
use crate::checkpoint::Checkpointer;
use crate::context::Context;
use crate::error::GraphError;
use crate::graph::compiled::Graph;
use crate::state::State;
use crate::subgraph::SubgraphCheckpoints;
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
        let ns = config.get_checkpoint_ns().to_owned();
        let mut run = Run::new(graph, config, None, saver)?;
        if !ns.is_empty() {
            if let Some(p) = &mut run.persistence {
                p.config.checkpoint_ns = ns.clone();
            }
            run.ns = Arc::from(ns);
        }
        Ok(run)
    }

    /// A run of `graph` nested in the task `ctx` belongs to. Its saver is the
    /// calling graph's (else the subgraph's own), unless `mode` is `Off`.
    pub(crate) fn nested(
        graph: Arc<Graph<S>>,
        own_saver: Option<Arc<dyn Checkpointer>>,
        ctx: &Context,
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
        let config = ctx.config().for_nested(&ns);
        let events = scope
            .events
            .as_ref()
            .map(|events| super::EventSink::nested(events, &ns));
        let mut run = Run::new(graph, config, events, saver)?;
        run.nested_events = scope.events.clone();
        if let Some(p) = &mut run.persistence {
            p.config.checkpoint_ns = ns.clone();
        }
        run.ns = Arc::from(ns);
        run.resume_map = scope
            .resume_map
            .as_deref()
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        run.nested = Some(Nested {
            resuming: ctx.nested_resumes(),
            persistent: mode == SubgraphCheckpoints::Persistent,
            parents: Arc::new(scope.parents_of_nested()),
            null_resume: scope.null_resume.clone(),
        });
        Ok(run)
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
