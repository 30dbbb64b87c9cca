//! Nodes: [`NodeSpec`] (name and input type), [`Node`] (how to run it for a state),
//! [`IntoNodeOutput`] (what a node may return), and closure nodes.

use crate::checkpoint::Blob;
pub use crate::command::ParentRoute;
pub(crate) use crate::command::RouteWrite;
use crate::command::{Command, CommandGraph, Destination, GotoTarget, Route, Send, Targets};
use crate::context::{Context, FromContext, Untyped};
use crate::error::NodeError;
pub use crate::spec::{ByFn, ByName, ByRef, ByValue, IntoNodeSpec, NodeMarker, NodeSpec};
use crate::state::State;
use serde::{de::DeserializeOwned, Serialize};
use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future a node returns: its result already made (a node that did its
/// work when called, as a plain `fn` node does: no allocation), or a boxed
/// future the engine polls.
///
/// ```
/// use stategraph::{Context, Node, NodeFuture, NodeOutput, NodeSpec, State};
/// use std::sync::Arc;
/// # use stategraph::prelude::*;
/// # #[derive(State, Clone, Default, Serialize, Deserialize)]
/// # struct Count { n: u32 }
///
/// struct Bump;
///
/// impl NodeSpec for Bump {
///     type Input = Count;
///     fn name(&self) -> std::borrow::Cow<'static, str> {
///         "bump".into()
///     }
/// }
///
/// impl Node<Count> for Bump {
///     fn run(&self, input: Arc<Count>, _ctx: Context) -> NodeFuture<Count> {
///         // Done at once: no future to box.
///         NodeFuture::ready(Ok(NodeOutput::new().with_update(Count::update().n(input.n + 1))))
///         // Waiting on something: NodeFuture::new(async move { ... })
///     }
/// }
/// ```
pub struct NodeFuture<S: State>(Pending<S>);

/// What a [`NodeFuture`] holds.
enum Pending<S: State> {
    /// The result, until polled.
    Ready(Option<Result<NodeOutput<S>, NodeError>>),
    Boxed(BoxedNodeFuture<S>),
}

/// A node's future, boxed.
type BoxedNodeFuture<S> =
    Pin<Box<dyn Future<Output = Result<NodeOutput<S>, NodeError>> + std::marker::Send + 'static>>;

impl<S: State> NodeFuture<S> {
    /// A node's result, made already.
    pub fn ready(result: Result<NodeOutput<S>, NodeError>) -> Self {
        NodeFuture(Pending::Ready(Some(result)))
    }

    /// A node's future (boxed).
    pub fn new(
        fut: impl Future<Output = Result<NodeOutput<S>, NodeError>> + std::marker::Send + 'static,
    ) -> Self {
        NodeFuture(Pending::Boxed(Box::pin(fut)))
    }
}

impl<S: State, F> From<Pin<Box<F>>> for NodeFuture<S>
where
    F: Future<Output = Result<NodeOutput<S>, NodeError>> + std::marker::Send + 'static,
{
    /// A boxed future (`Box::pin(async move { .. }).into()`), kept as it is.
    fn from(fut: Pin<Box<F>>) -> Self {
        NodeFuture(Pending::Boxed(fut))
    }
}

// The result is never pinned (only the boxed future is, in its box).
impl<S: State> Unpin for NodeFuture<S> {}

impl<S: State> Future for NodeFuture<S> {
    type Output = Result<NodeOutput<S>, NodeError>;

    fn poll(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut self.get_mut().0 {
            Pending::Ready(result) => match result.take() {
                Some(result) => std::task::Poll::Ready(result),
                None => std::task::Poll::Ready(Err(NodeError::msg(
                    "a node's future was polled again after it completed",
                ))),
            },
            Pending::Boxed(fut) => fut.as_mut().poll(cx),
        }
    }
}

impl<S: State> std::fmt::Debug for NodeFuture<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match &self.0 {
            Pending::Ready(_) => "NodeFuture(ready)",
            Pending::Boxed(_) => "NodeFuture(pending)",
        })
    }
}

/// A node that can run in a graph whose state is `S` and whose context type is
/// `C` ([`Context`]; untyped by default).
///
/// A node that does not read a typed context value implements it for every `C`
/// (as `#[node]` does for a fn taking the plain `&Context`), so that it can be
/// added to a graph of any context type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a node of a graph with state `{S}`",
    label = "not a node for this state",
    note = "write the node as a fn with `#[node]` whose first parameter is `&{S}` (or a payload type for a Send-only node), and whose return type is an update of `{S}`, a `Command`, `Vec<Send>`, `()` or a `Result` of these",
    note = "a `#[node]` written for another state (the note below marks its parameter) runs in that state's graph; to add it to this one, make it take `&{S}` and return an update of `{S}`"
)]
pub trait Node<S: State, C: ?Sized = Untyped>: NodeSpec {
    /// Runs the node.
    fn run(&self, input: Arc<Self::Input>, ctx: Context<C>) -> NodeFuture<S>;

    /// The destinations the node may route to by itself (from its `Command` type).
    fn targets(&self) -> Targets {
        Targets::None
    }

    /// Whether the node does its work synchronously, blocking its thread until
    /// done (a plain `fn` node). With a
    /// [`timeout`](crate::NodeOptions::timeout), the engine runs such a node on
    /// tokio's blocking pool, where the timeout can abandon it; without one, it
    /// runs inline. `#[node]` sets it for `fn`s (not `async fn`s).
    fn is_blocking(&self) -> bool {
        false
    }

    /// The compiled graph this node runs, if it is a [`Subgraph`](crate::Subgraph)
    /// (for state inspection across namespaces).
    #[doc(hidden)]
    fn as_subgraph(&self) -> Option<&dyn ErasedSubgraph> {
        None
    }
}

/// What a node produced: state updates, routes and PUSH tasks.
pub struct NodeOutput<S: State> {
    pub(crate) updates: Vec<S::Update>,
    pub(crate) routes: Vec<RouteWrite>,
    pub(crate) parent: Option<ParentRoute>,
}

impl ParentRoute {
    /// The routes and updates as the output of a task of the parent graph, whose
    /// state is `P`.
    pub(crate) fn into_output<P: State>(self) -> Result<NodeOutput<P>, NodeError> {
        let mut updates = Vec::with_capacity(self.updates.len());
        for update in self.updates {
            match update.downcast::<P::Update>() {
                Ok(u) => updates.push(*u),
                Err(_) => {
                    return Err(NodeError::msg(format!(
                        "a Command::to_parent carries an update of type `{}`, but the parent \
                         graph's state takes `{}`",
                        self.update_type,
                        std::any::type_name::<P::Update>()
                    )))
                }
            }
        }
        Ok(NodeOutput {
            updates,
            routes: self.routes,
            parent: None,
        })
    }
}

impl<S: State> Default for NodeOutput<S> {
    fn default() -> Self {
        NodeOutput {
            updates: Vec::new(),
            routes: Vec::new(),
            parent: None,
        }
    }
}

impl<S: State> std::fmt::Debug for NodeOutput<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeOutput")
            .field("updates", &self.updates.len())
            .field("routes", &self.routes)
            .finish()
    }
}

impl<S: State> NodeOutput<S> {
    /// A copy, unless it carries a command for the parent graph (not cached).
    pub(crate) fn try_clone(&self) -> Option<Self> {
        if self.parent.is_some() {
            return None;
        }
        Some(NodeOutput {
            updates: self.updates.clone(),
            routes: self.routes.clone(),
            parent: None,
        })
    }

    /// An output with no writes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a state update.
    pub fn with_update(mut self, update: S::Update) -> Self {
        self.updates.push(update);
        self
    }

    /// Adds a route to the node named `node` (`END` adds nothing).
    pub fn with_goto(mut self, node: impl Into<Cow<'static, str>>) -> Self {
        let node = node.into();
        if node != crate::END {
            self.routes.push(RouteWrite::Node(node));
        }
        self
    }

    /// Adds a PUSH task.
    pub fn with_send(mut self, send: Send) -> Self {
        self.routes.push(RouteWrite::Send(send));
        self
    }

    /// The state updates, in order.
    pub fn updates(&self) -> &[S::Update] {
        &self.updates
    }

    fn push_command<G: GotoTarget>(&mut self, cmd: Command<G, S::Update>) -> Result<(), NodeError> {
        if cmd.resume.is_some() {
            return Err(NodeError::msg(
                "a node returned Command::resume, which only graph input can use: pass it to \
                 invoke/stream to answer an interrupt",
            ));
        }
        match cmd.graph {
            CommandGraph::Current => {
                if let Some(u) = cmd.update {
                    self.updates.push(u);
                }
                for route in cmd.goto {
                    match route {
                        Route::To(g) => {
                            if let Destination::Node(n) = g.destination() {
                                self.routes.push(RouteWrite::Node(Cow::Owned(n.to_owned())));
                            }
                        }
                        Route::Send(s) => self.routes.push(RouteWrite::Send(s)),
                    }
                }
            }
            CommandGraph::Parent => {
                return Err(NodeError::msg(
                    "a Command addressed to the parent graph must be returned as a \
                     ParentCommand (Command::to_parent), which carries the parent's update type",
                ))
            }
        }
        Ok(())
    }
}

/// A value a node may return.
///
/// Implemented for `()`, [`Command`], `Vec<Command>`, [`Send`], `Vec<Send>`,
/// `Option<T>`, `Result<T, E>` and [`NodeOutput`]; `#[derive(State)]` adds the state's
/// update type and `Vec` of it.
#[diagnostic::on_unimplemented(
    message = "a node of a graph with state `{S}` cannot return `{Self}`",
    label = "not a node result for this state",
    note = "return the state's update type (`{S}Update`), `Command<G>`, `Vec<Send>`, `()`, or a `Result` of one of these"
)]
pub trait IntoNodeOutput<S: State> {
    /// Converts into the engine's form.
    fn into_output(self) -> Result<NodeOutput<S>, NodeError>;

    /// The destinations this return type can route to.
    fn targets() -> Targets {
        Targets::None
    }
}

impl<S: State> IntoNodeOutput<S> for NodeOutput<S> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(self)
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl<S: State> IntoNodeOutput<S> for () {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::default())
    }
}

impl<S: State, G: GotoTarget> IntoNodeOutput<S> for Command<G, S::Update> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        let mut out = NodeOutput::default();
        out.push_command(self)?;
        Ok(out)
    }

    fn targets() -> Targets {
        G::targets()
    }
}

impl<S: State, G: GotoTarget> IntoNodeOutput<S> for Vec<Command<G, S::Update>> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        let mut out = NodeOutput::default();
        for cmd in self {
            out.push_command(cmd)?;
        }
        Ok(out)
    }

    fn targets() -> Targets {
        G::targets()
    }
}

impl<S, G, U> IntoNodeOutput<S> for crate::command::ParentCommand<G, U>
where
    S: State,
    G: GotoTarget,
    U: crate::state::StateUpdate,
{
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        let cmd = self.0;
        if cmd.resume.is_some() {
            return Err(NodeError::msg(
                "a node returned Command::resume, which only graph input can use",
            ));
        }
        let mut routes = Vec::with_capacity(cmd.goto.len());
        for route in cmd.goto {
            match route {
                Route::To(g) => {
                    if let Destination::Node(n) = g.destination() {
                        routes.push(RouteWrite::Node(Cow::Owned(n.to_owned())));
                    }
                }
                Route::Send(s) => routes.push(RouteWrite::Send(s)),
            }
        }
        let updates: Vec<Box<dyn Any + std::marker::Send + Sync>> = match cmd.update {
            Some(u) => vec![Box::new(u)],
            None => Vec::new(),
        };
        Ok(NodeOutput {
            updates: Vec::new(),
            routes: Vec::new(),
            parent: Some(ParentRoute {
                updates,
                update_type: std::any::type_name::<U>(),
                routes,
            }),
        })
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl<S: State> IntoNodeOutput<S> for crate::field::UpdateOf<S> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::new().with_update(self.into_inner()))
    }
}

impl<S: State> IntoNodeOutput<S> for Send {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::default().with_send(self))
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl<S: State> IntoNodeOutput<S> for Vec<Send> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        let mut out = NodeOutput::default();
        out.routes.extend(self.into_iter().map(RouteWrite::Send));
        Ok(out)
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }
}

impl<S: State, T: IntoNodeOutput<S>> IntoNodeOutput<S> for Option<T> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        match self {
            Some(t) => t.into_output(),
            None => Ok(NodeOutput::default()),
        }
    }

    fn targets() -> Targets {
        T::targets()
    }
}

impl<S: State, T: IntoNodeOutput<S>, E: Into<NodeError>> IntoNodeOutput<S> for Result<T, E> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        self.map_err(Into::into)?.into_output()
    }

    fn targets() -> Targets {
        T::targets()
    }
}

/// A node made from a closure, by [`node_fn`] or [`async_node_fn`].
pub struct FnNode<F, I, M> {
    name: Cow<'static, str>,
    f: F,
    _marker: std::marker::PhantomData<fn(I, M)>,
}

impl<F, I, M> FnNode<F, I, M> {
    pub(crate) fn new(name: Cow<'static, str>, f: F) -> Self {
        FnNode {
            name,
            f,
            _marker: std::marker::PhantomData,
        }
    }
}

impl<F, I, M> NodeSpec for FnNode<F, I, M>
where
    F: std::marker::Send + Sync + 'static,
    I: Any + std::marker::Send + Sync,
    M: 'static,
{
    type Input = I;

    fn name(&self) -> Cow<'static, str> {
        self.name.clone()
    }
}

/// A node made from a closure, for [`StateGraph::add_node`](crate::StateGraph::add_node)
/// and [`add_node_with`](crate::StateGraph::add_node_with) (as tower's
/// `service_fn`): `|input: &I| ..` or `|input: &I, ctx: &Context| ..`
/// (`ctx: &Context<UserCtx>` to read the typed context value), returning
/// anything a node may return. The input is the state, or a payload type for a
/// node reached only by `Send`.
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph::node_fn;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct S { n: u32 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), GraphError> {
/// let app = StateGraph::<S>::new()
///     .add_node(node_fn("double", |s: &S| S::update().n(s.n * 2)))
///     .add_edge(START, "double")
///     .compile()?;
/// assert_eq!(app.invoke(S::update().n(21), &RunConfig::new()).await?.n, 42);
/// # Ok(())
/// # }
/// ```
pub fn node_fn<F, I, M>(name: impl Into<Cow<'static, str>>, f: F) -> FnNode<F, I, M>
where
    F: NodeClosure<I, M>,
{
    FnNode::new(name.into(), f)
}

/// A node made from an async closure, for
/// [`StateGraph::add_node`](crate::StateGraph::add_node): it receives its input
/// by `Arc` and an owned [`Context`], so the future it returns can be `'static`.
/// In a graph with a context type, annotate the parameter as
/// `ctx: Context<UserCtx>` to read the typed value (an unannotated one is
/// ambiguous there).
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph::async_node_fn;
/// use std::sync::Arc;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct S { n: u32 }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), GraphError> {
/// let app = StateGraph::<S>::new()
///     .add_node(async_node_fn("fetch", |s: Arc<S>, _ctx| async move {
///         S::update().n(s.n + 1)
///     }))
///     .add_edge(START, "fetch")
///     .compile()?;
/// assert_eq!(app.invoke(S::update().n(1), &RunConfig::new()).await?.n, 2);
/// # Ok(())
/// # }
/// ```
pub fn async_node_fn<F, I, Fut, X: ?Sized>(
    name: impl Into<Cow<'static, str>>,
    f: F,
) -> FnNode<F, I, AsyncFn<Fut, X>>
where
    F: Fn(Arc<I>, Context<X>) -> Fut,
{
    FnNode::new(name.into(), f)
}

/// The closures [`node_fn`] takes: `Fn(&I) -> R` ([`InputOnly`]) or
/// `Fn(&I, &Context) -> R` ([`WithContext`]; `&Context<UserCtx>` to read the
/// typed context value of a graph whose context type is `UserCtx`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be made a node by `node_fn`",
    label = "expected `|input: &I| ..` or `|input: &I, ctx: &Context| ..`",
    note = "a node closure takes its input by reference (the state, or a `Send` payload), \
            optionally the `&Context`, and returns what a node may return; \
            for an async closure use `async_node_fn`"
)]
pub trait NodeClosure<I, M> {}

impl<F, I, R> NodeClosure<I, InputOnly> for F where F: Fn(&I) -> R {}

impl<F, I, R, X: ?Sized> NodeClosure<I, WithContext<X>> for F where F: Fn(&I, &Context<X>) -> R {}

/// Marker for closures taking only the input.
pub struct InputOnly;
/// Marker for closures taking the input and the [`Context`] (`Context<X>`).
pub struct WithContext<X: ?Sized = Untyped>(std::marker::PhantomData<fn(&X)>);
/// Marker for async closures taking the input by `Arc` and the [`Context`]
/// (`Context<X>`).
pub struct AsyncFn<Fut, X: ?Sized = Untyped>(
    std::marker::PhantomData<Fut>,
    std::marker::PhantomData<fn(&X)>,
);

impl<S, C, F, I, R> Node<S, C> for FnNode<F, I, InputOnly>
where
    S: State,
    C: ?Sized,
    F: Fn(&I) -> R + std::marker::Send + Sync + 'static,
    I: Any + std::marker::Send + Sync,
    R: IntoNodeOutput<S>,
{
    fn run(&self, input: Arc<I>, _ctx: Context<C>) -> NodeFuture<S> {
        NodeFuture::ready((self.f)(&input).into_output())
    }

    fn targets(&self) -> Targets {
        R::targets()
    }

    fn is_blocking(&self) -> bool {
        true
    }
}

impl<S, C, F, I, R, X> Node<S, C> for FnNode<F, I, WithContext<X>>
where
    S: State,
    C: ?Sized,
    X: ?Sized + 'static,
    F: Fn(&I, &Context<X>) -> R + std::marker::Send + Sync + 'static,
    I: Any + std::marker::Send + Sync,
    R: IntoNodeOutput<S>,
    Context<X>: FromContext<C>,
{
    fn run(&self, input: Arc<I>, ctx: Context<C>) -> NodeFuture<S> {
        NodeFuture::ready((self.f)(&input, &Context::<X>::from_context(ctx)).into_output())
    }

    fn targets(&self) -> Targets {
        R::targets()
    }

    fn is_blocking(&self) -> bool {
        true
    }
}

impl<S, C, F, I, Fut, R, X> Node<S, C> for FnNode<F, I, AsyncFn<Fut, X>>
where
    S: State,
    C: ?Sized,
    X: ?Sized + 'static,
    F: Fn(Arc<I>, Context<X>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = R> + std::marker::Send + 'static,
    I: Any + std::marker::Send + Sync,
    R: IntoNodeOutput<S>,
    Fut: 'static,
    Context<X>: FromContext<C>,
{
    fn run(&self, input: Arc<I>, ctx: Context<C>) -> NodeFuture<S> {
        let fut = (self.f)(input, Context::<X>::from_context(ctx));
        NodeFuture::new(async move { fut.await.into_output() })
    }

    fn targets(&self) -> Targets {
        R::targets()
    }
}

/// A closure usable as a node: `Fn(&I) -> R` or `Fn(&I, &Context) -> R`.
pub trait NodeFn<S: State, I, M>: std::marker::Send + Sync + 'static {}

impl<S, F, I, R> NodeFn<S, I, InputOnly> for F
where
    S: State,
    F: Fn(&I) -> R + std::marker::Send + Sync + 'static,
    R: IntoNodeOutput<S>,
{
}

impl<S, F, I, R, X: ?Sized> NodeFn<S, I, WithContext<X>> for F
where
    S: State,
    F: Fn(&I, &Context<X>) -> R + std::marker::Send + Sync + 'static,
    R: IntoNodeOutput<S>,
{
}

/// What a task hands its node: the state (PULL) or a `Send` payload (PUSH).
#[derive(Clone)]
pub(crate) enum TaskInput<S> {
    State(Arc<S>),
    Payload(Arc<dyn Any + std::marker::Send + Sync>),
}

/// A node with its types erased, as the compiled graph stores it.
pub(crate) trait ErasedNode<S: State>: std::marker::Send + Sync {
    fn call(&self, input: TaskInput<S>, ctx: Context) -> Result<NodeFuture<S>, NodeError>;
    fn input_type(&self) -> (TypeId, &'static str);
    /// Whether the node's PULL tasks read the state: its input is the state or a
    /// [`View`](crate::View) of it (otherwise it is reached only by `Send`).
    fn reads_state(&self) -> bool;
    /// The node's input made from `state` when it is a view of it (`None` when the
    /// node takes the state itself or a payload).
    fn project(&self, state: &S) -> Option<Arc<dyn Any + std::marker::Send + Sync>>;
    fn targets(&self) -> Targets;
    fn is_blocking(&self) -> bool;
    fn as_subgraph(&self) -> Option<&dyn ErasedSubgraph>;
    /// The cache key of `input`: xxh3-128 of its JSON form (`None` if it does not
    /// serialise).
    fn cache_key(&self, input: &TaskInput<S>) -> Option<u128>;
    /// Decodes a `Send` payload for this node from a checkpoint.
    fn decode_send(
        &self,
        name: Cow<'static, str>,
        payload: &Blob,
    ) -> Result<Send, serde_json::Error>;
}

/// A node of a graph whose context type is `C`.
pub(crate) struct NodeBox<N, C: ?Sized>(pub(crate) N, pub(crate) std::marker::PhantomData<fn(&C)>);

impl<S: State, C: ?Sized, N: Node<S, C>> ErasedNode<S> for NodeBox<N, C>
where
    N::Input: Serialize + DeserializeOwned,
{
    fn decode_send(
        &self,
        name: Cow<'static, str>,
        payload: &Blob,
    ) -> Result<Send, serde_json::Error> {
        let input: N::Input = payload.decode()?;
        Ok(Send::restored(
            name,
            Arc::new(input),
            self.input_type(),
            crate::command::encode_payload::<N::Input>,
        ))
    }

    fn call(&self, input: TaskInput<S>, ctx: Context) -> Result<NodeFuture<S>, NodeError> {
        let any: Arc<dyn Any + std::marker::Send + Sync> = match input {
            TaskInput::State(s) => s,
            TaskInput::Payload(p) => p,
        };
        match any.downcast::<N::Input>() {
            // The graph is `C`'s: its runs hold a `C`.
            Ok(input) => Ok(self.0.run(input, ctx.assume())),
            Err(_) => Err(NodeError::msg(format!(
                "node `{}` takes a `{}`, but its task was given a value of another type",
                self.0.name(),
                std::any::type_name::<N::Input>()
            ))),
        }
    }

    fn input_type(&self) -> (TypeId, &'static str) {
        (TypeId::of::<N::Input>(), std::any::type_name::<N::Input>())
    }

    fn reads_state(&self) -> bool {
        TypeId::of::<N::Input>() == TypeId::of::<S>()
            || N::projection().is_some_and(|p| p.state == TypeId::of::<S>())
    }

    fn project(&self, state: &S) -> Option<Arc<dyn Any + std::marker::Send + Sync>> {
        let projection = N::projection()?;
        let view = (projection.project)(state)?;
        Some(Arc::new(view))
    }

    fn targets(&self) -> Targets {
        self.0.targets()
    }

    fn is_blocking(&self) -> bool {
        self.0.is_blocking()
    }

    fn as_subgraph(&self) -> Option<&dyn ErasedSubgraph> {
        self.0.as_subgraph()
    }

    fn cache_key(&self, input: &TaskInput<S>) -> Option<u128> {
        let any: &(dyn Any + std::marker::Send + Sync) = match input {
            TaskInput::State(s) => &**s,
            TaskInput::Payload(p) => &**p,
        };
        let input = any.downcast_ref::<N::Input>()?;
        let mut hasher = crate::cache::KeyHasher::new();
        serde_json::to_writer(&mut hasher, input).ok()?;
        Some(hasher.finish())
    }
}

/// Type-erased access to the compiled graph of a [`Subgraph`](crate::Subgraph) node, for reading
/// state across namespaces. Implemented by `Subgraph` (`crate::subgraph`), above this module; not meant for other types.
#[doc(hidden)]
pub trait ErasedSubgraph: std::marker::Send + Sync {
    /// The `CompiledGraph<C>`, to downcast.
    fn graph_any(&self) -> &dyn Any;
    /// The name of the subgraph's state type.
    fn state_type_name(&self) -> &'static str;
    /// Where it keeps its checkpoints.
    fn checkpoints(&self) -> crate::config::SubgraphCheckpoints;
    /// Its own subgraph node named `node`.
    fn child(&self, node: &str) -> Option<&dyn ErasedSubgraph>;
    /// Its drawing, for the parent's drawing with the subgraph expanded.
    fn drawing(&self) -> Arc<crate::draw::Drawing>;
    /// Its snapshot (with its subgraphs') at `config`, `None` if it has none.
    fn snapshot(
        &self,
        saver: Arc<dyn crate::checkpoint::Checkpointer>,
        config: crate::config::RunConfig,
    ) -> futures::future::BoxFuture<
        '_,
        Result<Option<crate::snapshot::SubgraphSnapshot>, crate::error::GraphError>,
    >;
}
