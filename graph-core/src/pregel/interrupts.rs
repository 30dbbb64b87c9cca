//! Interrupts: the run's breakpoints, the answers it resumes with, and what
//! it remembers of the last resume (docs/semantics.md §5). Pausing is
//! `pause`'s, resuming `resume`'s.

use crate::checkpoint::Blob;
use crate::compiled::Graph;
use crate::config::RunConfig;
use crate::error::{BreakpointSide, ConfigError, GraphError};
use crate::interrupt::{Breakpoints, NullResume};
use crate::state::State;
use std::sync::Arc;

/// What a run knows of interrupts and resuming, owned by the run.
pub(crate) struct Interrupts {
    /// Per channel: its version when the thread was last resumed
    /// (`versions_seen["__interrupt__"]`, 0 = never); breakpoints fire only after
    /// something changed since. Empty until a resume or a restored checkpoint
    /// sets it (a missing entry reads as 0): most runs never need it.
    pub(super) seen: Vec<u64>,
    /// The highest of `seen` when it was set: any version above it was
    /// written since (every new version is above all earlier ones).
    pub(super) seen_max: u64,
    /// A restored checkpoint had a channel newer than `seen`.
    pub(super) changed: bool,
    pub(super) before: Breakpoints,
    pub(super) after: Breakpoints,
    /// `Command::resume`'s value, for the first superstep of the run.
    pub(super) null_resume: Option<Arc<NullResume>>,
    /// `Command::resume_map`'s answers by interrupt id.
    pub(super) resume_map: Vec<(String, Blob)>,
    /// Whether the current superstep is the first of a resumed run.
    pub(super) resuming: bool,
}

impl Interrupts {
    /// A run's interrupts: the call's breakpoints, else the graph's; nothing
    /// to resume yet.
    pub(super) fn new<S: State>(
        graph: &Graph<S>,
        config: &RunConfig,
        spare: &mut super::spare::Spare,
    ) -> Result<Self, GraphError> {
        let seen = std::mem::take(&mut spare.interrupts_seen);
        Ok(Interrupts {
            seen,
            seen_max: 0,
            changed: false,
            before: breakpoints(graph, config.interrupt_before(), true)?,
            after: breakpoints(graph, config.interrupt_after(), false)?,
            null_resume: None,
            resume_map: Vec::new(),
            resuming: false,
        })
    }

    /// Whether some channel was written since the thread was last resumed
    /// (breakpoints fire only then), `max_version` being the highest now.
    pub(super) fn changed_since_resume(&self, max_version: u64) -> bool {
        self.changed || max_version > self.seen_max
    }

    /// A superstep completed: the answers given for the resume are used up.
    pub(super) fn step_done(&mut self) {
        self.resuming = false;
        self.null_resume = None;
        self.resume_map.clear();
    }
}

/// The breakpoints of a run: the call's, else the graph's.
fn breakpoints<S: State>(
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
    if let Breakpoints::Nodes(names) = call
        && let Some(unknown) = names
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
    Ok(call.clone())
}
