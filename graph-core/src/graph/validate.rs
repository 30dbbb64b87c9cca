//! `compile()` validation (docs/semantics.md §3.4): every problem is collected
//! and reported together, each message naming the node and the fix.

use super::shape::{BranchShape, NodeShape};
use super::StateGraph;
use crate::command::{Destination, Targets};
use crate::error::{BreakpointSide, GraphError, GraphProblem, Reach};
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

/// The name of the node in `nodes` closest to `name`, when it is close enough to
/// be a misspelling: at most one edit for names of up to five characters, two up to
/// eight, and so on (a third of the length). Ties go to the node added first.
fn closest(name: &str, nodes: &[NodeShape<'_>]) -> Option<String> {
    let limit = (name.chars().count() / 3).max(1);
    nodes
        .iter()
        .map(|node| (edit_distance(name, node.name), node.name))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, node)| node.to_owned())
}

/// The optimal string alignment distance between `a` and `b`, by characters: the
/// number of insertions, deletions, substitutions and swaps of two adjacent
/// characters that turn one into the other, each substring edited once (so
/// `stpe` is one edit from `step`). A few lines here rather than a dependency
/// (strsim) for the one "did you mean" of `compile()`; node names are short.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: `two` is row i-2, `one` row i-1, `row` row i.
    let mut two: Vec<usize> = vec![0; b.len() + 1];
    let mut one: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (one[j] + 1).min(row[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(two[j - 2] + 1);
            }
            row[j] = d;
        }
        std::mem::swap(&mut two, &mut one);
        std::mem::swap(&mut one, &mut row);
    }
    one[b.len()]
}

fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
        || name.starts_with("__pregel_") && name != crate::checkpoint::TASKS_CHANNEL
        || name == "|"
        || name == ":"
}

/// What validation reads of a graph: nothing in it depends on the state type,
/// so [`check`] is compiled once, not once per state type as `validate` is.
struct Shape<'g> {
    fields: &'static [&'static str],
    state: (TypeId, &'static str),
    errors: &'g [GraphProblem],
    nodes: Vec<NodeShape<'g>>,
    edges: &'g [super::EdgeDef],
    branches: Vec<BranchShape<'g>>,
    destinations: &'g [(String, Vec<String>)],
    interrupt_before: &'g crate::interrupt::Breakpoints,
    interrupt_after: &'g crate::interrupt::Breakpoints,
}

pub(crate) fn validate<S: State, C: ?Sized + 'static>(
    graph: &StateGraph<S, C>,
) -> Result<(), GraphError> {
    check(&Shape {
        fields: S::FIELDS,
        state: StateGraph::<S, C>::state_type(),
        errors: &graph.errors,
        nodes: graph.node_shapes(),
        edges: &graph.edges,
        branches: graph.branch_shapes(),
        destinations: &graph.destinations,
        interrupt_before: &graph.interrupt_before,
        interrupt_after: &graph.interrupt_after,
    })
}

fn check(graph: &Shape<'_>) -> Result<(), GraphError> {
    let mut errors: Vec<GraphProblem> = graph.errors.to_vec();
    let mut names: HashSet<&str> = HashSet::new();

    for field in graph.fields {
        if is_reserved(field) || *field == crate::checkpoint::TASKS_CHANNEL || *field == START {
            errors.push(GraphProblem::ReservedFieldName {
                field: (*field).to_owned(),
            });
        }
    }

    for node in &graph.nodes {
        let n = node.name;
        if n == START || n == END {
            errors.push(GraphProblem::ReservedNode { node: n.to_owned() });
        } else if let Some(c) = ['|', ':'].into_iter().find(|c| n.contains(*c)) {
            errors.push(GraphProblem::ReservedCharacter {
                node: n.to_owned(),
                character: c,
            });
        } else if is_reserved(n) || n == crate::checkpoint::TASKS_CHANNEL {
            errors.push(GraphProblem::ReservedNodeName { node: n.to_owned() });
        } else if n.is_empty() {
            errors.push(GraphProblem::EmptyNodeName);
        }
        if !names.insert(n) {
            errors.push(GraphProblem::DuplicateNode { node: n.to_owned() });
        }
    }

    let (state_type, state_name) = graph.state;
    let inputs: std::collections::HashMap<&str, (TypeId, &'static str)> =
        graph.nodes.iter().map(|n| (n.name, n.input)).collect();
    let node_input = |name: &str| inputs.get(name).copied();
    let mut pull_targets: Vec<(String, Reach)> = Vec::new();
    let mut has_entry = false;

    // Join channels by name: different joins must not share one.
    let mut joins: HashMap<String, &[String]> = HashMap::new();
    for edge in graph.edges {
        let target = edge.target.as_str();
        let join = edge.sources.len() > 1;
        if edge.sources.is_empty() {
            errors.push(GraphProblem::EdgeWithoutSource {
                target: target.to_owned(),
            });
        }
        if join {
            let channel = crate::compiled::join_channel_name(&edge.sources, target);
            if let Some(first) = joins.get(&channel) {
                errors.push(GraphProblem::SharedJoinChannel {
                    first: first.to_vec(),
                    second: edge.sources.clone(),
                    target: target.to_owned(),
                    channel: channel.clone(),
                });
            } else {
                joins.insert(channel, &edge.sources);
            }
        }
        for source in &edge.sources {
            if source == END {
                errors.push(GraphProblem::EndAsSource);
            } else if join && source == START {
                errors.push(GraphProblem::StartInJoin {
                    target: target.to_owned(),
                });
            } else if join && !names.contains(source.as_str()) {
                errors.push(GraphProblem::UnknownJoinSource {
                    node: source.clone(),
                    did_you_mean: closest(source, &graph.nodes),
                });
            } else if source != START && !names.contains(source.as_str()) {
                errors.push(GraphProblem::UnknownEdgeSource {
                    node: source.clone(),
                    did_you_mean: closest(source, &graph.nodes),
                });
            }
            if source == START {
                has_entry = true;
            }
        }
        if target == START {
            errors.push(GraphProblem::StartAsTarget);
        } else if target != END && !names.contains(target) {
            errors.push(GraphProblem::UnknownEdgeTarget {
                node: target.to_owned(),
                did_you_mean: closest(target, &graph.nodes),
            });
        } else if target != END {
            pull_targets.push((
                target.to_owned(),
                Reach::Edge {
                    sources: edge.sources.clone(),
                },
            ));
        }
    }

    for branch in &graph.branches {
        let src = branch.source;
        if src == END {
            errors.push(GraphProblem::EndAsSource);
        } else if src != START && !names.contains(src) {
            errors.push(GraphProblem::UnknownEdgeSource {
                node: src.to_owned(),
                did_you_mean: closest(src, &graph.nodes),
            });
        }
        if src == START {
            has_entry = true;
        }
        if let Some(map) = branch.path_map {
            let router = branch.router;
            for (key, target) in map.iter() {
                if target == START || (target != END && !names.contains(target)) {
                    errors.push(GraphProblem::UnknownPathMapTarget {
                        source: src.to_owned(),
                        router: router.to_owned(),
                        key: key.to_owned(),
                        target: target.to_owned(),
                    });
                } else if target != END {
                    pull_targets.push((
                        target.to_owned(),
                        Reach::ConditionalEdge {
                            source: src.to_owned(),
                        },
                    ));
                }
            }
            // A typed router's every destination must be a key.
            if let Targets::Declared(targets) = branch.targets {
                for t in targets {
                    let key = match t {
                        Destination::Node(n) => n,
                        Destination::End => END,
                    };
                    if map.get(key).is_none() {
                        errors.push(GraphProblem::UnmappedBranchTarget {
                            source: src.to_owned(),
                            router: router.to_owned(),
                            key: key.to_owned(),
                        });
                    }
                }
            }
        } else if let Targets::Declared(targets) = branch.targets {
            for t in targets {
                if let Destination::Node(t) = t {
                    if !names.contains(t) {
                        errors.push(GraphProblem::UnknownBranchTarget {
                            source: src.to_owned(),
                            target: (*t).to_owned(),
                        });
                    } else {
                        pull_targets.push((
                            (*t).to_owned(),
                            Reach::ConditionalEdge {
                                source: src.to_owned(),
                            },
                        ));
                    }
                }
            }
        }
    }

    for node in &graph.nodes {
        if let Targets::Declared(targets) = node.targets {
            let node = node.name;
            for t in targets {
                if let Destination::Node(t) = t {
                    if !names.contains(t) {
                        errors.push(GraphProblem::UnknownGotoTarget {
                            node: node.to_string(),
                            target: (*t).to_owned(),
                        });
                    } else {
                        pull_targets.push((
                            (*t).to_owned(),
                            Reach::Goto {
                                node: node.to_string(),
                            },
                        ));
                    }
                }
            }
        }
    }

    for (src, targets) in graph.destinations {
        if src == END {
            errors.push(GraphProblem::EndAsSource);
        } else if src != START && !names.contains(src.as_str()) {
            errors.push(GraphProblem::UnknownDestinationSource {
                source: src.clone(),
            });
        }
        for t in targets {
            if t == START || (t != END && !names.contains(t.as_str())) {
                errors.push(GraphProblem::UnknownDestination {
                    source: src.clone(),
                    target: t.clone(),
                });
            }
        }
    }

    let mut reported = HashSet::new();
    for (target, via) in &pull_targets {
        if let Some((ty, ty_name)) = node_input(target)
            && ty != state_type
            && reported.insert(target.clone())
        {
            errors.push(GraphProblem::SendOnlyNodeReached {
                node: target.clone(),
                input_type: ty_name,
                state_type: state_name,
                via: via.clone(),
            });
        }
    }

    for (side, at) in [
        (BreakpointSide::Before, graph.interrupt_before),
        (BreakpointSide::After, graph.interrupt_after),
    ] {
        if let crate::interrupt::Breakpoints::Nodes(nodes) = at {
            for n in nodes {
                if !names.contains(n.as_str()) {
                    errors.push(GraphProblem::UnknownBreakpoint {
                        side,
                        node: n.clone(),
                    });
                }
            }
        }
    }

    if !has_entry {
        errors.push(GraphProblem::NoEntrypoint);
    }

    if errors.is_empty() {
        Ok(())
    } else {
        Err(GraphError::InvalidGraph { problems: errors })
    }
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_insertions_deletions_substitutions_and_swaps() {
        for (a, b, d) in [
            ("", "", 0),
            ("step", "step", 0),
            ("", "step", 4),
            ("step", "", 4),
            ("stpe", "step", 1),
            ("steps", "step", 1),
            ("stop", "step", 1),
            ("Review", "review", 1),
            ("reveiw", "review", 1),
            ("ca", "abc", 3),
            ("summarize", "step", 8),
            ("größe", "grösse", 2),
        ] {
            assert_eq!(edit_distance(a, b), d, "{a} / {b}");
            assert_eq!(edit_distance(b, a), d, "{b} / {a}");
        }
    }
}
