//! A node's identity as edges and [`Send`](crate::Send) address it: its name and
//! the type of input it takes ([`NodeSpec`]), given as a value or as the marker fn
//! of a `#[node]` ([`IntoNodeSpec`]).

use std::any::{Any, TypeId};
use std::borrow::Cow;

/// A node's identity: its name and the type of input it takes.
///
/// `#[node]` implements it for the unit struct it generates. `Input` is the graph
/// state for ordinary nodes, or a payload type for nodes reached only by [`Send`].
pub trait NodeSpec: std::marker::Send + Sync + 'static {
    /// What the node takes: the graph state, or its own payload type.
    type Input: Any + std::marker::Send + Sync;

    /// The node's name in the graph.
    fn name(&self) -> Cow<'static, str>;

    /// How PULL tasks make the node's input from the state when the input is a
    /// [`View`](crate::View) of it; `None` for a node taking the state itself or a
    /// payload. `#[node]` fills it in for a view input.
    #[doc(hidden)]
    fn projection() -> Option<Projection<Self::Input>>
    where
        Self: Sized,
    {
        None
    }

    /// The nodes the node's gotos can name, one entry per goto type of its
    /// return type (`None`: known only at run time), for the compile-time checks
    /// of `graph!`. `#[node]` fills it in; any other node says `[None]`.
    #[doc(hidden)]
    const GOTO_ROUTES: &'static [Option<&'static [GotoRoute]>] = &[None];
}

/// A node that a goto type can route to, as `graph!` checks it at compile time:
/// its name, and the whole message of the compile error when the graph does not
/// declare it (const evaluation cannot format one). `#[derive(Goto)]` makes one
/// per variant that names a node.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct GotoRoute {
    /// The node's name.
    pub node: &'static str,
    /// The error when the graph lacks it, naming the variant and the node.
    pub missing: &'static str,
}

/// How a node whose input is a [`View`](crate::View) gets it from the state:
/// the view's state type and its projection, with the state's type erased.
#[doc(hidden)]
pub struct Projection<I> {
    /// The state the view is a view of.
    pub state: TypeId,
    /// The view of a state known to be of type `state` (`None` for another type).
    pub project: fn(&(dyn Any + std::marker::Send + Sync)) -> Option<I>,
}

/// The argument of the marker fn `#[node]` generates; you never call that fn.
///
/// `#[node] fn agent(..)` produces a type `agent` (the node) and a fn
/// `agent(NodeMarker) -> agent`, so the bare name `agent` can be passed to
/// `add_node`, `add_edge` and `send` while your own `let agent = ..` bindings still
/// work (a fn can be shadowed; a unit struct or const could not).
#[derive(Debug, Clone, Copy)]
pub struct NodeMarker(pub(crate) ());

/// Marks a node passed as a value (a type implementing [`NodeSpec`]).
pub enum ByValue {}
/// Marks a node passed as the marker fn of a `#[node]`.
pub struct ByFn<T>(std::marker::PhantomData<fn() -> T>);
/// Marks a node named by a string.
pub enum ByName {}
/// Marks a node passed by reference (cloned: a [`Subgraph`](crate::Subgraph)
/// used both as a node and as a `send` target).
pub enum ByRef {}

/// A node given either as a value or as the name of a `#[node]` fn.
///
/// `M` is inferred; it only keeps the two forms apart.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node",
    label = "expected a `#[node]` fn or a node value",
    note = "write the node as a fn with `#[node]`, or make a closure a node with `node_fn(name, closure)`"
)]
pub trait IntoNodeSpec<M> {
    /// The node.
    type Spec: NodeSpec;

    /// Produces the node.
    fn into_spec(self) -> Self::Spec;
}

impl<N: NodeSpec> IntoNodeSpec<ByValue> for N {
    type Spec = N;

    fn into_spec(self) -> N {
        self
    }
}

impl<N: NodeSpec + Clone> IntoNodeSpec<ByRef> for &N {
    type Spec = N;

    fn into_spec(self) -> N {
        self.clone()
    }
}

impl<F, T> IntoNodeSpec<ByFn<T>> for F
where
    F: Fn(NodeMarker) -> T,
    T: NodeSpec,
{
    type Spec = T;

    fn into_spec(self) -> T {
        self(NodeMarker(()))
    }
}
