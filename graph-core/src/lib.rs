//! Runtime of [stategraph](https://docs.rs/stategraph): typed channels, the Pregel
//! superstep engine, `Command` / `Send`, and streaming.
//!
//! Users depend on the `stategraph` facade, which re-exports this crate together
//! with the macros. The architecture, from what a user writes down to what the
//! engine stores (each module uses only those after it in this list; the full
//! order is written at the top of `src/lib.rs` and checked by a test):
//!
//! - [`graph`]: the [`StateGraph`] builder, validated by `compile()` into a
//!   [`CompiledGraph`] that runs, streams and inspects threads; [`subgraph`] and
//!   [`component`] build on it.
//! - `pregel` (internal): the superstep engine that runs the compiled form of a
//!   graph.
//! - [`node`] and [`context`]: what a node is, what it may return, and the
//!   [`Context`] it receives.
//! - [`stream`], [`snapshot`], [`config`], [`retry`], [`cache`]: what a run
//!   reports and how it is configured.
//! - [`io`], [`state`] and [`mod@field`]: what goes into a run and comes out; the
//!   [`State`] trait `#[derive(State)]` implements (typed fields, a typed partial
//!   update, the channel set); access to a named field of any state that provides
//!   it ([`Has`]).
//! - [`channels`]: how one state field reacts to a superstep's writes.
//! - [`error`], [`command`] ([`Command`], [`Send`]) and [`interrupt`] (pausing a
//!   run and resuming it).
//! - [`checkpoint`]: the saver interface and the in-memory saver.
//! - [`store`]: long-term memory shared across threads (namespaced items,
//!   filters, semantic search, TTL) and the in-memory store.
//!
//! # Features
//!
//! - `test-util` (off by default): `checkpoint::conformance`, the test suite
//!   every [`Checkpointer`](checkpoint::Checkpointer) passes, for the tests of a
//!   saver written outside this crate. Enable it for dev-dependencies only; the
//!   facade forwards it as `stategraph/test-util`. It also brings the `testing` module:
//!   the `Stepper` that runs a compiled graph one superstep at a time.

// Module order, lowest first. A module may use the modules above it in this
// list and those beside it on its line, never one below it: data flows one way,
// from the builder through the compiled graph and the engine down to channels and
// checkpoints. tests/module_order.rs fails on a use against this order.
//
// - ids: checkpoint and task ids, timestamps, hex and digit formatting
// - checkpoint: the Checkpointer trait, checkpoint types, savers' shared code
// - store: long-term memory: the Store trait, items, search, TTL, the in-memory store
// - interrupt: interrupt values, resume values, breakpoints
// - spec: a node's name and input type, as edges and Send address it
// - command: Command, Send, routes, and a command on its way to the parent
// - error: GraphError, NodeError and the errors they carry
// - unwind: panics in user code become errors
// - channels: how one field reacts to a superstep's writes
// - state, field: the State trait, its update, named fields of any state
// - io: what goes into a run and what comes out
// - view: a node's input as a struct of some of the state's fields
// - config: RunConfig, durability, where a subgraph keeps checkpoints
// - stream: stream modes and events, and where a run sends them
// - snapshot: StateSnapshot and its tasks
// - retry: retry policies
// - cache: node result caching
// - draw: a graph's drawing, as Mermaid or DOT
// - scope: what a running step shares with its tasks (signals, resume values)
// - context: the Context a node receives
// - func: the Functional API's task calls, saved and reused by call order
// - node: what a node is and what it returns
// - branch: routers of conditional edges
// - compiled: the compiled form of a graph, as the engine runs it
// - pregel: the superstep engine
// - graph: the StateGraph builder and the CompiledGraph a user runs
// - subgraph: a compiled graph as a node of another
// - component: graphs and node sets a library ships for any state
// - testing: step-by-step runs of a compiled graph, for tests (feature test-util)
// - __private: support for the macros' expansions
// End of module order.

// One measured exception, allowed where it stands (checkpoint/json.rs: the JSON
// writer's output as a String without a second UTF-8 scan).
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod branch;
pub mod cache;
pub mod channels;
pub mod checkpoint;
pub mod command;
mod compiled;
pub mod component;
pub mod config;
pub mod context;
mod draw;
pub mod error;
pub mod field;
pub mod func;
pub mod graph;
pub(crate) mod ids;
pub mod interrupt;
pub mod io;
pub mod node;
pub(crate) mod pregel;
pub mod retry;
pub(crate) mod scope;
pub mod snapshot;
mod spec;
pub mod state;
pub mod store;
pub mod stream;
pub mod subgraph;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod testing;
pub(crate) mod unwind;
pub mod view;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use channels::Overwrite;
pub use command::{
    send, Command, CommandGraph, Destination, GotoTarget, NoGoto, ParentCommand, Route, Send,
    Targets,
};
pub use component::{Component, CopyFields, FieldsOf, MountPoint, NodeSet};
pub use config::{Durability, RunConfig, SubgraphCheckpoints};
pub use context::Context;
pub use error::{
    EmptyChannelError, ErrorCode, GraphError, InvalidUpdateError, NodeError, NodeTimeout,
    PanicSite, SerdeValue,
};
pub use field::{Field, Has, UpdateOf};
pub use graph::{
    BatchItem, BatchOptions, CompileOptions, CompiledGraph, DrawOptions, GraphWithContext,
    IntoCheckpointer, NodeOptions, PathMap, RouterFn, RouterOutput, StateGraph, WithOutput,
};
pub use interrupt::{Breakpoint, Breakpoints, Interrupt, ResumeTypeError};
pub use io::{GraphInput, GraphOutput, InputSchema, OutputSchema};
pub use node::{
    async_node_fn, node_fn, IntoNodeOutput, IntoNodeSpec, Node, NodeFuture, NodeOutput, NodeSpec,
};
pub use retry::RetryPolicy;
pub use snapshot::{NodeUpdate, SnapshotTask, StateSnapshot, SubgraphSnapshot, TaskPath};
pub use state::{IsLastStep, RemainingSteps, State, StateUpdate};
pub use stream::{
    CheckpointEvent, MessageMetadata, Namespace, StreamEvent, StreamMode, StreamModes,
    SubgraphEvent,
};
pub use subgraph::Subgraph;
pub use view::View;

/// The virtual entry node of every graph.
pub const START: &str = "__start__";
/// The virtual terminal node of every graph.
pub const END: &str = "__end__";
