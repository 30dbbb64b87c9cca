//! What `compile()`'s validation and the builder's drawing read of the nodes
//! and conditional edges, without the state type: built by a small generic
//! function, so that both readers are compiled once rather than once per state
//! type.

use super::StateGraph;
use crate::command::Targets;
use crate::state::State;
use std::any::TypeId;

/// A node, as validation and the drawing read it.
pub(super) struct NodeShape<'g> {
    pub(super) name: &'g str,
    /// Whether it takes the state (or a view of it) rather than a payload.
    pub(super) reads_state: bool,
    /// The type it takes as input (the state's for a view of it).
    pub(super) input: (TypeId, &'static str),
    pub(super) targets: Targets,
}

/// A conditional edge, as validation and the drawing read it.
pub(super) struct BranchShape<'g> {
    pub(super) source: &'g str,
    pub(super) router: &'static str,
    pub(super) path_map: Option<&'g crate::branch::PathMap>,
    pub(super) targets: Targets,
}

impl<S: State, C: ?Sized + 'static> StateGraph<S, C> {
    /// The state type's id and name.
    pub(super) fn state_type() -> (TypeId, &'static str) {
        (TypeId::of::<S>(), std::any::type_name::<S>())
    }

    /// Each node's shape, in the order they were added.
    pub(super) fn node_shapes(&self) -> Vec<NodeShape<'_>> {
        self.nodes
            .iter()
            .map(|n| {
                let reads_state = n.runner.reads_state();
                NodeShape {
                    name: &n.name,
                    reads_state,
                    // A node taking a view of the state reads the state like one taking it.
                    input: if reads_state {
                        Self::state_type()
                    } else {
                        n.runner.input_type()
                    },
                    targets: n.runner.targets(),
                }
            })
            .collect()
    }

    /// Each conditional edge's shape, in the order they were added.
    pub(super) fn branch_shapes(&self) -> Vec<BranchShape<'_>> {
        self.branches
            .iter()
            .map(|b| BranchShape {
                source: &b.source,
                router: b.router.name(),
                path_map: b.router.path_map(),
                targets: b.router.targets(),
            })
            .collect()
    }
}
