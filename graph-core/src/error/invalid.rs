//! What is wrong with what a user handed the engine: a graph definition
//! ([`GraphProblem`], all of them reported by `compile()` at once), a run's
//! configuration ([`ConfigError`]), a `Send` ([`SendError`]) or an empty input
//! ([`EmptyInputError`]). Each keeps its facts in fields; its message names the
//! node or setting and the fix.

use std::fmt;

/// One problem `compile()` found in a graph definition.
/// [`GraphError::InvalidGraph`](super::GraphError::InvalidGraph) lists every one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphProblem {
    /// A state field has a name LangGraph reserves for its own channels.
    ReservedFieldName {
        /// The field.
        field: String,
    },
    /// A node is named `__start__` or `__end__`.
    ReservedNode {
        /// The name.
        node: String,
    },
    /// A node name contains `|` or `:` (they separate checkpoint namespaces).
    ReservedCharacter {
        /// The name.
        node: String,
        /// The character.
        character: char,
    },
    /// A node has a name LangGraph reserves for its own channels or config keys.
    ReservedNodeName {
        /// The name.
        node: String,
    },
    /// A node's name is empty.
    EmptyNodeName,
    /// Two nodes share a name.
    DuplicateNode {
        /// The name.
        node: String,
    },
    /// An edge has no source node.
    EdgeWithoutSource {
        /// Where it leads.
        target: String,
    },
    /// Two join edges into one node would share one barrier channel (a node
    /// name contains `+`).
    SharedJoinChannel {
        /// The sources of the first join.
        first: Vec<String>,
        /// The sources of the second join.
        second: Vec<String>,
        /// The node both lead to.
        target: String,
        /// The channel they would share.
        channel: String,
    },
    /// An edge, a conditional edge or a destination list starts at END.
    EndAsSource,
    /// START is one of the sources of a join edge.
    StartInJoin {
        /// Where the join leads.
        target: String,
    },
    /// A join edge starts at a node the graph does not have.
    UnknownJoinSource {
        /// The missing node.
        node: String,
        /// The graph's node whose name is closest to `node`, if one is close
        /// enough to be a misspelling of it.
        did_you_mean: Option<String>,
    },
    /// An edge or conditional edge starts at a node the graph does not have.
    UnknownEdgeSource {
        /// The missing node.
        node: String,
        /// The graph's node whose name is closest to `node`, if one is close
        /// enough to be a misspelling of it.
        did_you_mean: Option<String>,
    },
    /// An edge leads to START.
    StartAsTarget,
    /// An edge leads to a node the graph does not have.
    UnknownEdgeTarget {
        /// The missing node.
        node: String,
        /// The graph's node whose name is closest to `node`, if one is close
        /// enough to be a misspelling of it.
        did_you_mean: Option<String>,
    },
    /// A conditional edge's router type names a node the graph does not have.
    UnknownBranchTarget {
        /// The node the conditional edge starts at.
        source: String,
        /// The missing node.
        target: String,
    },
    /// A conditional edge's path map sends `key` to a node the graph does not
    /// have (or to `START`).
    UnknownPathMapTarget {
        /// The node the conditional edge starts at.
        source: String,
        /// The router's type name.
        router: String,
        /// The key.
        key: String,
        /// The missing node.
        target: String,
    },
    /// A conditional edge's router type (`#[derive(Goto)]`) can return
    /// `key`, which its path map does not have.
    UnmappedBranchTarget {
        /// The node the conditional edge starts at.
        source: String,
        /// The router's type name.
        router: String,
        /// The destination of a variant, missing from the path map's keys.
        key: String,
    },
    /// A node's `Command` goto type names a node the graph does not have.
    UnknownGotoTarget {
        /// The node whose goto type it is.
        node: String,
        /// The missing node.
        target: String,
    },
    /// `destinations` is declared for a node the graph does not have.
    UnknownDestinationSource {
        /// The missing node.
        source: String,
    },
    /// `destinations` of a node names a node the graph does not have (or START).
    UnknownDestination {
        /// The node whose destinations they are.
        source: String,
        /// The missing node.
        target: String,
    },
    /// A node that takes a payload (only a `Send` can start it) is also reached
    /// by name.
    SendOnlyNodeReached {
        /// The node.
        node: String,
        /// The type of its input.
        input_type: &'static str,
        /// The graph's state type.
        state_type: &'static str,
        /// What reaches it by name.
        via: Reach,
    },
    /// `interrupt_before` / `interrupt_after` names a node the graph does not have.
    UnknownBreakpoint {
        /// Which of the two.
        side: BreakpointSide,
        /// The missing node.
        node: String,
    },
    /// No edge or conditional edge starts at START.
    NoEntrypoint,
    /// `cache_policy` names a node not added (yet).
    UnknownCachePolicyNode {
        /// The missing node.
        node: String,
    },
    /// `add_sequence` got no node.
    EmptySequence,
}

/// What reaches a node by name ([`GraphProblem::SendOnlyNodeReached`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reach {
    /// An edge from these nodes.
    Edge {
        /// Its sources.
        sources: Vec<String>,
    },
    /// The conditional edge of this node.
    ConditionalEdge {
        /// The node it starts at.
        source: String,
    },
    /// The `Command` goto type of this node.
    Goto {
        /// The node.
        node: String,
    },
}

/// Which breakpoint list names a node: `interrupt_before` or `interrupt_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakpointSide {
    /// `interrupt_before`.
    Before,
    /// `interrupt_after`.
    After,
}

impl fmt::Display for BreakpointSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BreakpointSide::Before => "interrupt_before",
            BreakpointSide::After => "interrupt_after",
        })
    }
}

impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reach::Edge { sources } => write!(f, "the edge from `{}`", sources.join("`, `")),
            Reach::ConditionalEdge { source } => write!(f, "the conditional edge of `{source}`"),
            Reach::Goto { node } => write!(f, "the goto type of `{node}`"),
        }
    }
}

impl fmt::Display for GraphProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use GraphProblem as P;
        match self {
            P::ReservedFieldName { field } => write!(
                f,
                "Channel name '{field}' is reserved; rename the state field `{field}`"
            ),
            P::ReservedNode { node } => write!(f, "Node `{node}` is reserved."),
            P::ReservedCharacter { node, character } => write!(
                f,
                "'{character}' is a reserved character and is not allowed in the node names \
                 (node `{node}`)."
            ),
            P::ReservedNodeName { node } => {
                write!(f, "Node name '{node}' is reserved; choose another name")
            }
            P::EmptyNodeName => f.write_str("a node name cannot be empty"),
            P::DuplicateNode { node } => write!(
                f,
                "Node `{node}` already present. Each node needs a unique name; add the second \
                 one with add_node_with(node, NodeOptions::new().name(\"...\"))"
            ),
            P::EdgeWithoutSource { target } => write!(f, "an edge into `{target}` has no source"),
            P::SharedJoinChannel {
                first,
                second,
                target,
                channel,
            } => write!(
                f,
                "the join edges from `{}` and from `{}` into `{target}` would share the \
                 channel `{channel}`; rename the nodes so that no name contains `+`",
                first.join("`, `"),
                second.join("`, `"),
            ),
            P::EndAsSource => f.write_str("END cannot be a start node"),
            P::StartInJoin { target } => write!(
                f,
                "START cannot be one of the sources of a join edge into `{target}`"
            ),
            P::UnknownJoinSource { node, did_you_mean } => {
                write!(f, "Need to add_node `{node}` first")?;
                suggest(f, did_you_mean)
            }
            P::UnknownEdgeSource { node, did_you_mean } => {
                write!(f, "Found edge starting at unknown node '{node}'")?;
                suggest(f, did_you_mean)
            }
            P::StartAsTarget => f.write_str("START cannot be an end node"),
            P::UnknownEdgeTarget { node, did_you_mean } => {
                write!(f, "Found edge ending at unknown node `{node}`")?;
                suggest(f, did_you_mean)
            }
            P::UnknownBranchTarget { source, target } => write!(
                f,
                "At '{source}' node, the conditional edge found unknown target '{target}': add a \
                 node named `{target}` or remove that variant from the router's goto type"
            ),
            P::UnknownPathMapTarget {
                source,
                router,
                key,
                target,
            } => write!(
                f,
                "At '{source}' node, '{router}' branch found unknown target '{target}' (path map \
                 key '{key}'): add a node named `{target}`, or map '{key}' to an existing node"
            ),
            P::UnmappedBranchTarget {
                source,
                router,
                key,
            } => write!(
                f,
                "At '{source}' node, '{router}' branch can return '{key}' (a variant of its goto \
                 type), which its path map does not have: add '{key}' to the path map"
            ),
            P::UnknownGotoTarget { node, target } => write!(
                f,
                "node `{node}` can go to `{target}` (a variant of its Command goto type), but the \
                 graph has no node `{target}`: add it with add_node, or remove the variant"
            ),
            P::UnknownDestinationSource { source } => write!(
                f,
                "destinations names source `{source}`, which the graph does not have: add it \
                 with add_node"
            ),
            P::UnknownDestination { source, target } => write!(
                f,
                "destinations of `{source}` name `{target}`, which the graph does not have: add \
                 it with add_node, or remove it from the destinations"
            ),
            P::SendOnlyNodeReached {
                node,
                input_type,
                state_type,
                via,
            } => write!(
                f,
                "node `{node}` takes a `{input_type}` as input, not the graph state \
                 `{state_type}`, so it can only be started by a Send; it is also reached by {via}"
            ),
            P::UnknownBreakpoint { side, node } => write!(
                f,
                "{side} names node `{node}`, which the graph does not have: add it with \
                 add_node, or use \"*\" for every node"
            ),
            P::NoEntrypoint => f.write_str(
                "Graph must have an entrypoint: add at least one edge from START to another node",
            ),
            P::UnknownCachePolicyNode { node } => write!(
                f,
                "cache_policy names node `{node}`, which is not added yet: add the node first"
            ),
            P::EmptySequence => f.write_str("Sequence requires at least one node."),
        }
    }
}

/// "; did you mean `step`?" after the message of an unknown node.
fn suggest(f: &mut fmt::Formatter<'_>, did_you_mean: &Option<String>) -> fmt::Result {
    match did_you_mean {
        Some(name) => write!(f, "; did you mean `{name}`?"),
        None => Ok(()),
    }
}

/// A run's configuration, or a request about a thread, that cannot be served
/// ([`GraphError::InvalidConfig`](super::GraphError::InvalidConfig)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `recursion_limit` is 0.
    #[error("recursion_limit must be at least 1")]
    RecursionLimitTooLow,
    /// A graph with a checkpointer was run without a thread id.
    #[error(
        "Checkpointer requires one or more of the following 'configurable' keys: thread_id, \
         checkpoint_ns, checkpoint_id (use RunConfig::thread(..))"
    )]
    NoThreadForCheckpointer,
    /// State was read without a thread id.
    #[error("reading state needs a thread: use RunConfig::thread(..)")]
    NoThreadToRead,
    /// A run's `interrupt_before` / `interrupt_after` names a node the graph
    /// does not have.
    #[error("{side} names node `{node}`, which this graph does not have")]
    UnknownBreakpoint {
        /// Which of the two.
        side: BreakpointSide,
        /// The missing node.
        node: String,
    },
    /// `clear_cache` on a graph without a cache.
    #[error("No cache is set for this graph. Cannot clear cache. (add one with with_cache)")]
    NoCache,
    /// No subgraph node matches a namespace.
    #[error(
        "Subgraph {namespace} not found: this graph's subgraph nodes are [{}] (a graph run with \
         invoke_nested inside a node is read with that graph's with_checkpointer)",
        subgraphs.join(", ")
    )]
    SubgraphNotFound {
        /// The namespace asked for.
        namespace: String,
        /// The graph's subgraph nodes.
        subgraphs: Vec<String>,
    },
    /// The subgraph at a namespace has another state type than the one asked for.
    #[error("the subgraph at `{namespace}` has state `{found}`, not `{expected}`")]
    SubgraphState {
        /// The namespace.
        namespace: String,
        /// Its state type.
        found: &'static str,
        /// The type asked for.
        expected: &'static str,
    },
    /// A subgraph's namespace was read through the parent graph.
    #[error(
        "checkpoint_ns `{namespace}` is a subgraph's namespace: read it with \
         subgraph_at::<{state_type}>(ns)"
    )]
    SubgraphNamespace {
        /// The namespace.
        namespace: String,
        /// The subgraph's state type.
        state_type: &'static str,
    },
    /// `bulk_update_state` with no superstep.
    #[error("No supersteps provided")]
    NoSupersteps,
    /// `bulk_update_state` with a superstep that has no update.
    #[error("No updates provided")]
    NoUpdates,
}

/// A `Send`, or a route by name, that starts a node with the wrong input
/// ([`GraphError::InvalidSend`](super::GraphError::InvalidSend)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The payload's type is not the node's input type.
    #[error(
        "a Send to node `{node}` carries a `{payload_type}`, but the node takes a \
         `{input_type}`; build Sends with `send(node, input)` so the compiler checks the payload"
    )]
    PayloadType {
        /// The node.
        node: String,
        /// What was sent.
        payload_type: &'static str,
        /// What the node takes.
        input_type: &'static str,
    },
    /// A route by name reached a node that takes a payload.
    #[error(
        "node `{node}` takes a `{input_type}` as input, not the graph state, so it can only be \
         started by a Send; a route by name (a string goto or router result) reached it"
    )]
    RoutedToPayloadNode {
        /// The node.
        node: String,
        /// What it takes.
        input_type: &'static str,
    },
}

/// A run started with nothing to do
/// ([`GraphError::EmptyInput`](super::GraphError::EmptyInput)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmptyInputError {
    /// No input, and no checkpoint to continue.
    #[error("Received no input for __start__")]
    NoInput,
    /// A `Command` with no update, no goto and no resume value.
    #[error("Received empty Command input")]
    EmptyCommand,
}
