//! `compile()` validation (docs/semantics.md §3.4): every problem is collected
//! and reported together, each message naming the node and the fix.

use super::StateGraph;
use crate::command::{Destination, Targets};
use crate::error::GraphError;
use crate::state::State;
use crate::{END, START};
use std::any::TypeId;
use std::collections::{HashMap, HashSet};

/// Names LangGraph reserves for its own channels and config keys.
const RESERVED: &[&str] = &[
    "langsmith:hidden",
    "__input__",
    "__interrupt__",
    "__resume__",
    "__error__",
    "__error_source_node__",
    "__no_writes__",
    "__pregel_push",
    "__pregel_pull",
    "__scheduled__",
    "__return__",
    "configurable",
    "checkpoint_map",
    "checkpoint_id",
    "checkpoint_ns",
];

fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
        || name.starts_with("__pregel_") && name != crate::checkpoint::TASKS_CHANNEL
        || name == "|"
        || name == ":"
}

pub(crate) fn validate<S: State>(graph: &StateGraph<S>) -> Result<(), GraphError> {
    let mut errors: Vec<String> = graph.errors.clone();
    let mut names: HashSet<&str> = HashSet::new();

    for field in S::FIELDS {
        if is_reserved(field) || *field == crate::checkpoint::TASKS_CHANNEL || *field == START {
            errors.push(format!(
                "Channel name '{field}' is reserved; rename the state field `{field}`"
            ));
        }
    }

    for node in &graph.nodes {
        let n = node.name.as_str();
        if n == START || n == END {
            errors.push(format!("Node `{n}` is reserved."));
        } else if let Some(c) = ['|', ':'].into_iter().find(|c| n.contains(*c)) {
            errors.push(format!(
                "'{c}' is a reserved character and is not allowed in the node names (node `{n}`)."
            ));
        } else if is_reserved(n) || n == crate::checkpoint::TASKS_CHANNEL {
            errors.push(format!("Node name '{n}' is reserved; choose another name"));
        } else if n.is_empty() {
            errors.push("a node name cannot be empty".to_owned());
        }
        if !names.insert(n) {
            errors.push(format!(
                "Node `{n}` already present. Each node needs a unique name; add the second one with \
                 add_node_with(node, NodeOptions::new().name(\"...\"))"
            ));
        }
    }

    let state_type = TypeId::of::<S>();
    let state_name = std::any::type_name::<S>();
    let inputs: std::collections::HashMap<&str, (TypeId, &'static str)> = graph
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.runner.input_type()))
        .collect();
    let node_input = |name: &str| inputs.get(name).copied();
    let mut pull_targets: Vec<(String, String)> = Vec::new();
    let mut has_entry = false;

    // Join channels by name: different joins must not share one.
    let mut joins: HashMap<String, &[String]> = HashMap::new();
    for edge in &graph.edges {
        let target = edge.target.as_str();
        let join = edge.sources.len() > 1;
        if edge.sources.is_empty() {
            errors.push(format!("an edge into `{target}` has no source"));
        }
        if join {
            let channel = crate::compiled::join_channel_name(&edge.sources, target);
            if let Some(first) = joins.get(&channel) {
                errors.push(format!(
                    "the join edges from `{}` and from `{}` into `{target}` would share the \
                     channel `{channel}`; rename the nodes so that no name contains `+`",
                    first.join("`, `"),
                    edge.sources.join("`, `"),
                ));
            } else {
                joins.insert(channel, &edge.sources);
            }
        }
        for source in &edge.sources {
            if source == END {
                errors.push("END cannot be a start node".to_owned());
            } else if join && source == START {
                errors.push(format!(
                    "START cannot be one of the sources of a join edge into `{target}`"
                ));
            } else if join && !names.contains(source.as_str()) {
                errors.push(format!("Need to add_node `{source}` first"));
            } else if source != START && !names.contains(source.as_str()) {
                errors.push(format!("Found edge starting at unknown node '{source}'"));
            }
            if source == START {
                has_entry = true;
            }
        }
        if target == START {
            errors.push("START cannot be an end node".to_owned());
        } else if target != END && !names.contains(target) {
            errors.push(format!("Found edge ending at unknown node `{target}`"));
        } else if target != END {
            let from = edge.sources.join("`, `");
            pull_targets.push((target.to_owned(), format!("the edge from `{from}`")));
        }
    }

    for branch in &graph.branches {
        let src = branch.source.as_str();
        if src == END {
            errors.push("END cannot be a start node".to_owned());
        } else if src != START && !names.contains(src) {
            errors.push(format!("Found edge starting at unknown node '{src}'"));
        }
        if src == START {
            has_entry = true;
        }
        if let Targets::Declared(targets) = branch.router.targets() {
            for t in targets {
                if let Destination::Node(t) = t {
                    if !names.contains(t) {
                        errors.push(format!(
                            "At '{src}' node, the conditional edge found unknown target '{t}': \
                             add a node named `{t}` or remove that variant from the router's goto type"
                        ));
                    } else {
                        pull_targets
                            .push(((*t).to_owned(), format!("the conditional edge of `{src}`")));
                    }
                }
            }
        }
    }

    for (node, targets) in graph.node_targets() {
        if let Targets::Declared(targets) = targets {
            for t in targets {
                if let Destination::Node(t) = t {
                    if !names.contains(t) {
                        errors.push(format!(
                            "node `{node}` can go to `{t}` (a variant of its Command goto type), but \
                             the graph has no node `{t}`: add it with add_node, or remove the variant"
                        ));
                    } else {
                        pull_targets.push(((*t).to_owned(), format!("the goto type of `{node}`")));
                    }
                }
            }
        }
    }

    for (src, targets) in &graph.destinations {
        if src == END {
            errors.push("END cannot be a start node".to_owned());
        } else if src != START && !names.contains(src.as_str()) {
            errors.push(format!(
                "destinations names source `{src}`, which the graph does not have: add it with add_node"
            ));
        }
        for t in targets {
            if t == START || (t != END && !names.contains(t.as_str())) {
                errors.push(format!(
                    "destinations of `{src}` name `{t}`, which the graph does not have: add it with \
                     add_node, or remove it from the destinations"
                ));
            }
        }
    }

    let mut reported = HashSet::new();
    for (target, via) in &pull_targets {
        if let Some((ty, ty_name)) = node_input(target) {
            if ty != state_type && reported.insert(target.clone()) {
                errors.push(format!(
                    "node `{target}` takes a `{ty_name}` as input, not the graph state `{state_name}`, \
                     so it can only be started by a Send; it is also reached by {via}"
                ));
            }
        }
    }

    for (which, at) in [
        ("before", &graph.interrupt_before),
        ("after", &graph.interrupt_after),
    ] {
        if let crate::interrupt::Breakpoints::Nodes(nodes) = at {
            for n in nodes {
                if !names.contains(n.as_str()) {
                    errors.push(format!(
                        "interrupt_{which} names node `{n}`, which the graph does not have: add it \
                         with add_node, or use \"*\" for every node"
                    ));
                }
            }
        }
    }

    if !has_entry {
        errors.push(
            "Graph must have an entrypoint: add at least one edge from START to another node"
                .to_owned(),
        );
    }

    if errors.is_empty() {
        Ok(())
    } else {
        Err(GraphError::InvalidGraph { problems: errors })
    }
}
