//! The checks of a `graph!` declaration that its tokens decide: every name an
//! edge uses is declared, no name is declared twice or reserved, START and END
//! stand where they can, and START has an edge. (What only types can tell, the
//! nodes a goto or a typed router names and what is reachable through them, is
//! checked by the const item of the expansion.)

use super::ast::{Endpoint, Graph, Head, PathMapDecl, Tail};
use crate::ctxt::Ctxt;
use proc_macro2::Span;
use syn::ext::IdentExt;

/// Names LangGraph reserves for its channels and config keys (graph-core's
/// `validate.rs` holds the same list for builder-made graphs).
const RESERVED: &[&str] = &[
    "__input__",
    "__interrupt__",
    "__resume__",
    "__error__",
    "__error_source_node__",
    "__no_writes__",
    "__pregel_push",
    "__pregel_pull",
    "__pregel_tasks",
    "__scheduled__",
    "__return__",
    "configurable",
    "checkpoint_map",
    "checkpoint_id",
    "checkpoint_ns",
];

/// A declared node's name as the graph knows it (`r#type` is `type`).
pub(crate) fn name_of(ident: &syn::Ident) -> String {
    ident.unraw().to_string()
}

const JOIN_TAIL: &str = "a conditional edge or a send leaves one node, not a join: join into a \
                         node first (`(a, b) -> c -> match router;`)";

pub(crate) fn check(cx: &Ctxt, graph: &Graph) {
    if graph.state.is_none() {
        cx.error_at(
            Span::call_site(),
            "graph! needs the graph's state type: add `state MyState;`",
        );
    }

    let mut names: Vec<String> = Vec::new();
    for node in &graph.nodes {
        let name = name_of(&node.name);
        if name == "START" || name == "END" || name == "__start__" || name == "__end__" {
            cx.error_spanned_by(
                &node.name,
                format!(
                    "`{name}` is reserved for the graph's {} and cannot name a node; give the \
                     node another name (`node other = {name};`)",
                    if name.contains("start") || name == "START" {
                        "entry"
                    } else {
                        "end"
                    }
                ),
            );
        } else if RESERVED.contains(&name.as_str()) || name.starts_with("__pregel_") {
            cx.error_spanned_by(
                &node.name,
                format!(
                    "`{name}` is a name LangGraph reserves for its own channels and config \
                     keys; give the node another name (`node other = {name};`)"
                ),
            );
        }
        if names.contains(&name) {
            cx.error_spanned_by(
                &node.name,
                format!(
                    "the node `{name}` is declared twice; remove one, or register the second \
                     under another name (`node other = {name};`)"
                ),
            );
        }
        names.push(name);
    }

    let mut has_entry = graph.nodes.iter().any(|n| n.options.dynamic.is_some());
    for edge in &graph.edges {
        // The chain after the head: each endpoint is a target, and a source too
        // unless it is the last one with no conditional edge or send after it.
        let mut chain: Vec<(&Endpoint, bool)> = Vec::new();
        match &edge.head {
            Head::One(first) => chain.push((first, false)),
            Head::Join { sources, .. } => {
                for source in sources {
                    match source {
                        Endpoint::End(token) => cx.error_spanned_by(
                            token,
                            "a join cannot wait for END: END is where the graph stops, not a \
                             node that runs; remove it from the join's sources",
                        ),
                        Endpoint::Start(token) => cx.error_spanned_by(
                            token,
                            "START cannot be one of a join's sources: a join waits for nodes \
                             that run; give START its own edge (`START -> a;`)",
                        ),
                        Endpoint::Node(ident) => declared(cx, &names, ident),
                    }
                }
                match (edge.steps.first(), &edge.tail) {
                    (Some(Endpoint::Start(token)), _) => cx.error_spanned_by(
                        token,
                        "a join cannot lead to START: START is the graph's entry; join into a \
                         node or END",
                    ),
                    (None, Some(Tail::Match { token, .. })) => cx.error_at(token.span, JOIN_TAIL),
                    (None, Some(Tail::Send { token, .. })) => cx.error_spanned_by(token, JOIN_TAIL),
                    _ => {}
                }
            }
        }
        chain.extend(edge.steps.iter().map(|e| (e, true)));
        let last = chain.len().saturating_sub(1);
        for (i, (endpoint, is_target)) in chain.iter().enumerate() {
            let is_source = i < last || edge.tail.is_some();
            match endpoint {
                Endpoint::Start(token) if *is_target => {
                    // A join's START target is reported above.
                    if i > 0 || matches!(edge.head, Head::One(_)) {
                        cx.error_spanned_by(
                            token,
                            "START cannot be the target of an edge: it is the graph's entry; \
                             edges leave it (`START -> a;`)",
                        );
                    }
                }
                Endpoint::Start(_) => has_entry = true,
                Endpoint::End(token) if is_source => cx.error_spanned_by(
                    token,
                    "no edge can leave END: the graph stops there; end the chain at END \
                     (`a -> END;`)",
                ),
                Endpoint::End(_) => {}
                Endpoint::Node(ident) => declared(cx, &names, ident),
            }
        }

        match &edge.tail {
            None => {}
            Some(Tail::Match { map, .. }) => {
                let targets: Vec<&Endpoint> = match map {
                    None => Vec::new(),
                    Some(PathMapDecl::List(list)) => list.iter().collect(),
                    Some(PathMapDecl::Keyed(entries)) => entries.iter().map(|(_, t)| t).collect(),
                };
                for target in targets {
                    match target {
                        Endpoint::Start(token) => cx.error_spanned_by(
                            token,
                            "a router cannot route to START; route to a node or END",
                        ),
                        Endpoint::End(_) => {}
                        Endpoint::Node(ident) => declared(cx, &names, ident),
                    }
                }
            }
            Some(Tail::Send { targets, .. }) => {
                for target in targets {
                    match target {
                        Endpoint::Start(token) | Endpoint::End(token) => cx.error_spanned_by(
                            token,
                            "a send starts a node with its own input; name a node, not \
                             START or END",
                        ),
                        Endpoint::Node(ident) => declared(cx, &names, ident),
                    }
                }
            }
        }
    }

    if !has_entry && graph.state.is_some() {
        cx.error_at(
            Span::call_site(),
            "this graph has no edge from START, so no node would ever run: add one, as in \
             `START -> first_node;` or `START -> match router;`",
        );
    }
}

/// Reports `ident` when no node of that name is declared, with the closest
/// declared name when one is close enough to be a misspelling.
fn declared(cx: &Ctxt, names: &[String], ident: &syn::Ident) {
    let name = name_of(ident);
    if names.contains(&name) {
        return;
    }
    let message = match closest(&name, names) {
        Some(close) => format!(
            "this graph declares no node `{name}`: did you mean `{close}`? (or declare it: \
             `node {name};`)"
        ),
        None => format!(
            "this graph declares no node `{name}`: declare it with `node {name};` (a #[node] \
             fn) or `node {name} = value;`"
        ),
    };
    cx.error_spanned_by(ident, message);
}

/// The declared name closest to `name`, at most a third of its length away (one
/// edit for short names), as `compile()` suggests for builder-made graphs.
fn closest<'a>(name: &str, names: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    names
        .iter()
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.as_str())
}

/// Levenshtein distance by characters (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names() {
        let names = vec!["answer".to_owned(), "escalate".to_owned()];
        assert_eq!(closest("anser", &names), Some("answer"));
        assert_eq!(closest("escalte", &names), Some("escalate"));
        assert_eq!(closest("review", &names), None);
    }
}
