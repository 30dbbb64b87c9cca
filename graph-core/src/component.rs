//! Typed components: workflows a library ships for states it has never seen.
//!
//! Two kinds, both checked by the compiler against the user's state through the
//! [field markers](mod@crate::field) it provides:
//!
//! - a [`Component`] is a compiled graph with its own state and declared input
//!   and output fields. [`Component::mount`] makes it a node of any graph whose
//!   state has those fields: the input fields are copied into the component's
//!   state, it runs as a [subgraph](crate::subgraph), and its output fields are
//!   written back through the parent's channels (a reducer field folds them in);
//! - a [`NodeSet`] is nodes and edges added to the user's own graph with
//!   [`StateGraph::add_nodes`]: they run on the user's state, read and write it
//!   through `Has<Marker>` bounds.
//!
//! A parent without a field the component needs does not compile: "the state
//! `Desk` has no field `Answer`", noting "required for `Desk` to implement
//! `MountPoint<Research>`".
//!
//! ```
//! use stategraph::prelude::*;
//! use stategraph::{Component, CompiledGraph};
//!
//! // In the library: the fields it exchanges, its state and its graph.
//! stategraph::field! {
//!     pub Question: String;
//!     pub Answer: String;
//! }
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! pub struct EchoState {
//!     #[field(Question)]
//!     question: String,
//!     #[field(Answer)]
//!     answer: String,
//! }
//!
//! pub struct Echo(CompiledGraph<EchoState>);
//!
//! impl Component for Echo {
//!     type State = EchoState;
//!     type Input = (Question,);
//!     type Output = (Answer,);
//!     const NAME: &'static str = "echo";
//!
//!     fn graph(&self) -> &CompiledGraph<EchoState> {
//!         &self.0
//!     }
//! }
//!
//! impl Echo {
//!     pub fn new() -> Result<Self, GraphError> {
//!         let graph = StateGraph::<EchoState>::new()
//!             .add_node(node_fn("answer", |s: &EchoState| {
//!                 EchoState::update().answer(format!("you asked: {}", s.question))
//!             }))
//!             .add_edge(START, "answer")
//!             .compile()?;
//!         Ok(Echo(graph))
//!     }
//! }
//!
//! // In the application: any state with the two fields, named as it likes.
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Desk {
//!     #[field(Question)]
//!     ticket: String,
//!     #[field(Answer)]
//!     reply: String,
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let echo = Echo::new()?.mount::<Desk>();
//! let app = StateGraph::<Desk>::new()
//!     .add_node(echo.clone())
//!     .add_edge(START, &echo)
//!     .compile()?;
//! let out = app.invoke(Desk::update().ticket("refund?".into()), &RunConfig::new()).await?;
//! assert_eq!(out.reply, "you asked: refund?");
//! # Ok::<(), GraphError>(())
//! # }).unwrap();
//! ```

use crate::field::{Field, Has, UpdateOf};
use crate::graph::{CompiledGraph, StateGraph};
use crate::node::IntoNodeOutput;
use crate::state::State;
use crate::subgraph::Subgraph;
use std::borrow::Cow;

/// A compiled graph a library exports as a building block: its own state, the
/// fields it reads from the graph it is mounted in ([`Input`](Component::Input))
/// and the fields it hands back ([`Output`](Component::Output)), each a tuple of
/// [field markers](mod@crate::field) that [`State`](Component::State) provides.
///
/// [`mount`](Component::mount) turns it into a node of any graph whose state
/// provides the same fields; the compiler checks the fit.
pub trait Component {
    /// The component's own state.
    type State: State;
    /// The fields copied from the parent's state into the component's when the
    /// node runs: a tuple of markers, `(Question,)`, or `()`.
    type Input: FieldsOf<Self::State>;
    /// The fields of the component's final state written to the parent: a tuple
    /// of markers.
    type Output: FieldsOf<Self::State>;
    /// The name of the node [`mount`](Component::mount) makes.
    const NAME: &'static str;

    /// The compiled graph.
    fn graph(&self) -> &CompiledGraph<Self::State>;

    /// This component as a node named [`NAME`](Component::NAME) of a graph with
    /// state `P`, which must provide every input and output field.
    ///
    /// The node's input is the parent's state: the [`Input`](Component::Input)
    /// fields start the component's run; its [`Output`](Component::Output) fields
    /// become the node's update, applied through the parent's channels. The
    /// result is a [`Subgraph`]: `checkpoints(..)` chooses where it keeps its
    /// checkpoints, and interrupts inside it pause the parent as usual.
    fn mount<P>(&self) -> Subgraph<P, P, Self::State>
    where
        Self: Sized,
        P: MountPoint<Self>,
    {
        self.mount_as::<P>(Self::NAME)
    }

    /// As [`mount`](Component::mount), under another node name (to mount one
    /// component twice in a graph).
    fn mount_as<P>(&self, name: impl Into<Cow<'static, str>>) -> Subgraph<P, P, Self::State>
    where
        Self: Sized,
        P: MountPoint<Self>,
    {
        Subgraph::mapped(
            name,
            self.graph().clone(),
            |parent: &P| {
                let mut update = UpdateOf::<Self::State>::new();
                <P as MountPoint<Self>>::Input::copy(parent, &mut update);
                update.into_inner()
            },
            |done: Self::State| {
                let mut update = UpdateOf::<P>::new();
                <P as MountPoint<Self>>::Output::copy(&done, &mut update);
                update
            },
        )
    }

    /// This component as a node named `name` with mappings of your own: `input`
    /// makes the component's input from the node's input `I` (the parent's state,
    /// or the payload of a [`send`](crate::send) — a component fanned out over
    /// items), `output` the node's result from the component's final state (an
    /// update of the parent, a `Command`, anything a node may return). For a
    /// parent whose fields do not match the component's one to one.
    fn mount_with<P, I, R>(
        &self,
        name: impl Into<Cow<'static, str>>,
        input: impl Fn(&I) -> <Self::State as State>::Update + Send + Sync + 'static,
        output: impl Fn(Self::State) -> R + Send + Sync + 'static,
    ) -> Subgraph<P, I, Self::State>
    where
        Self: Sized,
        P: State,
        I: std::any::Any + Send + Sync,
        R: IntoNodeOutput<P>,
    {
        Subgraph::mapped(name, self.graph().clone(), input, output)
    }
}

/// A state a [`Component`] `K` can be mounted in: it provides every field of
/// `K::Input` and `K::Output`, with the same types. Implemented for every such
/// state; a missing field is reported as "the state `P` has no field `F`".
#[diagnostic::on_unimplemented(
    message = "the component `{K}` cannot be mounted in a graph of `{Self}`",
    note = "`{Self}` must provide every field of `{K}`'s `Input` and `Output` (mark them `#[field(Marker)]`)"
)]
pub trait MountPoint<K: Component>: State {
    /// `K::Input`, copied from this state into the component's.
    type Input: CopyFields<Self, K::State>;
    /// `K::Output`, copied from the component's final state into this one.
    type Output: CopyFields<K::State, Self>;
}

impl<P, K> MountPoint<K> for P
where
    P: State,
    K: Component,
    K::Input: CopyFields<P, K::State>,
    K::Output: CopyFields<K::State, P>,
{
    type Input = K::Input;
    type Output = K::Output;
}

/// A tuple of [field markers](Field) that the state `S` provides, every one:
/// `()`, `(A,)`, `(A, B)`... up to twelve.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of fields of the state `{S}`",
    note = "write the fields as a tuple of markers declared with `field!`, e.g. `(Question,)` or `(Answer, Sources)`, each provided by `{S}` with `#[field(Marker)]`"
)]
pub trait FieldsOf<S: State> {
    /// The markers' Rust type names, in order (for messages and drawings).
    fn names() -> Vec<&'static str>;
}

/// A tuple of field markers both `From` and `To` provide: the values of `From`'s
/// fields can be written as an update of `To`. Implemented for tuples of up to
/// twelve markers whose values are `Clone`.
pub trait CopyFields<From: State, To: State>: FieldsOf<From> + FieldsOf<To> {
    /// Writes each field of `from` into `update` (a reducer field of `To` folds
    /// the value in, a topic publishes the items).
    fn copy(from: &From, update: &mut UpdateOf<To>);
}

macro_rules! field_tuples {
    ($($f:ident),*) => {
        impl<S: State, $($f),*> FieldsOf<S> for ($($f,)*)
        where
            $($f: Field, S: Has<$f>,)*
        {
            fn names() -> Vec<&'static str> {
                vec![$(std::any::type_name::<$f>()),*]
            }
        }

        impl<From: State, To: State, $($f),*> CopyFields<From, To> for ($($f,)*)
        where
            $($f: Field, $f::Value: Clone, From: Has<$f>, To: Has<$f>,)*
        {
            #[allow(unused_variables)]
            fn copy(from: &From, update: &mut UpdateOf<To>) {
                $(update.write::<$f>(<From as Has<$f>>::field_ref(from).clone());)*
            }
        }
    };
}

field_tuples!();
field_tuples!(A);
field_tuples!(A, B);
field_tuples!(A, B, C);
field_tuples!(A, B, C, D);
field_tuples!(A, B, C, D, E);
field_tuples!(A, B, C, D, E, F);
field_tuples!(A, B, C, D, E, F, G);
field_tuples!(A, B, C, D, E, F, G, H);
field_tuples!(A, B, C, D, E, F, G, H, I);
field_tuples!(A, B, C, D, E, F, G, H, I, J);
field_tuples!(A, B, C, D, E, F, G, H, I, J, K);
field_tuples!(A, B, C, D, E, F, G, H, I, J, K, L);

/// Nodes and edges a library ships to be added to the user's own graph, for any
/// state `S` that has the fields they use: implement it for a type of yours with
/// `S: Has<..>` bounds, and the user calls [`StateGraph::add_nodes`].
///
/// The set's nodes run on the user's state; document the names of its entry and
/// exit nodes (constants are best) so the user can connect them with edges.
/// Building blocks it adds are checked by `compile()` like any other.
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph::{NodeSet, StateGraph};
/// # use serde::{de::DeserializeOwned};
///
/// stategraph::field! {
///     pub Draft: String;
///     pub Revisions: u32;
/// }
///
/// /// Polishes a draft until it has been revised twice.
/// pub struct Polish;
///
/// impl Polish {
///     /// The node to route to.
///     pub const ENTRY: &'static str = "polish";
/// }
///
/// fn polish<S: Has<Draft> + Has<Revisions>>(state: &S) -> UpdateOf<S> {
///     UpdateOf::new()
///         .set::<Draft>(format!("{}!", state.get::<Draft>()))
///         .set::<Revisions>(state.get::<Revisions>() + 1)
/// }
///
/// impl<S> NodeSet<S> for Polish
/// where
///     S: Has<Draft> + Has<Revisions> + Serialize + DeserializeOwned,
/// {
///     fn add_to(self, graph: StateGraph<S>) -> StateGraph<S> {
///         graph
///             .add_node(node_fn(Self::ENTRY, polish::<S>))
///             .add_conditional_edges(Self::ENTRY, |s: &S| {
///                 if *s.get::<Revisions>() < 2 { Polish::ENTRY } else { END }
///             })
///     }
/// }
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Post {
///     #[field(Draft)]
///     body: String,
///     #[field(Revisions)]
///     edits: u32,
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let app = StateGraph::<Post>::new()
///     .add_nodes(Polish)
///     .add_edge(START, Polish::ENTRY)
///     .compile()?;
/// let out = app.invoke(Post::update().body("hi".into()), &RunConfig::new()).await?;
/// assert_eq!((out.body.as_str(), out.edits), ("hi!!", 2));
/// # Ok::<(), GraphError>(())
/// # }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be added to a graph of `{S}`",
    label = "not a `NodeSet` for `{S}`",
    note = "`add_nodes` takes a `NodeSet` (several nodes and their edges, e.g. from a component library); add a single node with `add_node`",
    note = "a `NodeSet` implemented only for states with the fields its nodes use needs them all: see which `Has<..>` bound `{S}` misses"
)]
pub trait NodeSet<S: State, C: ?Sized = crate::context::Untyped> {
    /// Adds the set's nodes and edges to `graph` (whose context type is `C`:
    /// implement it for every `C` when the nodes read no typed context).
    fn add_to(self, graph: StateGraph<S, C>) -> StateGraph<S, C>;
}

impl<S: State, C: ?Sized + 'static> StateGraph<S, C> {
    /// Adds a library's [`NodeSet`]: its nodes and the edges between them.
    pub fn add_nodes(self, set: impl NodeSet<S, C>) -> Self {
        set.add_to(self)
    }
}
