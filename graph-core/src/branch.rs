//! Conditional edges: routers and what they may return ([`IntoRoutes`]).

use crate::command::{Destination, GotoTarget, Route, Send, Targets};
use crate::context::{Context, FromContext, Untyped};
use crate::error::NodeError;
use crate::node::{InputOnly, WithContext};
use crate::spec::GotoRoute;
use crate::state::State;
use std::borrow::Cow;

/// One destination chosen by a router.
#[derive(Debug, Clone)]
pub enum BranchRoute {
    /// The node with this name.
    Node(Cow<'static, str>),
    /// `END`.
    End,
    /// A PUSH task.
    Send(Send),
}

/// What a router of a conditional edge may return.
#[diagnostic::on_unimplemented(
    message = "a router cannot return `{Self}`",
    label = "not a routing result",
    note = "return a `#[derive(Goto)]` enum, a node name (`&'static str` / `String`), a `stategraph::Send`, or a `Vec` of one of these"
)]
pub trait IntoRoutes {
    /// Appends the chosen destinations.
    fn into_routes(self, out: &mut Vec<BranchRoute>);

    /// The destinations this type can produce.
    fn targets() -> Targets;

    /// The nodes its gotos name, for the compile-time checks of `graph!`
    /// (`None`: known only at run time).
    #[doc(hidden)]
    const ROUTES: Option<&'static [GotoRoute]> = None;
}

fn push_goto<G: GotoTarget>(g: &G, out: &mut Vec<BranchRoute>) {
    out.push(match g.destination() {
        Destination::End => BranchRoute::End,
        Destination::Node(n) => BranchRoute::Node(Cow::Owned(n.to_owned())),
    });
}

// Not recommended: a router returning `bool` is told "a router cannot return
// `bool`" with the list of what it can return, rather than that `bool` is not
// a `GotoTarget` with the list of every `#[derive(Goto)]` enum in scope.
#[diagnostic::do_not_recommend]
impl<G: GotoTarget> IntoRoutes for G {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        push_goto(&self, out);
    }

    fn targets() -> Targets {
        G::targets()
    }

    const ROUTES: Option<&'static [GotoRoute]> = G::ROUTES;
}

impl<G: GotoTarget> IntoRoutes for Vec<G> {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        for g in &self {
            push_goto(g, out);
        }
    }

    fn targets() -> Targets {
        G::targets()
    }

    const ROUTES: Option<&'static [GotoRoute]> = G::ROUTES;
}

impl IntoRoutes for Send {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        out.push(BranchRoute::Send(self));
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }

    // Its targets are declared with `-> send` in `graph!`.
    const ROUTES: Option<&'static [GotoRoute]> = Some(&[]);
}

impl IntoRoutes for Vec<Send> {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        out.extend(self.into_iter().map(BranchRoute::Send));
    }

    fn targets() -> Targets {
        Targets::Dynamic
    }

    // Its targets are declared with `-> send` in `graph!`.
    const ROUTES: Option<&'static [GotoRoute]> = Some(&[]);
}

impl<G: GotoTarget> IntoRoutes for Vec<Route<G>> {
    fn into_routes(self, out: &mut Vec<BranchRoute>) {
        for r in self {
            match r {
                Route::To(g) => push_goto(&g, out),
                Route::Send(s) => out.push(BranchRoute::Send(s)),
            }
        }
    }

    fn targets() -> Targets {
        match G::targets() {
            Targets::None => Targets::Dynamic,
            other => other,
        }
    }

    const ROUTES: Option<&'static [GotoRoute]> = G::ROUTES;
}

/// Marker for a router that returns its routes (see [`RouterOutput`]).
#[doc(hidden)]
pub struct Infallible;
/// Marker for a router that returns `Result<routes, E>` (see [`RouterOutput`]).
#[doc(hidden)]
pub struct Fallible;

/// What a router returns: its routes ([`IntoRoutes`]), or `Result` of them and
/// an error. An `Err` fails the run as a node's error does
/// ([`GraphError::RouterFailed`](crate::GraphError::RouterFailed)).
#[diagnostic::on_unimplemented(
    message = "a router cannot return `{Self}`",
    label = "not a routing result",
    note = "return a `#[derive(Goto)]` enum, a node name (`&'static str` / `String`), a `stategraph::Send`, a `Vec` of one of these, or a `Result` of one of these and an error"
)]
pub trait RouterOutput<M> {
    /// Appends the chosen destinations, or returns the router's error.
    #[doc(hidden)]
    fn into_route_result(self, out: &mut Vec<BranchRoute>) -> Result<(), NodeError>;

    /// The destinations the routes can name.
    #[doc(hidden)]
    fn route_targets() -> Targets;

    /// [`IntoRoutes::ROUTES`] of the routes.
    #[doc(hidden)]
    const ROUTES: Option<&'static [GotoRoute]> = None;
}

impl<R: IntoRoutes> RouterOutput<Infallible> for R {
    fn into_route_result(self, out: &mut Vec<BranchRoute>) -> Result<(), NodeError> {
        self.into_routes(out);
        Ok(())
    }

    fn route_targets() -> Targets {
        R::targets()
    }

    const ROUTES: Option<&'static [GotoRoute]> = R::ROUTES;
}

impl<R: IntoRoutes, E: Into<NodeError>> RouterOutput<Fallible> for Result<R, E> {
    fn into_route_result(self, out: &mut Vec<BranchRoute>) -> Result<(), NodeError> {
        self.map_err(Into::into)?.into_routes(out);
        Ok(())
    }

    fn route_targets() -> Targets {
        R::targets()
    }

    const ROUTES: Option<&'static [GotoRoute]> = R::ROUTES;
}

/// A router of a conditional edge: a fn or closure taking the state
/// (`Fn(&S) -> R`), or the state and the task's [`Context`]
/// (`Fn(&S, &Context) -> R`, or `Fn(&S, &Context<C>) -> R` to read the typed
/// context value of a graph whose context type is `C`), where `R` is its
/// routes or a `Result` of them ([`RouterOutput`]).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Job { tries: u32 }
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("gave up after {0} tries")]
/// struct GaveUp(u32);
///
/// #[node]
/// fn attempt(job: &Job) -> JobUpdate { Job::update().tries(job.tries + 1) }
///
/// let graph = StateGraph::<Job>::new()
///     .add_node(attempt)
///     .add_edge(START, attempt)
///     // The step and the run's config are at hand, and an error fails the run.
///     .add_conditional_edges(attempt, |job: &Job, ctx: &Context| {
///         if job.tries >= 3 {
///             return Err(GaveUp(job.tries));
///         }
///         Ok(if ctx.is_last_step() { END } else { "attempt" })
///     })
///     .compile();
/// assert!(graph.is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a router of a conditional edge",
    label = "not a router",
    note = "a router is `Fn(&State) -> R` or `Fn(&State, &Context) -> R` (`&Context<Ctx>` in a graph whose context type is `Ctx`), where `R` is a `#[derive(Goto)]` enum, a node name, a `Send`, a `Vec` of these, or a `Result` of one of these; annotate a closure's parameters (`|s: &MyState|`)"
)]
pub trait RouterFn<S: State, M, C: ?Sized = Untyped>: std::marker::Send + Sync + 'static {
    /// Runs the router; `ctx` makes the task's context when it needs one.
    #[doc(hidden)]
    fn call_router(
        &self,
        state: &S,
        ctx: &dyn Fn() -> Context<C>,
        out: &mut Vec<BranchRoute>,
    ) -> Result<(), NodeError>;

    /// The destinations the router's routes can name.
    #[doc(hidden)]
    fn router_targets() -> Targets;

    /// [`IntoRoutes::ROUTES`] of the routes.
    #[doc(hidden)]
    const ROUTES: Option<&'static [GotoRoute]> = None;
}

impl<S, C, F, R, M> RouterFn<S, (InputOnly, M), C> for F
where
    S: State,
    C: ?Sized,
    F: Fn(&S) -> R + std::marker::Send + Sync + 'static,
    R: RouterOutput<M>,
{
    fn call_router(
        &self,
        state: &S,
        _ctx: &dyn Fn() -> Context<C>,
        out: &mut Vec<BranchRoute>,
    ) -> Result<(), NodeError> {
        self(state).into_route_result(out)
    }

    fn router_targets() -> Targets {
        R::route_targets()
    }

    const ROUTES: Option<&'static [GotoRoute]> = R::ROUTES;
}

impl<S, C, F, R, M, X> RouterFn<S, (WithContext<X>, M), C> for F
where
    S: State,
    C: ?Sized,
    X: ?Sized,
    F: Fn(&S, &Context<X>) -> R + std::marker::Send + Sync + 'static,
    R: RouterOutput<M>,
    Context<X>: FromContext<C>,
{
    fn call_router(
        &self,
        state: &S,
        ctx: &dyn Fn() -> Context<C>,
        out: &mut Vec<BranchRoute>,
    ) -> Result<(), NodeError> {
        self(state, &Context::<X>::from_context(ctx())).into_route_result(out)
    }

    fn router_targets() -> Targets {
        R::route_targets()
    }

    const ROUTES: Option<&'static [GotoRoute]> = R::ROUTES;
}

/// A conditional edge's path map (LangGraph's `path_map`): the names a router
/// returns, each mapped to the node (or `END`) it stands for.
///
/// Given to [`StateGraph::add_conditional_edges_with`](crate::StateGraph::add_conditional_edges_with):
/// from pairs `[("key", "node"), ..]` (LangGraph's dict), from a list of node
/// names `["a", "b", END]` (LangGraph's list: each name maps to itself), or
/// built with [`route`](Self::route), which also takes `#[node]` fns. `compile()`
/// checks that every target exists; a name the router returns at run time that
/// is not a key fails the run
/// ([`GraphError::UnmappedRoute`](crate::GraphError::UnmappedRoute)), as
/// LangGraph raises `KeyError`. `Send`s pass through unmapped.
///
/// ```
/// use stategraph::PathMap;
/// use stategraph::END;
///
/// let map = PathMap::from([("yes", "publish"), ("no", END)]);
/// assert_eq!(map.get("yes"), Some("publish"));
/// assert_eq!(map.get("maybe"), None);
///
/// let list = PathMap::from(["publish", END]);
/// assert_eq!(list.get("publish"), Some("publish"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct PathMap {
    /// Key → target, in insertion order; a later entry for a key replaces it.
    entries: Vec<(String, String)>,
}

impl PathMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    // `route` (taking nodes as `add_edge` does) is in `graph`, beside `IntoNodeName`.

    pub(crate) fn insert(&mut self, key: String, target: String) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = target,
            None => self.entries.push((key, target)),
        }
    }

    /// The target `key` maps to.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, t)| t.as_str())
    }

    /// The `(key, target)` entries, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, t)| (k.as_str(), t.as_str()))
    }
}

impl<K: Into<String>, T: Into<String>, const N: usize> From<[(K, T); N]> for PathMap {
    fn from(pairs: [(K, T); N]) -> Self {
        pairs.into_iter().collect()
    }
}

impl<K: Into<String>, T: Into<String>> FromIterator<(K, T)> for PathMap {
    fn from_iter<I: IntoIterator<Item = (K, T)>>(pairs: I) -> Self {
        let mut map = PathMap::new();
        for (k, t) in pairs {
            map.insert(k.into(), t.into());
        }
        map
    }
}

impl<const N: usize> From<[&str; N]> for PathMap {
    /// Each name maps to itself (LangGraph's list form).
    fn from(names: [&str; N]) -> Self {
        names.into_iter().map(|n| (n, n)).collect()
    }
}

impl From<Vec<&str>> for PathMap {
    /// Each name maps to itself (LangGraph's list form).
    fn from(names: Vec<&str>) -> Self {
        names.into_iter().map(|n| (n, n)).collect()
    }
}

pub(crate) trait Router<S: State>: std::marker::Send + Sync {
    fn route(
        &self,
        state: &S,
        ctx: &dyn Fn() -> Context,
        out: &mut Vec<BranchRoute>,
    ) -> Result<(), NodeError>;
    fn targets(&self) -> Targets;
    /// The router's name: its fn's or closure's type name.
    fn name(&self) -> &'static str;
    fn path_map(&self) -> Option<&PathMap>;
}

/// A router of a graph whose context type is `C`.
pub(crate) struct BranchFn<F, M, C: ?Sized> {
    f: F,
    path_map: Option<PathMap>,
    _marker: std::marker::PhantomData<fn() -> M>,
    _context: std::marker::PhantomData<fn(&C)>,
}

impl<F, M, C: ?Sized> BranchFn<F, M, C> {
    pub(crate) fn new(f: F, path_map: Option<PathMap>) -> Self {
        BranchFn {
            f,
            path_map,
            _marker: std::marker::PhantomData,
            _context: std::marker::PhantomData,
        }
    }
}

impl<S, F, M, C> Router<S> for BranchFn<F, M, C>
where
    S: State,
    C: ?Sized,
    F: RouterFn<S, M, C>,
{
    fn route(
        &self,
        state: &S,
        ctx: &dyn Fn() -> Context,
        out: &mut Vec<BranchRoute>,
    ) -> Result<(), NodeError> {
        // The graph is `C`'s: its runs hold a `C`.
        self.f.call_router(state, &|| ctx().assume::<C>(), out)
    }

    fn targets(&self) -> Targets {
        F::router_targets()
    }

    fn name(&self) -> &'static str {
        std::any::type_name::<F>()
    }

    fn path_map(&self) -> Option<&PathMap> {
        self.path_map.as_ref()
    }
}
