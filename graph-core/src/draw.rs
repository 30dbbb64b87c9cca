//! Drawing a compiled graph: Mermaid and Graphviz DOT, with every declared route.
//!
//! Static edges are solid; conditional edges and `Command` gotos (both known from
//! their `#[derive(Goto)]` types) are dotted, and so are the destinations declared
//! with [`StateGraph::destinations`] (labelled `Send` when the target takes a
//! payload, so only a `Send` can start it). Routes decided at run time that nothing
//! declares cannot be drawn and are listed as a comment. Subgraph nodes can be
//! drawn expanded ([`DrawOptions::xray`]).

use crate::{END, START};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::sync::Arc;

/// Options of [`CompiledGraph::draw_mermaid_with`](crate::CompiledGraph::draw_mermaid_with)
/// and [`draw_dot_with`](crate::CompiledGraph::draw_dot_with).
///
/// ```
/// use stategraph::DrawOptions;
///
/// let options = DrawOptions::new().xray(1);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrawOptions {
    xray: usize,
}

impl DrawOptions {
    /// The default drawing: every subgraph is one node.
    pub fn new() -> Self {
        Self::default()
    }

    /// Draws subgraph nodes expanded, `depth` levels deep (LangGraph's
    /// `get_graph(xray=depth)`; `usize::MAX` expands every level): each is a
    /// box (a Mermaid `subgraph`, a DOT `cluster`) holding the child's own nodes,
    /// named `<node>:<child node>`; the parent's edges go into the child's
    /// `__start__` and leave from its `__end__`. In a box, a node that routes
    /// nowhere is drawn with an edge to the box's `__end__` (an edge to END
    /// changes nothing for such a node), so the way out of the box is visible.
    pub fn xray(mut self, depth: usize) -> Self {
        self.xray = depth;
        self
    }
}

/// How an edge of the drawing was declared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum EdgeKind {
    /// `add_edge(a, b)`.
    Static,
    /// One source of `add_edge((a, b), c)`.
    Join,
    /// A target of a conditional edge's router type.
    Conditional,
    /// A target of a conditional edge's path map, labelled with its key.
    Mapped(String),
    /// A target of a node's `Command` goto type.
    Goto,
    /// A destination declared with `StateGraph::destinations`.
    Declared,
    /// A declared destination that takes a payload: only a `Send` reaches it.
    Send,
}

/// The graph as drawn: nodes in insertion order, every declared edge, and the
/// drawings of its subgraph nodes.
///
/// `pub` only so that the hidden `ErasedSubgraph` trait can hand it out; the
/// module is private to the crate. The builder makes it
/// (`StateGraph::compile`).
#[derive(Debug, Clone, Default)]
pub struct Drawing {
    pub(crate) nodes: Vec<(String, bool)>,
    pub(crate) edges: Vec<(String, String, EdgeKind)>,
    pub(crate) dynamic: Vec<String>,
    pub(crate) subgraphs: HashMap<String, Arc<Drawing>>,
}

impl Drawing {
    fn uses_end(&self) -> bool {
        self.edges.iter().any(|(_, to, _)| to == END)
    }

    /// Whether the node `name` has no edge out and routes nothing at run time:
    /// a run that reaches it ends there.
    fn routes_nowhere(&self, name: &str) -> bool {
        !self.edges.iter().any(|(from, _, _)| from == name)
            && !self.dynamic.iter().any(|d| d == name)
    }

    /// LangGraph's `get_graph().to_json()`: `{"nodes": [{"id", "type",
    /// "data"}], "edges": [{"source", "target", "conditional"?}]}`, subgraph
    /// nodes not expanded.
    pub(crate) fn json(&self) -> serde_json::Value {
        // A node that routes nowhere ends the run: LangGraph draws its edge to END.
        let ends: Vec<(String, String, EdgeKind)> = self
            .nodes
            .iter()
            .filter(|(n, _)| self.routes_nowhere(n))
            .map(|(n, _)| (n.clone(), END.to_owned(), EdgeKind::Static))
            .collect();
        let edges: Vec<_> = self.edges.iter().chain(&ends).cloned().collect();
        to_json(self.nodes.iter().map(|(n, _)| n.as_str()), &edges)
    }

    /// [`json`](Self::json) with subgraph nodes expanded `options.xray`
    /// levels deep, as LangGraph's `get_graph(xray=…).to_json()`: a child's
    /// nodes are named `<node>:<child node>` (id and name), and its `__start__`
    /// and `__end__` are left out, the parent's edges joined straight to the
    /// child's first and last nodes.
    pub(crate) fn json_with(&self, options: &DrawOptions) -> serde_json::Value {
        if options.xray == 0 {
            return self.json();
        }
        let flat = Flat::of(self, options);
        let expanded = |name: &str| self.subgraphs.contains_key(name);
        let mut edges = flat.edges;
        // As in `json`: a top-level node that routes nowhere ends the run.
        for (name, _) in &self.nodes {
            if self.routes_nowhere(name) {
                let from = if expanded(name) {
                    format!("{name}:{END}")
                } else {
                    name.clone()
                };
                edges.push((from, END.to_owned(), EdgeKind::Static));
            }
        }
        // Join the edges through each child's START and END, innermost first
        // (the longest keys), so nested boxes collapse in turn.
        let mut inner: Vec<String> = flat
            .items
            .iter()
            .filter(|i| i.level > 0 && matches!(i.kind, ItemKind::Start | ItemKind::End))
            .map(|i| i.key.clone())
            .collect();
        inner.sort_by_key(|k| std::cmp::Reverse(k.matches(':').count()));
        for key in &inner {
            let (ins, rest): (Vec<_>, Vec<_>) = edges.into_iter().partition(|(_, to, _)| to == key);
            let (outs, rest): (Vec<_>, Vec<_>) =
                rest.into_iter().partition(|(from, _, _)| from == key);
            edges = rest;
            for (from, _, in_kind) in &ins {
                for (_, to, out_kind) in &outs {
                    // A route that is conditional on either side is conditional.
                    let kind = match in_kind {
                        EdgeKind::Static | EdgeKind::Join => out_kind.clone(),
                        _ => in_kind.clone(),
                    };
                    edges.push((from.clone(), to.clone(), kind));
                }
            }
        }
        let nodes = flat.items.iter().filter_map(|item| match item.kind {
            ItemKind::Node { .. } => Some(item.key.as_str()),
            _ => None,
        });
        to_json(nodes, &edges)
    }

    /// Mermaid flowchart source.
    pub(crate) fn mermaid(&self, options: &DrawOptions) -> String {
        let flat = Flat::of(self, options);
        let ids = flat.mermaid_ids();
        // Edges naming a node the graph lacks were rejected by `compile()`.
        let id = |key: &str| ids.get(key).cloned().unwrap_or_else(|| key.to_owned());
        let mut out = String::from("graph TD;\n");
        for item in &flat.items {
            let tabs = "\t".repeat(item.level + 1);
            let label = item.label.replace('"', "#quot;");
            let _ = match item.kind {
                ItemKind::Start => writeln!(out, "{tabs}{}([\"{label}\"]):::first", id(&item.key)),
                ItemKind::End => writeln!(out, "{tabs}{}([\"{label}\"]):::last", id(&item.key)),
                ItemKind::Node { deferred: false } => {
                    writeln!(out, "{tabs}{}[\"{label}\"]", id(&item.key))
                }
                ItemKind::Node { deferred: true } => {
                    writeln!(out, "{tabs}{}[\"{label} (deferred)\"]", id(&item.key))
                }
                ItemKind::Open => writeln!(out, "{tabs}subgraph {} [\"{label}\"]", id(&item.key)),
                ItemKind::Close => writeln!(out, "{tabs}end"),
            };
        }
        for (from, to, kind) in &flat.edges {
            let arrow = match kind {
                EdgeKind::Static | EdgeKind::Join => "-->".into(),
                EdgeKind::Conditional | EdgeKind::Goto | EdgeKind::Declared => "-.->".into(),
                EdgeKind::Mapped(key) => format!("-. {} .->", key.replace('"', "#quot;")),
                EdgeKind::Send => "-. Send .->".into(),
            };
            let _ = writeln!(out, "\t{} {arrow} {};", id(from), id(to));
        }
        for from in &flat.dynamic {
            let _ = writeln!(out, "\t%% {from} also routes at run time (names or Sends)");
        }
        out.push_str("\tclassDef default fill:#f2f0ff,line-height:1.2\n");
        out.push_str("\tclassDef first fill-opacity:0\n");
        out.push_str("\tclassDef last fill:#bfb6fc\n");
        out
    }

    /// Graphviz DOT source.
    pub(crate) fn dot(&self, options: &DrawOptions) -> String {
        let quote = |n: &str| format!("\"{}\"", n.replace('\\', "\\\\").replace('"', "\\\""));
        let flat = Flat::of(self, options);
        let mut out = String::from("digraph {\n\trankdir=TB;\n");
        for item in &flat.items {
            let tabs = "\t".repeat(item.level + 1);
            // Nodes of an expanded subgraph are named `<node>:<child node>`; the
            // label shows the child's own name.
            let label = if item.level > 0 {
                format!(" label={}", quote(&item.label))
            } else {
                String::new()
            };
            let key = quote(&item.key);
            let _ = match item.kind {
                ItemKind::Start | ItemKind::End => {
                    writeln!(out, "{tabs}{key} [shape=oval{label}];")
                }
                ItemKind::Node { deferred } => {
                    let style = if deferred { " style=dashed" } else { "" };
                    writeln!(out, "{tabs}{key} [shape=box{style}{label}];")
                }
                ItemKind::Open => {
                    let cluster = quote(&format!("cluster_{}", item.key));
                    writeln!(out, "{tabs}subgraph {cluster} {{")
                        .and_then(|()| writeln!(out, "{tabs}\tlabel={};", quote(&item.label)))
                }
                ItemKind::Close => writeln!(out, "{tabs}}}"),
            };
        }
        for (from, to, kind) in &flat.edges {
            let style = match kind {
                EdgeKind::Static | EdgeKind::Join => String::new(),
                EdgeKind::Conditional | EdgeKind::Goto | EdgeKind::Declared => {
                    " [style=dashed]".into()
                }
                EdgeKind::Mapped(key) => format!(" [style=dashed label={}]", quote(key)),
                EdgeKind::Send => " [style=dashed label=\"Send\"]".into(),
            };
            let _ = writeln!(out, "\t{} -> {}{style};", quote(from), quote(to));
        }
        for from in &flat.dynamic {
            let _ = writeln!(out, "\t// {from} also routes at run time (names or Sends)");
        }
        out.push_str("}\n");
        out
    }
}

/// LangGraph's `to_json()` shape: START, `nodes`, END when an edge reaches
/// it; a conditional edge is marked, a path-map edge labelled with its key.
fn to_json<'a>(
    nodes: impl Iterator<Item = &'a str>,
    edges: &[(String, String, EdgeKind)],
) -> serde_json::Value {
    use serde_json::json;
    let node = |name: &str| json!({"id": name, "type": "runnable", "data": {"name": name}});
    let mut out = vec![node(START)];
    out.extend(nodes.map(node));
    if edges.iter().any(|(_, to, _)| to == END) {
        out.push(json!({"id": END}));
    }
    let edges = edges
        .iter()
        .map(|(from, to, kind)| match kind {
            EdgeKind::Static | EdgeKind::Join => json!({"source": from, "target": to}),
            EdgeKind::Mapped(key) => json!({
                "source": from, "target": to, "data": key, "conditional": true
            }),
            _ => json!({"source": from, "target": to, "conditional": true}),
        })
        .collect::<Vec<_>>();
    json!({"nodes": out, "edges": edges})
}

/// What one line of the node part of a drawing declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    Start,
    End,
    Node {
        deferred: bool,
    },
    /// The start of an expanded subgraph's box.
    Open,
    /// The end of the innermost open box.
    Close,
}

#[derive(Debug)]
struct Item {
    kind: ItemKind,
    /// The qualified name: `node`, or `parent:node` inside an expanded subgraph
    /// (node names cannot contain `:`, so keys are unique).
    key: String,
    label: String,
    /// How many boxes it is inside.
    level: usize,
}

/// A drawing with its expanded subgraphs flattened into one list of items and
/// one list of edges between qualified names.
#[derive(Debug, Default)]
struct Flat {
    items: Vec<Item>,
    edges: Vec<(String, String, EdgeKind)>,
    dynamic: Vec<String>,
}

impl Flat {
    fn of(drawing: &Drawing, options: &DrawOptions) -> Self {
        let mut flat = Flat::default();
        flat.add(drawing, "", 0, options.xray);
        flat.edges.sort();
        flat
    }

    fn add(&mut self, drawing: &Drawing, prefix: &str, level: usize, depth: usize) {
        let expanded = |name: &str| (depth > 0).then(|| drawing.subgraphs.get(name)).flatten();
        let item = |kind, name: &str| Item {
            kind,
            key: format!("{prefix}{name}"),
            label: name.to_owned(),
            level,
        };
        self.items.push(item(ItemKind::Start, START));
        for (name, deferred) in &drawing.nodes {
            match expanded(name) {
                Some(child) => {
                    self.items.push(item(ItemKind::Open, name));
                    self.add(child, &format!("{prefix}{name}:"), level + 1, depth - 1);
                    self.items.push(item(ItemKind::Close, name));
                }
                None => self.items.push(item(
                    ItemKind::Node {
                        deferred: *deferred,
                    },
                    name,
                )),
            }
        }
        // A subgraph's box always shows where it ends, even when nothing in it
        // routes to END explicitly: the parent's outgoing edges start there.
        if level > 0 || drawing.uses_end() {
            self.items.push(item(ItemKind::End, END));
        }
        let out_of = |name: &str| match expanded(name) {
            Some(_) => format!("{prefix}{name}:{END}"),
            None => format!("{prefix}{name}"),
        };
        let into = |name: &str| match expanded(name) {
            Some(_) => format!("{prefix}{name}:{START}"),
            None => format!("{prefix}{name}"),
        };
        for (from, to, kind) in &drawing.edges {
            self.edges.push((out_of(from), into(to), kind.clone()));
        }
        if level > 0 {
            // In a box, a node that routes nowhere ends its branch: drawn as the
            // edge to END it is equivalent to, so the way out is visible.
            let routes = |name: &str| {
                drawing.edges.iter().any(|(from, _, _)| from == name)
                    || drawing.dynamic.iter().any(|from| from == name)
            };
            for (name, _) in drawing.nodes.iter().filter(|(n, _)| !routes(n)) {
                self.edges
                    .push((out_of(name), format!("{prefix}{END}"), EdgeKind::Static));
            }
        }
        self.dynamic
            .extend(drawing.dynamic.iter().map(|from| format!("{prefix}{from}")));
    }

    /// Mermaid ids: the keys with `:` written `_` when every name is a plain
    /// identifier and no two keys meet that way; otherwise `n0`, `n1`, ... for
    /// every item in order (names stay as labels). The top graph's `__start__` and
    /// `__end__` keep their names.
    fn mermaid_ids(&self) -> HashMap<&str, String> {
        let plain = |key: &str| {
            key.split(':')
                .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        };
        let named: HashMap<&str, String> = self
            .items
            .iter()
            .map(|i| (i.key.as_str(), i.key.replace(':', "_")))
            .collect();
        let distinct = named.values().collect::<HashSet<_>>().len() == named.len();
        if distinct && self.items.iter().all(|i| plain(&i.key)) {
            return named;
        }
        let mut ids = HashMap::new();
        for item in &self.items {
            if item.key == START || item.key == END || ids.contains_key(item.key.as_str()) {
                continue;
            }
            let id = format!("n{}", ids.len());
            ids.insert(item.key.as_str(), id);
        }
        ids.insert(START, START.to_owned());
        ids.insert(END, END.to_owned());
        ids
    }
}
