//! The [`StateGraph`] builder and the [`CompiledGraph`] it compiles into.
//!
//! Builder calls never fail on their own: mistakes (an unknown node in an edge, a
//! duplicate name, a goto target that does not exist) are collected and reported
//! together by [`StateGraph::compile`].

mod batch;
mod build;
#[doc(hidden)]
pub mod declared;
pub(crate) mod draw;
mod edges;
mod schema;
mod shape;
mod validate;

pub use crate::branch::{BranchRoute, IntoRoutes, PathMap, RouterFn, RouterOutput};
pub use crate::draw::DrawOptions;
pub use app::{CompiledGraph, DefaultContext, GraphStream, GraphWithContext, IntoContext};
pub use batch::{BatchItem, BatchOptions};
pub use schema::WithOutput;
mod app;
pub use edges::{EdgeSources, IntoNodeName, Many, One};

use crate::branch::{BranchFn, Router};
use crate::checkpoint::Checkpointer;
use crate::context::{Context, Untyped};
use crate::error::GraphError;
use crate::interrupt::Breakpoints;
use crate::node::{
    ErasedNode, FnNode, IntoNodeOutput, IntoNodeSpec, Node, NodeBox, NodeFn, NodeSpec,
};
use crate::retry::RetryPolicy;
use crate::state::State;
use serde::{de::DeserializeOwned, Serialize};
use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

impl PathMap {
    /// Maps `key` to `target` (a node, a node name, or `END`), replacing an
    /// earlier entry for `key`.
    pub fn route<M>(mut self, key: impl Into<String>, target: impl IntoNodeName<M>) -> Self {
        self.insert(key.into(), target.node_name().into_owned());
        self
    }
}

/// Nodes for [`StateGraph::add_sequence`]: a tuple of nodes (each a `#[node]` fn or
/// node value), or an array / `Vec` of nodes of one type.
pub trait NodeSequence<S: State, M, C: ?Sized = Untyped> {
    /// Adds the nodes and the edges between them.
    fn add_to(self, graph: StateGraph<S, C>) -> StateGraph<S, C>;
}

impl<S, C, M, N, const K: usize> NodeSequence<S, Many<M>, C> for [N; K]
where
    S: State,
    C: ?Sized + 'static,
    N: IntoNodeSpec<M>,
    N::Spec: Node<S, C>,
    <N::Spec as NodeSpec>::Input: Serialize + DeserializeOwned,
{
    fn add_to(self, graph: StateGraph<S, C>) -> StateGraph<S, C> {
        Vec::from(self).add_to(graph)
    }
}

impl<S, C, M, N> NodeSequence<S, Many<M>, C> for Vec<N>
where
    S: State,
    C: ?Sized + 'static,
    N: IntoNodeSpec<M>,
    N::Spec: Node<S, C>,
    <N::Spec as NodeSpec>::Input: Serialize + DeserializeOwned,
{
    fn add_to(self, mut graph: StateGraph<S, C>) -> StateGraph<S, C> {
        let mut names = Vec::with_capacity(self.len());
        for node in self {
            let node = node.into_spec();
            names.push(node.name().into_owned());
            graph = graph.add_node(node);
        }
        graph.chain(&names)
    }
}

macro_rules! tuple_sequence {
    ($($n:ident $m:ident),+) => {
        impl<S: State, Cx: ?Sized + 'static, $($n, $m),+> NodeSequence<S, ($($m,)+), Cx> for ($($n,)+)
        where
            $(
                $n: IntoNodeSpec<$m>,
                $n::Spec: Node<S, Cx>,
                <$n::Spec as NodeSpec>::Input: Serialize + DeserializeOwned,
            )+
        {
            #[allow(non_snake_case)]
            fn add_to(self, mut graph: StateGraph<S, Cx>) -> StateGraph<S, Cx> {
                let ($($n,)+) = self;
                let mut names = Vec::new();
                $(
                    let node = $n.into_spec();
                    names.push(node.name().into_owned());
                    graph = graph.add_node(node);
                )+
                graph.chain(&names)
            }
        }
    };
}

tuple_sequence!(A MA, B MB);
tuple_sequence!(A MA, B MB, C MC);
tuple_sequence!(A MA, B MB, C MC, D MD);
tuple_sequence!(A MA, B MB, C MC, D MD, E ME);
tuple_sequence!(A MA, B MB, C MC, D MD, E ME, F MF);
tuple_sequence!(A MA, B MB, C MC, D MD, E ME, F MF, G MG);
tuple_sequence!(A MA, B MB, C MC, D MD, E ME, F MF, G MG, H MH);

/// A checkpointer value or a shared one (`Arc<dyn Checkpointer>`).
pub trait IntoCheckpointer {
    /// The shared checkpointer.
    fn into_checkpointer(self) -> Arc<dyn Checkpointer>;
}

impl<C: Checkpointer> IntoCheckpointer for C {
    fn into_checkpointer(self) -> Arc<dyn Checkpointer> {
        Arc::new(self)
    }
}

impl IntoCheckpointer for Arc<dyn Checkpointer> {
    fn into_checkpointer(self) -> Arc<dyn Checkpointer> {
        self
    }
}

/// What a graph is compiled with: a checkpointer and a node cache, as
/// LangGraph's `compile(checkpointer=.., cache=..)`. Given to
/// [`StateGraph::compile_with`]; a checkpointer alone converts into options.
#[derive(Clone, Default)]
#[must_use]
pub struct CompileOptions {
    saver: Option<Arc<dyn Checkpointer>>,
    cache: Option<Arc<dyn crate::cache::Cache>>,
    store: Option<Arc<dyn crate::store::Store>>,
}

impl CompileOptions {
    /// No checkpointer, no cache (what [`StateGraph::compile`] uses).
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores every run's checkpoints with `saver`.
    pub fn checkpointer(mut self, saver: impl IntoCheckpointer) -> Self {
        self.saver = Some(saver.into_checkpointer());
        self
    }

    /// Keeps the results of nodes with a [`CachePolicy`](crate::cache::CachePolicy)
    /// in `cache`: they reuse their earlier output for an input they have seen.
    pub fn cache(mut self, cache: impl crate::cache::Cache) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// Gives every node, router and subgraph of the graph `store`, the
    /// long-term memory shared across threads, through
    /// [`Context::store`](crate::Context::store) (LangGraph's
    /// `compile(store=..)`). Writes to it are not part of any checkpoint:
    /// time travel does not undo them.
    pub fn store(mut self, store: impl crate::store::IntoStore) -> Self {
        self.store = Some(store.into_store());
        self
    }
}

impl std::fmt::Debug for CompileOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompileOptions")
            .field("checkpointer", &self.saver.is_some())
            .field("cache", &self.cache.is_some())
            .field("store", &self.store.is_some())
            .finish()
    }
}

impl<C: IntoCheckpointer> From<C> for CompileOptions {
    fn from(saver: C) -> Self {
        CompileOptions::new().checkpointer(saver)
    }
}

/// Options of [`StateGraph::add_node_with`].
#[derive(Debug, Clone, Default)]
pub struct NodeOptions {
    name: Option<Cow<'static, str>>,
    defer: bool,
    retry: Option<RetryPolicy>,
    timeout: Option<std::time::Duration>,
    cache: Option<crate::cache::CachePolicy>,
}

impl NodeOptions {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the node under `name` instead of its own name.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Defers the node: it runs only when no other node would run (e.g. after every
    /// branch of a fan-out has finished), once.
    pub fn defer(mut self, defer: bool) -> Self {
        self.defer = defer;
        self
    }

    /// Re-runs the node when it fails, as `policy` says (overrides the graph's).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Caches the node's results by input (needs a cache on the compiled graph:
    /// [`CompiledGraph::with_cache`](crate::CompiledGraph::with_cache)).
    pub fn cache(mut self, policy: crate::cache::CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }

    /// Stops waiting for an attempt of the node that runs longer than `limit`:
    /// it fails with [`NodeTimeout`](crate::error::NodeTimeout), which the retry
    /// policy may retry. Needs a tokio runtime with its timer (as
    /// `#[tokio::main]` makes).
    ///
    /// An `async` node is cancelled: its future is dropped at the `.await` it
    /// waits on. A sync node (a plain `fn`) cannot be interrupted, only
    /// abandoned: with a timeout it runs on tokio's blocking pool
    /// (`spawn_blocking`), and past its limit the run goes on without it while
    /// the attempt finishes on its thread in the background — its side effects
    /// still happen (possibly while a retry runs), its result is discarded. Sync
    /// nodes without a timeout run inline, on the executor.
    pub fn timeout(mut self, limit: std::time::Duration) -> Self {
        self.timeout = Some(limit);
        self
    }
}

pub(crate) struct NodeDef<S: State> {
    pub(crate) name: String,
    pub(crate) runner: Arc<dyn ErasedNode<S>>,
    pub(crate) defer: bool,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) cache: Option<crate::cache::CachePolicy>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct EdgeDef {
    pub(crate) sources: Vec<String>,
    pub(crate) target: String,
}

pub(crate) struct BranchDef<S: State> {
    pub(crate) source: String,
    pub(crate) router: Arc<dyn Router<S>>,
}

/// A graph under construction, over the state type `S` and the context type
/// `C` (untyped unless declared with
/// [`with_context_schema`](Self::with_context_schema); see [`Context`]).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Doc { text: String }
///
/// #[node]
/// fn shout(doc: &Doc) -> DocUpdate { Doc::update().text(doc.text.to_uppercase()) }
///
/// let graph = StateGraph::<Doc>::new()
///     .add_node(shout)
///     .add_edge(START, shout)
///     .add_edge(shout, END)
///     .compile();
/// assert!(graph.is_ok());
/// ```
pub struct StateGraph<S: State, C: ?Sized = Untyped> {
    pub(crate) nodes: Vec<NodeDef<S>>,
    pub(crate) edges: Vec<EdgeDef>,
    pub(crate) branches: Vec<BranchDef<S>>,
    /// Mistakes found while building, reported by `compile()`.
    pub(crate) errors: Vec<crate::error::GraphProblem>,
    /// The retry policy of nodes without their own.
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) interrupt_before: Breakpoints,
    pub(crate) interrupt_after: Breakpoints,
    /// Run-time routes declared for the drawing: (source, targets).
    pub(crate) destinations: Vec<(String, Vec<String>)>,
    /// Whether new input is applied in the `input` checkpoint itself (see
    /// [`__input_at_input_step`](Self::__input_at_input_step)).
    pub(crate) direct_input: bool,
    /// The type of the context value its runs are given.
    context: std::marker::PhantomData<fn(&C)>,
}

impl<S: State> Default for StateGraph<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> StateGraph<S> {
    /// An empty graph, without a context type: its nodes read the context
    /// value of a run untyped (see [`with_context_schema`](Self::with_context_schema)).
    pub fn new() -> Self {
        Self::with_context_schema()
    }
}

impl<S: State, C: ?Sized + 'static> StateGraph<S, C> {
    /// An empty graph whose runs are each given a read-only value of type `C`
    /// (LangGraph's `StateGraph(State, context_schema=C)`): a user id, a
    /// database handle, settings. Its nodes and routers read it by taking
    /// `&Context<C>` ([`Context::context`](crate::Context::context)); a run
    /// gets it from [`CompiledGraph::with_context`].
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { model: String }
    ///
    /// #[derive(Default)]
    /// struct Settings { model: String }
    ///
    /// #[node]
    /// fn pick(_: &S, ctx: &Context<Settings>) -> SUpdate {
    ///     S::update().model(ctx.context().model.clone())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), GraphError> {
    /// let app = StateGraph::<S, Settings>::with_context_schema()
    ///     .add_node(pick)
    ///     .add_edge(START, pick)
    ///     .compile()?;
    /// let settings = Settings { model: "small".into() };
    /// let out = app.with_context(settings).invoke(S::update(), &RunConfig::new()).await?;
    /// assert_eq!(out.model, "small");
    /// // Without a value, the run reads `Settings::default()`.
    /// assert_eq!(app.invoke(S::update(), &RunConfig::new()).await?.model, "");
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_context_schema() -> Self {
        StateGraph {
            nodes: Vec::new(),
            edges: Vec::new(),
            branches: Vec::new(),
            errors: Vec::new(),
            retry: None,
            interrupt_before: Breakpoints::None,
            interrupt_after: Breakpoints::None,
            destinations: Vec::new(),
            direct_input: false,
            context: std::marker::PhantomData,
        }
    }

    /// Sets the retry policy of every node that has none of its own
    /// ([`NodeOptions::retry`]).
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// New input is applied in the run's `input` checkpoint itself, whose next
    /// step runs the nodes after `START`: a run stores one checkpoint less (no
    /// `loop` checkpoint with `__start__` done), and `values` streaming reports
    /// no state for the input. This is how LangGraph's Functional API runs an
    /// entrypoint (its node reads the input channel directly); the facade's
    /// `func::Entrypoint` sets it.
    #[doc(hidden)]
    pub fn __input_at_input_step(mut self) -> Self {
        self.direct_input = true;
        self
    }

    /// Every run stops before `nodes` run (a node, a name, or a tuple / array of
    /// them; `"*"` for every node): a static breakpoint. The checkpoint is stored
    /// and `invoke` returns with [`GraphOutput::breakpoint`](crate::GraphOutput)
    /// set; `invoke(None, ..)` continues (and does not stop at the same place
    /// twice). A run's `RunConfig::interrupt_before` replaces this.
    pub fn interrupt_before<M>(mut self, nodes: impl EdgeSources<M>) -> Self {
        self.interrupt_before = Self::breakpoint_set(nodes.source_names());
        self
    }

    /// Every run stops after `nodes` ran (see
    /// [`interrupt_before`](Self::interrupt_before)).
    pub fn interrupt_after<M>(mut self, nodes: impl EdgeSources<M>) -> Self {
        self.interrupt_after = Self::breakpoint_set(nodes.source_names());
        self
    }

    fn breakpoint_set(names: Vec<String>) -> Breakpoints {
        if names.iter().any(|n| n == "*") {
            Breakpoints::All
        } else {
            Breakpoints::Nodes(names)
        }
    }

    /// Caches the results of the node named `node` by input (for nodes added
    /// without options, e.g. closures); see
    /// [`NodeOptions::cache`]. An unknown name is reported by `compile()`.
    pub fn cache_policy<M>(
        mut self,
        node: impl IntoNodeName<M>,
        policy: crate::cache::CachePolicy,
    ) -> Self {
        let name = node.node_name();
        match self.nodes.iter_mut().find(|n| n.name == name) {
            Some(def) => def.cache = Some(policy),
            None => self
                .errors
                .push(crate::error::GraphProblem::UnknownCachePolicyNode {
                    node: name.into_owned(),
                }),
        }
        self
    }

    /// Adds a node under its own name: a `#[node]` fn, a closure made a node by
    /// [`node_fn`](crate::node_fn) / [`async_node_fn`](crate::async_node_fn), a
    /// [`Subgraph`](crate::Subgraph), or any [`Node`] value.
    pub fn add_node<M, N>(self, node: N) -> Self
    where
        N: IntoNodeSpec<M>,
        N::Spec: Node<S, C>,
        <N::Spec as NodeSpec>::Input: Serialize + DeserializeOwned,
    {
        self.add_node_with(node, NodeOptions::default())
    }

    /// Adds a node (anything [`add_node`](Self::add_node) takes) with options:
    /// another name, `defer`, a retry policy, a timeout, a cache policy.
    pub fn add_node_with<M, N>(mut self, node: N, options: NodeOptions) -> Self
    where
        N: IntoNodeSpec<M>,
        N::Spec: Node<S, C>,
        <N::Spec as NodeSpec>::Input: Serialize + DeserializeOwned,
    {
        let node = node.into_spec();
        let name = options.name.unwrap_or_else(|| node.name()).into_owned();
        self.nodes.push(NodeDef {
            name,
            runner: Arc::new(NodeBox::<_, C>(node, std::marker::PhantomData)),
            defer: options.defer,
            retry: options.retry,
            timeout: options.timeout,
            cache: options.cache,
        });
        self
    }

    /// Adds a closure as a node.
    #[doc(hidden)]
    #[deprecated(note = "use `add_node(node_fn(name, closure))`")]
    pub fn add_node_fn<I, M, F>(self, name: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        I: Any + std::marker::Send + Sync + Serialize + DeserializeOwned,
        M: 'static,
        F: NodeFn<S, I, M> + crate::node::NodeClosure<I, M>,
        FnNode<F, I, M>: Node<S, C> + NodeSpec<Input = I>,
    {
        self.add_node(crate::node::node_fn(name, f))
    }

    /// Adds an async closure as a node.
    #[doc(hidden)]
    #[deprecated(note = "use `add_node(async_node_fn(name, closure))`")]
    pub fn add_async_node_fn<I, F, Fut, R>(self, name: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        I: Any + std::marker::Send + Sync + Serialize + DeserializeOwned,
        F: Fn(Arc<I>, Context) -> Fut + std::marker::Send + Sync + 'static,
        Fut: Future<Output = R> + std::marker::Send + 'static,
        R: IntoNodeOutput<S>,
    {
        self.add_node(crate::node::async_node_fn(name, f))
    }

    /// Adds an edge: after every source has run, `target` runs.
    ///
    /// One source (`add_edge(a, b)`) triggers `b` each time `a` runs; several sources
    /// (`add_edge((a, b), c)`) make a join: `c` runs once all of them have run since
    /// its last run. Sources may be `START`; the target may be `END`.
    pub fn add_edge<M1, M2>(
        mut self,
        sources: impl EdgeSources<M1>,
        target: impl IntoNodeName<M2>,
    ) -> Self {
        self.edges.push(EdgeDef {
            sources: sources.source_names(),
            target: target.node_name().into_owned(),
        });
        self
    }

    /// Adds a conditional edge: after `source` runs, `router` reads the state (with
    /// `source`'s own writes applied) and returns where to go: a `#[derive(Goto)]`
    /// value, a node name, `Send`s, or a `Vec` of these — or a `Result` of one of
    /// these, whose `Err` fails the run
    /// ([`GraphError::RouterFailed`]). The router may take the task's
    /// [`Context`] as a second parameter, as a node does ([`RouterFn`]):
    /// `&Context<C>` reads the graph's typed context value.
    ///
    /// A `#[derive(Goto)]` enum is the recommended return type: `compile()`
    /// checks each variant's node exists and the drawing shows every edge. A
    /// router returning names as strings can be given a path map instead
    /// ([`add_conditional_edges_with`](Self::add_conditional_edges_with)).
    pub fn add_conditional_edges<M, N, F>(self, source: impl IntoNodeName<N>, router: F) -> Self
    where
        F: RouterFn<S, M, C>,
        M: 'static,
    {
        self.branch(source.node_name().into_owned(), router, None)
    }

    /// Adds a conditional edge whose router's results are looked up in
    /// `path_map` (LangGraph's `add_conditional_edges(source, path, path_map)`):
    /// the router returns a key, the edge goes to the node the key maps to.
    ///
    /// `compile()` checks that every target of the map exists (and, for a
    /// `#[derive(Goto)]` router, that every variant is a key); the drawing labels
    /// each edge with its key. A key the router returns that the map does not
    /// have fails the run with [`GraphError::UnmappedRoute`], naming the router
    /// and the key. `Send`s pass through unmapped.
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::PathMap;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct Draft { words: u32 }
    ///
    /// #[node]
    /// fn write(d: &Draft) -> DraftUpdate { Draft::update().words(d.words + 100) }
    /// #[node]
    /// fn publish(_: &Draft) {}
    ///
    /// fn long_enough(d: &Draft) -> &'static str {
    ///     if d.words >= 200 { "yes" } else { "no" }
    /// }
    ///
    /// let graph = StateGraph::<Draft>::new()
    ///     .add_node(write)
    ///     .add_node(publish)
    ///     .add_edge(START, write)
    ///     .add_conditional_edges_with(
    ///         write,
    ///         long_enough,
    ///         PathMap::from([("yes", "publish"), ("no", "write")]),
    ///     )
    ///     .compile();
    /// assert!(graph.is_ok());
    /// ```
    pub fn add_conditional_edges_with<M, N, F>(
        self,
        source: impl IntoNodeName<N>,
        router: F,
        path_map: impl Into<PathMap>,
    ) -> Self
    where
        F: RouterFn<S, M, C>,
        M: 'static,
    {
        self.branch(
            source.node_name().into_owned(),
            router,
            Some(path_map.into()),
        )
    }

    fn branch<M, F>(mut self, source: String, router: F, path_map: Option<PathMap>) -> Self
    where
        F: RouterFn<S, M, C>,
        M: 'static,
    {
        self.branches.push(BranchDef {
            source,
            router: Arc::new(BranchFn::<F, M, C>::new(router, path_map)),
        });
        self
    }

    /// Declares where `source` (a node, or `START` for its conditional edges) may
    /// route at run time, where its types cannot tell: the nodes its `Send`s
    /// start, or names its router returns as strings. `targets` is a node, a name,
    /// or a tuple / array of them.
    ///
    /// Like LangGraph's `destinations=`, this is only for the drawing, which
    /// shows these edges (labelled `Send` when the target takes a payload), and
    /// for `compile()`, which checks they exist; a run is not restricted to
    /// them. (A path map,
    /// [`add_conditional_edges_with`](Self::add_conditional_edges_with), does
    /// restrict its router: a name it does not map fails the run.)
    pub fn destinations<M1, M2>(
        mut self,
        source: impl IntoNodeName<M1>,
        targets: impl EdgeSources<M2>,
    ) -> Self {
        self.destinations
            .push((source.node_name().into_owned(), targets.source_names()));
        self
    }

    /// Adds `nodes` and chains them with edges, in order: `add_sequence((a, b, c))`
    /// adds the three nodes with the edges a → b → c (an array or `Vec` works for
    /// nodes of one type). An empty sequence is an error at `compile()`.
    pub fn add_sequence<M>(self, nodes: impl NodeSequence<S, M, C>) -> Self {
        nodes.add_to(self)
    }

    fn chain(mut self, names: &[String]) -> Self {
        if names.is_empty() {
            self.errors.push(crate::error::GraphProblem::EmptySequence);
        }
        for pair in names.windows(2) {
            self.edges.push(EdgeDef {
                sources: vec![pair[0].clone()],
                target: pair[1].clone(),
            });
        }
        self
    }

    /// Validates the graph and compiles it for running, with no checkpointer
    /// and no cache; see [`compile_with`](Self::compile_with) for those.
    ///
    /// Every problem found is reported in one [`GraphError::InvalidGraph`].
    pub fn compile(self) -> Result<CompiledGraph<S, C>, GraphError> {
        self.compile_with(CompileOptions::new())
    }

    /// Validates the graph and compiles it with `options`: a checkpointer, a
    /// node cache (LangGraph's `compile(checkpointer=.., cache=..)`). A saver
    /// alone converts into options:
    ///
    /// ```
    /// # use stategraph::prelude::*;
    /// # #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// # struct S { n: u32 }
    /// # #[node] fn step(_: &S) {}
    /// # let graph = || StateGraph::<S>::new().add_node(step).add_edge(START, step);
    /// use stategraph::cache::InMemoryCache;
    /// use stategraph::checkpoint::InMemorySaver;
    ///
    /// let app = graph().compile_with(InMemorySaver::new())?;
    /// let app = graph().compile_with(
    ///     CompileOptions::new()
    ///         .checkpointer(InMemorySaver::new())
    ///         .cache(InMemoryCache::new()),
    /// )?;
    /// # Ok::<(), GraphError>(())
    /// ```
    ///
    /// With a checkpointer, every run needs a thread (`RunConfig::thread(..)`),
    /// continues that thread's latest checkpoint, and can be inspected with
    /// `get_state` / `get_state_history`.
    pub fn compile_with(
        mut self,
        options: impl Into<CompileOptions>,
    ) -> Result<CompiledGraph<S, C>, GraphError> {
        let CompileOptions {
            saver,
            cache,
            store,
        } = options.into();
        let mut seen = hashbrown::HashSet::with_capacity(self.edges.len());
        self.edges.retain(|edge| seen.insert(edge.clone()));
        validate::validate(&self)?;
        let drawing = crate::draw::Drawing::of(&self);
        Ok(CompiledGraph::new(
            build::build(self),
            saver,
            cache,
            store,
            drawing,
        ))
    }
}
