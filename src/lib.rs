//! Typed, stateful agent workflows as graphs: LangGraph's execution model (channels
//! with reducers, Pregel supersteps, `Command`, `Send`), with the workflow's shape
//! checked by the Rust compiler.
//!
//! ```
//! use stategraph::prelude::*;
//!
//! fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
//!     a.extend(b);
//!     a
//! }
//!
//! #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
//! struct Chat {
//!     #[reducer(concat)]
//!     log: Vec<String>,
//!     turns: u32,
//! }
//!
//! #[derive(Goto, Clone, Copy, Debug)]
//! enum Next {
//!     Speak,
//!     #[goto(end)]
//!     Done,
//! }
//!
//! #[node]
//! async fn speak(state: &Chat) -> Command<Next> {
//!     if state.turns == 3 {
//!         return Command::goto(Next::Done);
//!     }
//!     let line = format!("turn {}", state.turns + 1);
//!     Command::goto(Next::Speak).update(Chat::update().log(vec![line]).turns(state.turns + 1))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = StateGraph::<Chat>::new()
//!     .add_node(speak)
//!     .add_edge(START, speak)
//!     .compile()?;
//!
//! let out = app.invoke(Chat::update(), &RunConfig::new()).await?;
//! assert_eq!(out.log, ["turn 1", "turn 2", "turn 3"]);
//! # Ok(())
//! # }
//! ```

pub use graph_core::*;
pub use graph_macros::{node, Goto, State};

/// Everything a graph definition needs, in one import.
///
/// [`Send`] is deliberately left out (it would shadow `std::marker::Send`); use
/// [`send`] to build one, or name it `stategraph::Send`.
pub mod prelude {
    pub use graph_core::channels::{Overwrite, ReducerWrite, TopicWrite};
    pub use graph_core::{
        send, Command, CompiledGraph, Context, GraphError, IsLastStep, NodeError, NodeOptions,
        RemainingSteps, RunConfig, StateGraph, StreamEvent, StreamMode, END, START,
    };
    pub use graph_macros::{node, Goto, State};
    pub use serde::{Deserialize, Serialize};
}

/// The code blocks of README.md, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
