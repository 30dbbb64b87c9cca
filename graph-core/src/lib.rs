//! Runtime of [stategraph](https://docs.rs/stategraph): typed channels, the Pregel
//! superstep engine, `Command` / `Send`, and streaming.
//!
//! Users depend on the `stategraph` facade, which re-exports this crate together
//! with the macros. The architecture, in the order data flows:
//!
//! - [`channels`]: how one state field reacts to a superstep's writes.
//! - [`state`]: the [`State`] trait `#[derive(State)]` implements: typed fields,
//!   a typed partial update, the channel set; [`mod@field`]: access to a named field
//!   of any state that provides it ([`Has`]).
//! - [`component`]: graphs and node sets a library ships for any state with the
//!   fields they use.
//! - [`node`] and [`command`]: what a node is, and what it may return
//!   ([`Command`], [`Send`], updates).
//! - [`graph`]: the [`StateGraph`] builder, validated by `compile()` into a
//!   [`CompiledGraph`].
//! - `pregel` (internal): the superstep loop that runs a compiled graph;
//!   [`checkpoint`] persists it.
//! - [`interrupt`]: human in the loop — pausing a run and resuming it.
//! - [`io`]: what goes into a run and what comes out.
//! - [`stream`]: the typed events a run reports.
//!
//! # Features
//!
//! - `test-util` (off by default): `checkpoint::conformance`, the test suite
//!   every [`Checkpointer`](checkpoint::Checkpointer) passes, for the tests of a
//!   saver written outside this crate. Enable it for dev-dependencies only; the
//!   facade forwards it as `stategraph/test-util`.

// One measured exception, allowed where it stands (checkpoint/json.rs: the JSON
// writer's output as a String without a second UTF-8 scan).
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod cache;
pub mod channels;
pub mod checkpoint;
pub mod command;
pub mod component;
pub mod config;
pub mod context;
pub mod error;
pub mod field;
pub mod graph;
pub mod interrupt;
pub mod io;
pub mod node;
pub(crate) mod pregel;
pub mod retry;
pub mod snapshot;
pub mod state;
pub mod stream;
pub mod subgraph;
pub(crate) mod unwind;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use channels::{Overwrite, ReducerWrite, TopicWrite};
pub use command::{
    send, Command, CommandGraph, Destination, GotoTarget, NoGoto, ParentCommand, Route, Send,
    Targets,
};
pub use component::{Component, CopyFields, FieldsOf, MountPoint, NodeSet};
pub use config::{Durability, RunConfig};
pub use context::Context;
pub use error::{
    EmptyChannelError, ErrorCode, GraphError, InvalidUpdateError, NodeError, NodeTimeout,
    PanicSite, SerdeValue,
};
pub use field::{Field, Has, UpdateOf};
pub use graph::{CompiledGraph, DrawOptions, IntoCheckpointer, NodeOptions, StateGraph};
pub use interrupt::{Breakpoint, Breakpoints, Interrupt, ResumeTypeError};
pub use io::{GraphInput, GraphOutput};
pub use node::{IntoNodeOutput, IntoNodeSpec, Node, NodeFuture, NodeMarker, NodeOutput, NodeSpec};
pub use retry::RetryPolicy;
pub use snapshot::{NodeUpdate, SnapshotTask, StateSnapshot, SubgraphSnapshot};
pub use state::{FieldSet, IsLastStep, ManagedValues, RemainingSteps, State, StateUpdate};
pub use stream::{
    CheckpointEvent, MessageMetadata, Namespace, StreamEvent, StreamMode, StreamModes,
    SubgraphEvent,
};
pub use subgraph::{Subgraph, SubgraphCheckpoints};

/// The virtual entry node of every graph.
pub const START: &str = "__start__";
/// The virtual terminal node of every graph.
pub const END: &str = "__end__";
