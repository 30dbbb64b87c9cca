//! The builder's drawing of itself: every node, every declared edge and route,
//! and the drawings of its subgraph nodes (rendered by `crate::draw`).

use super::shape::{BranchShape, NodeShape};
use super::StateGraph;
use crate::command::{Destination, Targets};
use crate::draw::{Drawing, EdgeKind};
use crate::state::State;
use crate::END;
use std::collections::HashSet;

impl Drawing {
    pub(crate) fn of<S: State, C: ?Sized + 'static>(graph: &StateGraph<S, C>) -> Self {
        let drawing = Drawing {
            nodes: graph
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.defer))
                .collect(),
            subgraphs: graph
                .nodes
                .iter()
                .filter_map(|n| Some((n.name.clone(), n.runner.as_subgraph()?.drawing())))
                .collect(),
            ..Drawing::default()
        };
        let (nodes, branches) = (graph.node_shapes(), graph.branch_shapes());
        drawing.with_edges(&nodes, &graph.edges, &branches, &graph.destinations)
    }

    /// The edges of the drawing. Not generic over the state (`of` is), so that
    /// it is compiled once.
    fn with_edges(
        mut self,
        nodes: &[NodeShape<'_>],
        edges: &[super::EdgeDef],
        branches: &[BranchShape<'_>],
        destinations: &[(String, Vec<String>)],
    ) -> Self {
        let drawing = &mut self;
        for edge in edges {
            let kind = if edge.sources.len() > 1 {
                EdgeKind::Join
            } else {
                EdgeKind::Static
            };
            for source in &edge.sources {
                drawing
                    .edges
                    .push((source.clone(), edge.target.clone(), kind.clone()));
            }
        }
        let mut declared = |from: &str, targets: Targets, kind: EdgeKind| match targets {
            Targets::Declared(list) => {
                for t in list {
                    let to = match t {
                        Destination::Node(n) => (*n).to_owned(),
                        Destination::End => END.to_owned(),
                    };
                    drawing.edges.push((from.to_owned(), to, kind.clone()));
                }
            }
            Targets::Dynamic => drawing.dynamic.push(from.to_owned()),
            Targets::None => {}
        };
        let mut mapped = Vec::new();
        for branch in branches {
            match branch.path_map {
                // As LangGraph: each key labels its edge, unless it is the
                // target's own name (a list path map).
                Some(map) => {
                    for (key, target) in map.iter() {
                        let kind = if key == target {
                            EdgeKind::Conditional
                        } else {
                            EdgeKind::Mapped(key.to_owned())
                        };
                        mapped.push((branch.source.to_owned(), target.to_owned(), kind));
                    }
                }
                None => declared(branch.source, branch.targets, EdgeKind::Conditional),
            }
        }
        for node in nodes {
            declared(node.name, node.targets, EdgeKind::Goto);
        }
        drawing.edges.extend(mapped);
        let takes_payload: HashSet<&str> = nodes
            .iter()
            .filter(|n| !n.reads_state)
            .map(|n| n.name)
            .collect();
        let mut explained = HashSet::new();
        for (from, targets) in destinations {
            explained.insert(from.as_str());
            for to in targets {
                let kind = if takes_payload.contains(to.as_str()) {
                    EdgeKind::Send
                } else {
                    EdgeKind::Declared
                };
                drawing.edges.push((from.clone(), to.clone(), kind));
            }
        }
        drawing
            .dynamic
            .retain(|from| !explained.contains(from.as_str()));
        drawing.edges.sort();
        drawing.edges.dedup();
        drawing.dynamic.sort();
        drawing.dynamic.dedup();
        self
    }
}
