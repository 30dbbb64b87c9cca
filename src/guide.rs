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
//! 4. [Persistence](persistence): savers, threads, `get_state`,
//!    `update_state`, time travel.
//! 5. [Interrupts](interrupts): human in the loop, breakpoints.
//! 6. [Subgraphs](subgraphs): shared and mapped state, namespaces.
//! 7. [Streaming](streaming): stream modes, subgraph events.
//! 8. [The Functional API](functional): `#[entrypoint]`, `#[task]`, durable
//!    task results, the same agent in both APIs.
//! 9. [Long-term memory](memory): the store, semantic search, TTL, the store
//!    in the graph.
//! 10. [Testing your agent](testing): step-by-step runs with faked nodes,
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

// The chapter's examples use the `testing` feature, which the facade's own
// dev-dependency on itself turns on for its doctests.
pub mod testing {
    #![doc = include_str!("../docs/guide/testing.md")]
}
