//! Drawing a compiled graph: Mermaid and Graphviz DOT, with every declared route.
//!
//! Static edges are solid; conditional edges and `Command` gotos (both known from
//! their `#[derive(Goto)]` types) are dotted; routes decided at run time (node
//! names as strings, `Send`s) cannot be drawn and are listed as a comment.

use super::StateGraph;
use crate::command::{Destination, Targets};
use crate::state::State;
use crate::{END, START};
use std::fmt::Write;

/// How an edge of the drawing was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum EdgeKind {
    /// `add_edge(a, b)`.
    Static,
    /// One source of `add_edge((a, b), c)`.
    Join,
    /// A target of a conditional edge's router type.
    Conditional,
    /// A target of a node's `Command` goto type.
    Goto,
}

/// The graph as drawn: nodes in insertion order and every declared edge.
#[derive(Debug, Clone, Default)]
pub(crate) struct Drawing {
    nodes: Vec<(String, bool)>,
    edges: Vec<(String, String, EdgeKind)>,
    dynamic: Vec<String>,
}

impl Drawing {
    pub(crate) fn of<S: State>(graph: &StateGraph<S>) -> Self {
        let mut drawing = Drawing {
            nodes: graph
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.defer))
                .collect(),
            ..Drawing::default()
        };
        for edge in &graph.edges {
            let kind = if edge.sources.len() > 1 {
                EdgeKind::Join
            } else {
                EdgeKind::Static
            };
            for source in &edge.sources {
                drawing
                    .edges
                    .push((source.clone(), edge.target.clone(), kind));
            }
        }
        let mut declared = |from: &str, targets: Targets, kind: EdgeKind| match targets {
            Targets::Declared(list) => {
                for t in list {
                    let to = match t {
                        Destination::Node(n) => (*n).to_owned(),
                        Destination::End => END.to_owned(),
                    };
                    drawing.edges.push((from.to_owned(), to, kind));
                }
            }
            Targets::Dynamic => drawing.dynamic.push(from.to_owned()),
            Targets::None => {}
        };
        for branch in &graph.branches {
            declared(
                &branch.source,
                branch.router.targets(),
                EdgeKind::Conditional,
            );
        }
        for node in &graph.nodes {
            declared(&node.name, node.runner.targets(), EdgeKind::Goto);
        }
        drawing.edges.sort();
        drawing.edges.dedup();
        drawing.dynamic.sort();
        drawing.dynamic.dedup();
        drawing
    }

    fn uses_end(&self) -> bool {
        self.edges.iter().any(|(_, to, _)| to == END)
    }

    /// Mermaid flowchart source.
    pub(crate) fn mermaid(&self) -> String {
        let ids = self.mermaid_ids();
        // Edges naming a node the graph lacks were rejected by `compile()`.
        let id = |n: &str| ids.get(n).cloned().unwrap_or_else(|| n.to_owned());
        let mut out = String::from("graph TD;\n");
        let _ = writeln!(out, "\t{}([\"{START}\"]):::first", id(START));
        for (name, deferred) in &self.nodes {
            let label = if *deferred {
                format!("{name} (deferred)")
            } else {
                name.clone()
            };
            let _ = writeln!(out, "\t{}[\"{}\"]", id(name), label.replace('"', "#quot;"));
        }
        if self.uses_end() {
            let _ = writeln!(out, "\t{}([\"{END}\"]):::last", id(END));
        }
        for (from, to, kind) in &self.edges {
            let arrow = match kind {
                EdgeKind::Static | EdgeKind::Join => "-->",
                EdgeKind::Conditional | EdgeKind::Goto => "-.->",
            };
            let _ = writeln!(out, "\t{} {arrow} {};", id(from), id(to));
        }
        for from in &self.dynamic {
            let _ = writeln!(out, "\t%% {from} also routes at run time (names or Sends)");
        }
        out.push_str("\tclassDef default fill:#f2f0ff,line-height:1.2\n");
        out.push_str("\tclassDef first fill-opacity:0\n");
        out.push_str("\tclassDef last fill:#bfb6fc\n");
        out
    }

    /// Graphviz DOT source.
    pub(crate) fn dot(&self) -> String {
        let quote = |n: &str| format!("\"{}\"", n.replace('\\', "\\\\").replace('"', "\\\""));
        let mut out = String::from("digraph {\n\trankdir=TB;\n");
        let _ = writeln!(out, "\t{} [shape=oval];", quote(START));
        for (name, deferred) in &self.nodes {
            let style = if *deferred { " style=dashed" } else { "" };
            let _ = writeln!(out, "\t{} [shape=box{style}];", quote(name));
        }
        if self.uses_end() {
            let _ = writeln!(out, "\t{} [shape=oval];", quote(END));
        }
        for (from, to, kind) in &self.edges {
            let style = match kind {
                EdgeKind::Static | EdgeKind::Join => "",
                EdgeKind::Conditional | EdgeKind::Goto => " [style=dashed]",
            };
            let _ = writeln!(out, "\t{} -> {}{style};", quote(from), quote(to));
        }
        for from in &self.dynamic {
            let _ = writeln!(out, "\t// {from} also routes at run time (names or Sends)");
        }
        out.push_str("}\n");
        out
    }
}

impl Drawing {
    /// Mermaid node ids: the names themselves when they are all plain identifiers,
    /// otherwise `n0`, `n1`, ... for every node (names stay as labels).
    fn mermaid_ids(&self) -> std::collections::HashMap<&str, String> {
        let plain =
            |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let all_plain = self.nodes.iter().all(|(n, _)| plain(n));
        let mut ids: std::collections::HashMap<&str, String> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, (n, _))| {
                (
                    n.as_str(),
                    if all_plain {
                        n.clone()
                    } else {
                        format!("n{i}")
                    },
                )
            })
            .collect();
        ids.insert(START, START.to_owned());
        ids.insert(END, END.to_owned());
        ids
    }
}
