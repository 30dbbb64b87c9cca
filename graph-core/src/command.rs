//! Routing: [`GotoTarget`] (the typed set of places a node may go), [`Command`]
//! (update + goto in one return value) and [`Send`] (a task with its own input).

use crate::checkpoint::Blob;
use crate::spec::{GotoRoute, IntoNodeSpec, NodeSpec};
use serde::Serialize;
use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Where a route leads: a node, or the end of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Destination<'a> {
    /// The node with this name.
    Node(&'a str),
    /// `END`: the branch stops here.
    End,
}

/// What a routing type tells `compile()` and the graph drawing about its targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// The node routes nowhere by itself (no `Command` goto).
    None,
    /// Exactly these destinations (a `#[derive(Goto)]` enum).
    Declared(&'static [Destination<'static>]),
    /// Decided at run time (node names as strings, `Send`s).
    Dynamic,
}

/// A typed set of routing targets; implemented by `#[derive(Goto)]`.
///
/// Each value names a node (or `END`); the whole set is known statically, so
/// `compile()` checks that every target exists and the drawing shows every edge.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a goto target",
    label = "not a set of routing targets",
    note = "add `#[derive(Goto)]` to the enum `{Self}`: each variant names a node (snake_case), `#[goto(end)]` marks END"
)]
pub trait GotoTarget: std::marker::Send + Sync + 'static {
    /// Where this value routes to.
    fn destination(&self) -> Destination<'_>;

    /// Every destination this type can produce.
    fn targets() -> Targets;

    /// The nodes its values name, for the compile-time checks of `graph!`;
    /// `None` when they are only known at run time (node names as strings).
    #[doc(hidden)]
    const ROUTES: Option<&'static [GotoRoute]> = None;
}

impl GotoTarget for &'static str {
    fn destination(&self) -> Destination<'_> {
        if *self == crate::END {
            Destination::End
        } else {
            Destination::Node(self)
        }
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl GotoTarget for String {
    fn destination(&self) -> Destination<'_> {
        if self == crate::END {
            Destination::End
        } else {
            Destination::Node(self)
        }
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

/// A routing type with no values, for a `Command` that only updates or sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoGoto {}

impl GotoTarget for NoGoto {
    fn destination(&self) -> Destination<'_> {
        match *self {}
    }

    fn targets() -> Targets {
        Targets::None
    }

    const ROUTES: Option<&'static [GotoRoute]> = Some(&[]);
}

/// A task for one node with its own input, instead of the graph state (a PUSH task).
///
/// Build it with [`send`] from a `#[node]` value: the payload type is
/// checked against the node's input type by the compiler. A router returns
/// `Vec<Send>` to fan out, one task per item (map-reduce):
///
/// ```
/// use stategraph::prelude::*;
///
/// fn concat(mut a: Vec<u32>, b: Vec<u32>) -> Vec<u32> { a.extend(b); a }
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Jobs { inputs: Vec<u32>, #[reducer(concat)] squares: Vec<u32> }
///
/// #[node(state = Jobs)]
/// fn square(n: u32) -> JobsUpdate { Jobs::update().squares(vec![n * n]) }
///
/// fn fan_out(jobs: &Jobs) -> Vec<stategraph::Send> {
///     jobs.inputs.iter().map(|&n| send(square, n)).collect()
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), GraphError> {
/// let app = StateGraph::<Jobs>::new()
///     .add_node(square)
///     .add_conditional_edges(START, fan_out)
///     .compile()?;
/// let out = app.invoke(Jobs::update().inputs(vec![1, 2, 3]), &RunConfig::new()).await?;
/// assert_eq!(out.squares, [1, 4, 9]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Send {
    node: Cow<'static, str>,
    payload: Arc<dyn Any + std::marker::Send + Sync>,
    payload_type: TypeId,
    payload_type_name: &'static str,
    encode: fn(&(dyn Any + std::marker::Send + Sync)) -> Result<Blob, serde_json::Error>,
}

/// Serialises a payload known to be an `I` (checkpoints store pending Sends).
pub(crate) fn encode_payload<I: Any + Serialize>(
    payload: &(dyn Any + std::marker::Send + Sync),
) -> Result<Blob, serde_json::Error> {
    match payload.downcast_ref::<I>() {
        Some(value) => Blob::encode(value),
        None => Err(serde::ser::Error::custom("a Send payload changed type")),
    }
}

impl Send {
    /// A task for `node` (a `#[node]` fn) with `input`; the payload type is checked
    /// at compile time.
    pub fn new<M, N: IntoNodeSpec<M>>(node: N, input: <N::Spec as NodeSpec>::Input) -> Self
    where
        <N::Spec as NodeSpec>::Input: Serialize,
    {
        Self::erased(node.into_spec().name(), input)
    }

    /// A task for the node named `node`; the payload type is checked when it runs
    /// (use it for closure nodes; prefer [`Send::new`]).
    pub fn to_named<I: Any + std::marker::Send + Sync + Serialize>(
        node: impl Into<Cow<'static, str>>,
        input: I,
    ) -> Self {
        Self::erased(node.into(), input)
    }

    fn erased<I: Any + std::marker::Send + Sync + Serialize>(
        node: Cow<'static, str>,
        input: I,
    ) -> Self {
        Send {
            node,
            payload: Arc::new(input),
            payload_type: TypeId::of::<I>(),
            payload_type_name: std::any::type_name::<I>(),
            encode: encode_payload::<I>,
        }
    }

    /// Rebuilds a Send from a checkpoint: the payload was decoded by its node.
    pub(crate) fn restored(
        node: Cow<'static, str>,
        payload: Arc<dyn Any + std::marker::Send + Sync>,
        payload_type: (TypeId, &'static str),
        encode: fn(&(dyn Any + std::marker::Send + Sync)) -> Result<Blob, serde_json::Error>,
    ) -> Self {
        Send {
            node,
            payload,
            payload_type: payload_type.0,
            payload_type_name: payload_type.1,
            encode,
        }
    }

    /// The payload serialised, as stored in checkpoints.
    pub(crate) fn encode_payload(&self) -> Result<Blob, serde_json::Error> {
        (self.encode)(&*self.payload)
    }

    /// The target node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The payload, if it is a `T`.
    pub fn payload<T: Any>(&self) -> Option<&T> {
        self.payload.downcast_ref::<T>()
    }

    pub(crate) fn payload_arc(&self) -> Arc<dyn Any + std::marker::Send + Sync> {
        Arc::clone(&self.payload)
    }

    pub(crate) fn payload_type(&self) -> (TypeId, &'static str) {
        (self.payload_type, self.payload_type_name)
    }
}

impl fmt::Debug for Send {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Send")
            .field("node", &self.node)
            .field("payload", &self.payload_type_name)
            .finish()
    }
}

/// A PUSH task for a `#[node]` value with its input: `send(worker, item)`.
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Jobs { #[reducer(concat)] done: Vec<u32> }
///
/// fn concat(mut a: Vec<u32>, b: Vec<u32>) -> Vec<u32> { a.extend(b); a }
///
/// #[node]
/// fn square(n: u32) -> JobsUpdate { Jobs::update().done(vec![n * n]) }
///
/// let fan_out: Vec<stategraph::Send> = (1..=3).map(|n| send(square, n)).collect();
/// assert_eq!(fan_out[0].node(), "square");
/// ```
pub fn send<M, N: IntoNodeSpec<M>>(node: N, input: <N::Spec as NodeSpec>::Input) -> Send
where
    <N::Spec as NodeSpec>::Input: Serialize,
{
    Send::new(node, input)
}

/// One entry of a goto list or a router's result: a typed target or a `Send`.
#[derive(Debug, Clone)]
pub enum Route<G> {
    /// A node (or END) from the routing type.
    To(G),
    /// A PUSH task.
    Send(Send),
}

impl<G> From<Send> for Route<G> {
    fn from(s: Send) -> Self {
        Route::Send(s)
    }
}

/// Which graph a [`Command`] is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandGraph {
    /// The graph the node belongs to.
    Current,
    /// The parent of the graph the node belongs to.
    Parent,
}

/// A node result that updates the state and routes in one value.
///
/// `G` is the node's routing type (a `#[derive(Goto)]` enum); `U` is the state's
/// update type, filled in by `#[node]` when you write `Command<Route>`.
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Counter { n: u32 }
///
/// #[derive(Goto, Clone, Copy, Debug)]
/// enum Next { Again, #[goto(end)] Done }
///
/// #[node]
/// fn again(s: &Counter) -> Command<Next> {
///     if s.n >= 3 {
///         Command::goto(Next::Done)
///     } else {
///         Command::goto(Next::Again).update(Counter::update().n(s.n + 1))
///     }
/// }
/// # let _ = again;
/// ```
#[derive(Debug, Clone)]
pub struct Command<G, U> {
    pub(crate) graph: CommandGraph,
    pub(crate) update: Option<U>,
    pub(crate) goto: Vec<Route<G>>,
    pub(crate) resume: Option<crate::interrupt::Resume>,
}

impl<G, U> Default for Command<G, U> {
    fn default() -> Self {
        Command {
            graph: CommandGraph::Current,
            update: None,
            goto: Vec::new(),
            resume: None,
        }
    }
}

impl<G, U> Command<G, U> {
    /// A command that routes to `target`.
    pub fn goto(target: G) -> Self {
        Command {
            goto: vec![Route::To(target)],
            ..Self::default()
        }
    }

    /// A command that routes to every target in `targets`.
    pub fn goto_all(targets: impl IntoIterator<Item = G>) -> Self {
        Command {
            goto: targets.into_iter().map(Route::To).collect(),
            ..Self::default()
        }
    }

    /// A command that starts a PUSH task.
    pub fn send(send: Send) -> Self {
        Command {
            goto: vec![Route::Send(send)],
            ..Self::default()
        }
    }

    /// A command that only updates the state (static edges still fire).
    pub fn update_only(update: U) -> Self {
        Command {
            update: Some(update),
            ..Self::default()
        }
    }

    /// Sets the state update.
    pub fn update(mut self, update: U) -> Self {
        self.update = Some(update);
        self
    }

    /// Adds another target.
    pub fn and_goto(mut self, target: G) -> Self {
        self.goto.push(Route::To(target));
        self
    }

    /// Adds a PUSH task.
    pub fn and_send(mut self, send: Send) -> Self {
        self.goto.push(Route::Send(send));
        self
    }

    /// Graph input that resumes an interrupted thread: `value` answers its pending
    /// [`interrupt`](crate::Context::interrupt) (the node that asked re-runs and the
    /// call returns `value`). Combine with [`update`](Self::update) and
    /// [`and_goto`](Self::and_goto) to also change the state or route. When several
    /// interrupts are pending, answer them by id with
    /// [`resume_map`](Self::resume_map).
    ///
    /// Only graph input can resume: a node returning a `Command` with a resume
    /// value fails.
    pub fn resume(value: impl Serialize) -> Self {
        Command {
            resume: Some(crate::interrupt::Resume::value(&value)),
            ..Self::default()
        }
    }

    /// Graph input that answers pending interrupts by id
    /// ([`Interrupt::id`](crate::Interrupt)); interrupts left out stay pending.
    pub fn resume_map<K: Into<String>, V: Serialize>(
        answers: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Command {
            resume: Some(crate::interrupt::Resume::map(answers)),
            ..Self::default()
        }
    }

    /// Addresses this command to the parent graph: returned by a node of a
    /// subgraph, it ends the subgraph's run and becomes the result of the parent's
    /// task that runs the subgraph — `update` is an update of the *parent's* state
    /// and `goto` names the parent's nodes (docs/semantics.md §8.5). In a graph
    /// that is not running as a subgraph it is an error.
    pub fn to_parent(self) -> ParentCommand<G, U> {
        ParentCommand(self)
    }

    /// The state update, if any.
    pub fn update_ref(&self) -> Option<&U> {
        self.update.as_ref()
    }

    /// The routes, in order.
    pub fn routes(&self) -> &[Route<G>] {
        &self.goto
    }
}

/// A [`Command`] for the parent graph of the subgraph a node runs in (LangGraph's
/// `Command(graph=Command.PARENT)`); made by [`Command::to_parent`].
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Parent { dialog: Vec<String> }
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Child { n: u32 }
///
/// // A node of the child graph hands control to the parent's `review` node.
/// #[node]
/// fn escalate(_: &Child) -> stategraph::ParentCommand<&'static str, ParentUpdate> {
///     Command::goto("review")
///         .update(Parent::update().dialog(vec!["escalated".into()]))
///         .to_parent()
/// }
/// # let _ = escalate;
/// ```
#[derive(Debug, Clone)]
pub struct ParentCommand<G, U>(pub(crate) Command<G, U>);

/// A [`ParentCommand`] on its way to the parent
/// graph: its update (typed for the parent's state, which this graph does not
/// know, so erased) and its routes.
pub struct ParentRoute {
    pub(crate) updates: Vec<Box<dyn Any + std::marker::Send + Sync>>,
    pub(crate) update_type: &'static str,
    pub(crate) routes: Vec<RouteWrite>,
}

impl std::fmt::Debug for ParentRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParentRoute")
            .field("updates", &self.updates.len())
            .field("update_type", &self.update_type)
            .field("routes", &self.routes)
            .finish()
    }
}

/// A control write produced by a node's own routing.
#[derive(Debug, Clone)]
pub(crate) enum RouteWrite {
    Node(Cow<'static, str>),
    Send(Send),
}
