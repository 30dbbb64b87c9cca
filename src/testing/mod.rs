//! A testing kit for your graphs (feature `testing`; enable it for
//! dev-dependencies: `stategraph = { version = "0.1", features = ["testing"] }`).
//!
//! - [`Stepper`]: run a compiled graph one superstep at a time, see each step's
//!   tasks, writes and state, and run a stand-in instead of a node (a failing tool,
//!   a slow model);
//! - [`assert_state_eq`]: compare two states, with a line diff of their `Debug`
//!   forms when they differ;
//! - [`reducer_laws`]: property tests of a reducer, on proptest ([`laws`]);
//! - [`fakes`]: a checkpointer and a store that record every call, a builder of
//!   scripted chat model turns, and how to test timeouts, retries and TTLs under
//!   tokio's paused clock;
//! - [`assert_graph_snapshot!`](crate::assert_graph_snapshot) and
//!   [`assert_history_snapshot!`](crate::assert_history_snapshot): insta snapshots
//!   of a drawing and of a thread's history, ids and timestamps normalised
//!   ([`snapshot`]).
//!
//! The guide's chapter [Testing your agent](crate::guide::testing) puts them
//! together; `examples/testing-kit` is a crate that uses them all, with
//! compile-fail tests of its own.
//!
//! ```
//! use stategraph::prelude::*;
//! use stategraph::testing::{assert_state_eq, Stepper};
//!
//! #[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
//! struct Order {
//!     item: String,
//!     paid: bool,
//! }
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("the payment service is down")]
//! struct PaymentDown;
//!
//! #[node]
//! fn pay(order: &Order) -> Result<OrderUpdate, PaymentDown> {
//!     Ok(Order::update().paid(!order.item.is_empty()))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = StateGraph::<Order>::new().add_node(pay).add_edge(START, pay).compile()?;
//! let input = Order::update().item("book".into());
//!
//! // The node runs: the step's state is the one expected.
//! let step = Stepper::new(&app, input.clone(), &RunConfig::new()).step().await?;
//! assert_state_eq(&*step.state, &Order { item: "book".into(), paid: true });
//!
//! // The payment service fails instead: the step reports the error.
//! let mut stepper = Stepper::new(&app, input, &RunConfig::new());
//! stepper.fake_error("pay", || PaymentDown);
//! let step = stepper.step().await?;
//! assert!(step.finished && step.error.is_some());
//! assert!(!step.state.paid);
//! # Ok(())
//! # }
//! ```

pub use graph_core::testing::*;

mod diff;
pub mod fakes;
pub mod laws;
pub mod snapshot;

pub use diff::{assert_state_eq, state_diff};
pub use laws::{reducer_laws, ReducerLaws};
