//! The guide: LangGraph's concepts as stategraph spells them, one chapter each.
//!
//! Every example in it runs as a doctest. The chapters are also the pages of
//! `docs/guide/` in the repository.
//!
//! 1. [State and reducers](state): fields as channels, reducers, `Overwrite`,
//!    topics and managed values, stategraph under another name (`crate = path`).
//! 2. [Nodes and `Command`](nodes): `#[node]`, goto enums, the `Context`.
//! 3. [Edges and `Send`](edges): supersteps, conditional edges, joins, deferred
//!    nodes, map-reduce, drawing a graph.
//! 4. [The graph checked by the compiler](checked): `graph!`, a whole graph
//!    declared in one macro and its shape checked by rustc.
//! 5. [Persistence](persistence): savers, threads, `get_state`,
//!    `update_state`, time travel.
//! 6. [Interrupts](interrupts): human in the loop, breakpoints.
//! 7. [Subgraphs](subgraphs): shared and mapped state, namespaces.
//! 8. [Streaming](streaming): stream modes, subgraph events.
//! 9. [The Functional API](functional): `#[entrypoint]`, `#[task]`, durable
//!    task results, the same agent in both APIs.
//! 10. [Long-term memory](memory): the store, semantic search, TTL, the store
//!     in the graph.
//! 11. [Agents](agents): the ReAct agent and its hooks, typed structured output,
//!     supervisor and swarm, MCP tools, model clients.
//! 12. [Serving](serving): LangGraph Server's HTTP API for your graphs
//!     (feature `server`).
//! 13. [Studio](studio): the web page graph-server serves to see, run,
//!     inspect and steer a graph: timeline, state diffs, interrupts, forks.
//! 14. [Testing your agent](testing): step-by-step runs with faked nodes,
//!     reducer laws, recording fakes, snapshots, compile-fail tests (feature
//!     `testing`).
//!
//! Each chapter ends with what differs from LangGraph, and the examples and
//! tests that show more.

pub mod state {
    #![doc = include_str!("../docs/guide/state.md")]
}

pub mod nodes {
    #![doc = include_str!("../docs/guide/nodes.md")]
}

pub mod edges {
    #![doc = include_str!("../docs/guide/edges.md")]
}

pub mod checked {
    #![doc = include_str!("../docs/guide/checked.md")]
}

pub mod persistence {
    #![doc = include_str!("../docs/guide/persistence.md")]
}

pub mod interrupts {
    #![doc = include_str!("../docs/guide/interrupts.md")]
}

pub mod subgraphs {
    #![doc = include_str!("../docs/guide/subgraphs.md")]
}

pub mod streaming {
    #![doc = include_str!("../docs/guide/streaming.md")]
}

pub mod functional {
    #![doc = include_str!("../docs/guide/functional.md")]
}

pub mod memory {
    #![doc = include_str!("../docs/guide/memory.md")]
}

pub mod serving {
    #![doc = include_str!("../docs/guide/serving.md")]
}

pub mod studio {
    #![doc = include_str!("../docs/guide/studio.md")]
}

#[cfg(feature = "agents")]
pub mod agents {
    #![doc = include_str!("../docs/guide/agents.md")]
}

// The chapter's examples use the `testing` feature, which the facade's own
// dev-dependency on itself turns on for its doctests.
pub mod testing {
    #![doc = include_str!("../docs/guide/testing.md")]
}
