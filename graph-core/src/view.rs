//! Node input views ([`View`]): a node that reads some of the state's fields takes
//! a struct of those fields instead of the whole state (LangGraph's node
//! `input_schema`, a node typed with another `TypedDict`).
//!
//! `#[derive(Schema)]` with `#[schema(state = S)]` implements it: each field is
//! checked at compile time against the state's field of that name and type. A
//! `#[node]` whose input is `&MyView` is a node of the graph of `MyView`'s state;
//! its PULL tasks clone the view's fields out of the state (never the whole
//! state), and `send(node, MyView { .. })` carries only the view.
//!
//! ```
//! use stategraph::prelude::*;
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Essay {
//!     topic: String,
//!     draft: String,
//!     /// Written and read by nodes only: not part of `invoke`'s input or output.
//!     #[state(private)]
//!     outline: Vec<String>,
//! }
//!
//! /// What `write` reads.
//! #[derive(Schema, Clone, Serialize, Deserialize)]
//! #[schema(state = Essay)]
//! struct Plan {
//!     topic: String,
//!     outline: Vec<String>,
//! }
//!
//! #[node]
//! fn plan(essay: &Essay) -> EssayUpdate {
//!     Essay::update().outline(vec![format!("why {}", essay.topic), "how".into()])
//! }
//!
//! #[node]
//! fn write(plan: &Plan) -> EssayUpdate {
//!     Essay::update().draft(format!("{}: {}", plan.topic, plan.outline.join(", ")))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = StateGraph::<Essay>::new()
//!     .add_node(plan)
//!     .add_node(write)
//!     .add_edge(START, plan)
//!     .add_edge(plan, write)
//!     .compile()?;
//! let out = app.invoke(Essay::update().topic("graphs".into()), &RunConfig::new()).await?;
//! assert_eq!(out.draft, "graphs: why graphs, how");
//! assert!(out.outline.is_empty()); // private: not part of the output
//! # Ok(())
//! # }
//! ```

use crate::spec::Projection;
use crate::state::State;
use std::any::{Any, TypeId};

/// A struct of some of a state's fields that a node takes as its input instead of
/// the whole state: each PULL task of the node gets the view projected from the
/// state at the start of its superstep.
///
/// Implemented by `#[derive(Schema)]` with `#[schema(state = S)]`, which checks
/// at compile time that each field of the struct is a field of `S` with the same
/// type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a view of a state",
    label = "`{Self}` has no `#[derive(Schema)]`",
    note = "add `#[derive(Schema)]` and `#[schema(state = MyState)]` to the struct `{Self}`; its fields must be fields of `MyState`"
)]
pub trait View: Sized {
    /// The state this is a view of.
    type State: State;

    /// This struct's fields, cloned from `state`.
    fn project(state: &Self::State) -> Self;
}

/// The [`Projection`] of a view type, for `#[node]`'s expansion.
pub(crate) fn projection<V>() -> Projection<V>
where
    V: View + Any + std::marker::Send + Sync,
{
    Projection {
        state: TypeId::of::<V::State>(),
        project: project_erased::<V>,
    }
}

fn project_erased<V: View>(state: &(dyn Any + std::marker::Send + Sync)) -> Option<V> {
    state.downcast_ref::<V::State>().map(V::project)
}
