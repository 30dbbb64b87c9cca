//! [`CompiledGraph`]: a validated graph, ready to `invoke` or `stream`.

use crate::checkpoint::{CheckpointConfig, CheckpointError, Checkpointer, ListOptions};
use crate::compiled::Graph;
use crate::config::RunConfig;
use crate::context::{RunContext, Untyped};
use crate::draw::{DrawOptions, Drawing};
use crate::error::{ConfigError, GraphError};
use crate::io::{GraphInput, GraphOutput};
use crate::pregel::{EventSink, Run};
use crate::snapshot::{NodeUpdate, StateSnapshot};
use crate::state::State;
use crate::stream::{StreamEvent, StreamModes};
use futures::Stream;
use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// A compiled graph. Cheap to clone; every clone runs the same graph.
///
/// `C` is the type of the context value its runs are given (untyped by
/// default; see [`with_context`](Self::with_context)).
pub struct CompiledGraph<S: State, C: ?Sized = Untyped> {
    pub(crate) graph: Arc<Graph<S>>,
    pub(crate) saver: Option<Arc<dyn Checkpointer>>,
    drawing: Arc<Drawing>,
    /// A view of a subgraph: its state is read in the namespace of the config.
    namespaced: bool,
    /// Where nodes with a cache policy keep their results.
    pub(crate) cache: Option<Arc<dyn crate::cache::Cache>>,
    /// The type of the context value its runs are given.
    context: PhantomData<fn(&C)>,
    /// The long-term memory nodes reach through their context.
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
    /// The state each recently run thread was left at, which its next run
    /// starts from instead of decoding the checkpoint again.
    warm: Arc<crate::pregel::WarmStates<S>>,
}

impl<S: State, C: ?Sized> Clone for CompiledGraph<S, C> {
    fn clone(&self) -> Self {
        CompiledGraph {
            graph: Arc::clone(&self.graph),
            saver: self.saver.clone(),
            drawing: Arc::clone(&self.drawing),
            namespaced: self.namespaced,
            cache: self.cache.clone(),
            context: PhantomData,
            store: self.store.clone(),
            warm: Arc::clone(&self.warm),
        }
    }
}

impl<S: State, C: ?Sized + 'static> std::fmt::Debug for CompiledGraph<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.node_names().collect::<Vec<_>>())
            .finish()
    }
}

/// A context type whose runs may be given no value: an untyped graph's (its
/// nodes then read `()`), or a type with a `Default` (they read its default,
/// as LangGraph's nodes read `None`).
#[diagnostic::on_unimplemented(
    message = "every run of a graph whose context type is `{Self}` needs a context value",
    label = "this runs the graph without one",
    note = "give the run its value: `app.with_context(value).invoke(..)` (also `.stream`, `.batch`, `.update_state`)",
    note = "or implement `Default` for `{Self}`, or make the context type an `Option`, for runs that are given none"
)]
pub trait DefaultContext {
    /// The context value of a run given none.
    #[doc(hidden)]
    fn default_context() -> Option<Arc<Untyped>>;
}

// Reported as a missing `DefaultContext` (whose message says what to do)
// rather than a missing `Default`.
#[diagnostic::do_not_recommend]
impl<C: Default + Send + Sync + 'static> DefaultContext for C {
    fn default_context() -> Option<Arc<Untyped>> {
        Some(Arc::new(C::default()))
    }
}

impl DefaultContext for Untyped {
    fn default_context() -> Option<Arc<Untyped>> {
        None
    }
}

/// A value that may be the context value of a graph whose context type is `C`:
/// a `C`, or any value for an untyped graph (whose nodes read it as `&dyn Any`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a context value of a graph whose context type is `{C}`",
    label = "expected a `{C}`",
    note = "a graph built with `StateGraph::<State, {C}>::with_context_schema()` takes a `{C}`"
)]
pub trait IntoContext<C: ?Sized> {
    /// The value, shared by the run's tasks.
    #[doc(hidden)]
    fn into_context(self) -> Arc<Untyped>;
}

impl<C: Any + Send + Sync> IntoContext<C> for C {
    fn into_context(self) -> Arc<Untyped> {
        Arc::new(self)
    }
}

impl<V: Any + Send + Sync> IntoContext<Untyped> for V {
    fn into_context(self) -> Arc<Untyped> {
        Arc::new(self)
    }
}

impl<S: State, C: ?Sized + 'static> CompiledGraph<S, C> {
    pub(crate) fn new(
        graph: Graph<S>,
        saver: Option<Arc<dyn Checkpointer>>,
        cache: Option<Arc<dyn crate::cache::Cache>>,
        store: Option<Arc<dyn crate::store::Store>>,
        drawing: Drawing,
    ) -> Self {
        CompiledGraph {
            graph: Arc::new(graph),
            saver,
            drawing: Arc::new(drawing),
            namespaced: false,
            cache,
            store,
            context: PhantomData,
            warm: Arc::default(),
        }
    }

    /// Runs of this graph given the context value `context` (LangGraph's
    /// `invoke(.., context=..)`): every node and router of the run, and of the
    /// subgraphs it runs, reads it with
    /// [`Context::context`](crate::Context::context). The value is read-only
    /// and never stored in a checkpoint: a run that resumes a thread reads the
    /// value of the call that resumes it.
    ///
    /// A run given no value (plain [`invoke`](Self::invoke)) reads `C::default()`
    /// (`()` for an untyped graph); a context type without a `Default` needs a
    /// value for every run.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { greeting: String }
    ///
    /// struct User { name: String }
    ///
    /// #[node]
    /// fn greet(_: &S, ctx: &Context<User>) -> SUpdate {
    ///     S::update().greeting(format!("hi {}", ctx.context().name))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), GraphError> {
    /// let app = StateGraph::<S, User>::with_context_schema()
    ///     .add_node(greet)
    ///     .add_edge(START, greet)
    ///     .compile()?;
    /// let ada = User { name: "Ada".into() };
    /// let out = app.with_context(ada).invoke(S::update(), &RunConfig::new()).await?;
    /// assert_eq!(out.greeting, "hi Ada");
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_context(&self, context: impl IntoContext<C>) -> GraphWithContext<'_, S, C> {
        GraphWithContext {
            graph: self,
            context: Some(context.into_context()),
        }
    }

    /// The store the graph was compiled with
    /// ([`CompileOptions::store`](crate::CompileOptions::store)).
    pub fn store(&self) -> Option<&Arc<dyn crate::store::Store>> {
        self.store.as_ref()
    }

    /// This graph with `cache`.
    #[doc(hidden)]
    #[deprecated(note = "compile with `CompileOptions::new().cache(..)` instead")]
    pub fn with_cache(&self, cache: impl crate::cache::Cache) -> Self {
        CompiledGraph {
            cache: Some(Arc::new(cache)),
            ..self.clone()
        }
    }

    /// Drops the cached results of `nodes` (all nodes when `None`).
    pub fn clear_cache(&self, nodes: Option<&[&str]>) -> Result<(), GraphError> {
        let Some(cache) = &self.cache else {
            return Err(GraphError::InvalidConfig(ConfigError::NoCache));
        };
        cache.clear(nodes);
        Ok(())
    }

    /// This graph with `saver`, reading and updating state in the namespace its
    /// configs name: how to inspect a graph that ran nested in a node
    /// ([`invoke_nested`](Self::invoke_nested)) with the caller's saver. For a
    /// [`Subgraph`](crate::Subgraph) node, [`subgraph_at`](Self::subgraph_at)
    /// finds the graph for you.
    ///
    /// To give a graph a saver for running, compile it with one
    /// ([`StateGraph::compile_with`](crate::StateGraph::compile_with)).
    pub fn subgraph_view(&self, saver: impl crate::graph::IntoCheckpointer) -> Self {
        CompiledGraph {
            saver: Some(saver.into_checkpointer()),
            namespaced: true,
            ..self.clone()
        }
    }

    /// This graph with `saver`, as a subgraph view.
    #[doc(hidden)]
    #[deprecated(
        note = "use `subgraph_view(saver)`; to run with a saver, use `compile_with(saver)`"
    )]
    pub fn with_checkpointer(&self, saver: impl crate::graph::IntoCheckpointer) -> Self {
        self.subgraph_view(saver)
    }

    /// The subgraph whose checkpoints live at namespace `ns` (a task's
    /// `checkpoint_ns` such as `inner:<task id>`, or deeper `a:<id>|b:<id>`),
    /// typed by its state `C` and bound to this graph's saver: read its state,
    /// history, or update it there.
    ///
    /// Errors when no [`Subgraph`](crate::Subgraph) node of this graph (and of its
    /// subgraphs, level by level) matches the namespace's node names, or when its
    /// state is not `T`. The view has this graph's context type (a subgraph
    /// runs with its parent's context value).
    pub fn subgraph_at<T: State>(&self, ns: &str) -> Result<CompiledGraph<T, C>, GraphError> {
        let saver = self
            .saver
            .clone()
            .ok_or(GraphError::NoCheckpointer("subgraph_at"))?;
        let found = self.find_subgraph(ns)?;
        let any = found.graph_any();
        let graph = match any.downcast_ref::<CompiledGraph<T, C>>() {
            Some(graph) => graph.clone(),
            // An untyped subgraph reads no typed context: it runs with any.
            None => match any.downcast_ref::<CompiledGraph<T>>() {
                Some(graph) => graph.retyped(),
                None => {
                    return Err(GraphError::InvalidConfig(ConfigError::SubgraphState {
                        namespace: ns.to_owned(),
                        found: found.state_type_name(),
                        expected: std::any::type_name::<T>(),
                    }))
                }
            },
        };
        Ok(graph.subgraph_view(saver))
    }

    fn find_subgraph(&self, ns: &str) -> Result<&dyn crate::node::ErasedSubgraph, GraphError> {
        let namespace = crate::stream::Namespace::parse(ns);
        let path = namespace.nodes();
        let not_found = || {
            let subgraphs = self
                .graph
                .nodes
                .iter()
                .filter(|n| n.runner.as_ref().is_some_and(|r| r.as_subgraph().is_some()))
                .map(|n| n.name.to_string())
                .collect();
            GraphError::InvalidConfig(ConfigError::SubgraphNotFound {
                namespace: ns.to_owned(),
                subgraphs,
            })
        };
        let (first, rest) = path.split_first().ok_or_else(not_found)?;
        let mut current = self
            .graph
            .node_by_name
            .get(*first)
            .and_then(|&i| self.graph.nodes[i].runner.as_ref())
            .and_then(|r| r.as_subgraph())
            .ok_or_else(not_found)?;
        for name in rest {
            current = current.child(name).ok_or_else(not_found)?;
        }
        Ok(current)
    }

    /// A namespace in `config` addresses a subgraph: only a subgraph view reads it.
    fn check_namespace(&self, config: &RunConfig) -> Result<(), GraphError> {
        let ns = config.checkpoint_ns();
        if ns.is_empty() || self.namespaced {
            return Ok(());
        }
        let found = self.find_subgraph(ns)?;
        Err(GraphError::InvalidConfig(ConfigError::SubgraphNamespace {
            namespace: ns.to_owned(),
            state_type: found.state_type_name(),
        }))
    }

    /// The graph as a Mermaid flowchart: static edges solid, conditional edges and
    /// `Command` gotos dotted (their targets come from the `#[derive(Goto)]` types),
    /// and so are the run-time routes declared with
    /// [`StateGraph::destinations`](crate::StateGraph::destinations) (labelled
    /// `Send` into a node that takes a payload). Subgraphs are single nodes; see
    /// [`draw_mermaid_with`](Self::draw_mermaid_with) to expand them.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { n: u32 }
    ///
    /// #[derive(Goto, Clone, Copy, Debug)]
    /// enum Next { Tools, #[goto(end)] Done }
    ///
    /// #[node]
    /// fn agent(_: &S) -> Command<Next> { Command::goto(Next::Done) }
    /// #[node]
    /// fn tools(_: &S) {}
    ///
    /// let app = StateGraph::<S>::new()
    ///     .add_node(agent)
    ///     .add_node(tools)
    ///     .add_edge(START, agent)
    ///     .add_edge(tools, agent)
    ///     .compile()
    ///     .unwrap();
    /// let chart = app.draw_mermaid();
    /// assert!(chart.contains("agent -.-> tools;"));
    /// assert!(chart.contains("agent -.-> __end__;"));
    /// assert!(chart.contains("tools --> agent;"));
    /// ```
    pub fn draw_mermaid(&self) -> String {
        self.drawing.mermaid(&DrawOptions::new())
    }

    /// The graph in Graphviz DOT (`dot -Tpng`), with the same edges as
    /// [`draw_mermaid`](Self::draw_mermaid).
    pub fn draw_dot(&self) -> String {
        self.drawing.dot(&DrawOptions::new())
    }

    /// [`draw_mermaid`](Self::draw_mermaid) with options: subgraph nodes
    /// expanded with [`DrawOptions::xray`].
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::{DrawOptions, Subgraph};
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { n: u32 }
    ///
    /// let child = StateGraph::<S>::new()
    ///     .add_node(node_fn("search", |_: &S| ()))
    ///     .add_edge(START, "search")
    ///     .compile()
    ///     .unwrap();
    /// let app = StateGraph::<S>::new()
    ///     .add_node(Subgraph::new("research", child))
    ///     .add_edge(START, "research")
    ///     .compile()
    ///     .unwrap();
    ///
    /// assert!(app.draw_mermaid().contains("research[\"research\"]"));
    /// let chart = app.draw_mermaid_with(&DrawOptions::new().xray(1));
    /// assert!(chart.contains("subgraph research [\"research\"]"));
    /// assert!(chart.contains("__start__ --> research___start__;"));
    /// assert!(chart.contains("research___start__ --> research_search;"));
    /// ```
    pub fn draw_mermaid_with(&self, options: &DrawOptions) -> String {
        self.drawing.mermaid(options)
    }

    /// [`draw_dot`](Self::draw_dot) with options: subgraph nodes expanded
    /// (as `cluster_<node>` subgraphs) with [`DrawOptions::xray`].
    pub fn draw_dot_with(&self, options: &DrawOptions) -> String {
        self.drawing.dot(options)
    }

    /// The graph as LangGraph's `get_graph().to_json()` gives it (what
    /// LangGraph Server's `/assistants/{id}/graph` returns): `{"nodes": [{"id",
    /// "type", "data"}], "edges": [{"source", "target", "conditional"}]}`, with
    /// the same edges as [`draw_mermaid`](Self::draw_mermaid); subgraph nodes
    /// are not expanded.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { n: u32 }
    ///
    /// let app = StateGraph::<S>::new()
    ///     .add_node(node_fn("step", |_: &S| ()))
    ///     .add_edge(START, "step")
    ///     .compile()
    ///     .unwrap();
    /// let json = app.draw_json();
    /// assert_eq!(json["nodes"][1]["id"], "step");
    /// assert_eq!(json["edges"][0], stategraph::json!({"source": "__start__", "target": "step"}));
    /// ```
    pub fn draw_json(&self) -> serde_json::Value {
        self.drawing.json()
    }

    /// [`draw_json`](Self::draw_json) with subgraph nodes expanded by
    /// [`DrawOptions::xray`], as LangGraph's `get_graph(xray=…).to_json()`
    /// (LangGraph Server's `/assistants/{id}/graph?xray=true`): a child's
    /// nodes are named `<node>:<child node>`; its own `__start__` and
    /// `__end__` are left out, the parent's edges joined to its first and last
    /// nodes.
    ///
    /// ```
    /// use stategraph::prelude::*;
    /// use stategraph::{DrawOptions, Subgraph};
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct S { n: u32 }
    ///
    /// let child = StateGraph::<S>::new()
    ///     .add_node(node_fn("search", |_: &S| ()))
    ///     .add_node(node_fn("summarize", |_: &S| ()))
    ///     .add_edge(START, "search")
    ///     .add_edge("search", "summarize")
    ///     .compile()
    ///     .unwrap();
    /// let app = StateGraph::<S>::new()
    ///     .add_node(Subgraph::new("research", child))
    ///     .add_node(node_fn("write", |_: &S| ()))
    ///     .add_edge(START, "research")
    ///     .add_edge("research", "write")
    ///     .compile()
    ///     .unwrap();
    ///
    /// let json = app.draw_json_with(&DrawOptions::new().xray(usize::MAX));
    /// let edges = json["edges"].as_array().unwrap();
    /// // LangGraph 1.2.22, the same graph: __start__ -> research:search,
    /// // research:search -> research:summarize, research:summarize -> write,
    /// // write -> __end__.
    /// for (from, to) in [
    ///     ("__start__", "research:search"),
    ///     ("research:search", "research:summarize"),
    ///     ("research:summarize", "write"),
    ///     ("write", "__end__"),
    /// ] {
    ///     assert!(edges.contains(&stategraph::json!({"source": from, "target": to})), "{from} -> {to}");
    /// }
    /// assert_eq!(edges.len(), 4);
    /// ```
    pub fn draw_json_with(&self, options: &DrawOptions) -> serde_json::Value {
        self.drawing.json_with(options)
    }

    /// What the drawing of a graph that uses this one as a subgraph needs.
    pub(crate) fn drawing(&self) -> Arc<Drawing> {
        Arc::clone(&self.drawing)
    }

    /// The graph's checkpointer, if it was compiled with one.
    pub fn checkpointer(&self) -> Option<&Arc<dyn Checkpointer>> {
        self.saver.as_ref()
    }

    /// The names of the graph's nodes, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.graph.nodes.iter().skip(1).map(|n| &*n.name)
    }

    /// Runs the graph from `input` until no node is triggered, or until it pauses
    /// at an interrupt or a breakpoint; returns the state (the output dereferences
    /// to it) with the pending interrupts.
    ///
    /// `input` is the state's update type (`S::update()...`); `None` continues the
    /// thread from its checkpoint (an error on a fresh thread); a
    /// [`Command`](crate::Command) resumes an interrupt (`Command::resume`),
    /// updates the state and routes.
    ///
    /// The run is given no context value: its nodes read `C::default()`; see
    /// [`with_context`](Self::with_context).
    ///
    /// Private fields (`#[state(private)]`) are not part of the input or the
    /// output: they are not written from `input`, and the returned state holds
    /// their default values (`get_state` and `values` events show them).
    pub async fn invoke(
        &self,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
    ) -> Result<GraphOutput<S>, GraphError>
    where
        C: DefaultContext,
    {
        self.invoke_in(C::default_context(), input.into(), config)
            .await
    }

    /// [`invoke`](Self::invoke) with the run's context value.
    pub(crate) async fn invoke_in(
        &self,
        context: RunContext,
        input: GraphInput<S>,
        config: &RunConfig,
    ) -> Result<GraphOutput<S>, GraphError> {
        let mut out = self.run_to_end(context, input, config).await?;
        if !S::PRIVATE_FIELDS.is_empty() {
            out.state.clear_private();
        }
        Ok(out)
    }

    /// [`invoke_in`](Self::invoke_in) with the private fields as the run left
    /// them.
    pub(crate) async fn run_to_end(
        &self,
        context: RunContext,
        input: GraphInput<S>,
        config: &RunConfig,
    ) -> Result<GraphOutput<S>, GraphError> {
        let mut run = Run::new(
            Arc::clone(&self.graph),
            config.clone(),
            None,
            self.saver.clone(),
        )?;
        run.with_cache(self.cache.clone())
            .with_warm(&self.warm)
            .with_context(context)
            .with_store(self.store.clone());
        let out = run.run(input).await?;
        Ok(GraphOutput {
            state: Arc::try_unwrap(out.state).unwrap_or_else(|shared| (*shared).clone()),
            interrupts: out.interrupts,
            breakpoint: out.breakpoint,
        })
    }

    /// The state of a thread: its latest checkpoint (or the one `config` names),
    /// with what runs next. An unknown thread gives an empty snapshot.
    pub async fn get_state(&self, config: &RunConfig) -> Result<StateSnapshot<S>, GraphError> {
        let saver = self
            .saver
            .as_ref()
            .ok_or(GraphError::NoCheckpointer("get_state"))?;
        self.check_namespace(config)?;
        let target = Self::target(config)?;
        let run = Run::at_namespace(Arc::clone(&self.graph), config.clone(), None)?;
        match saver.get_tuple(&target).await? {
            Some(tuple) => run.snapshot_of(&tuple, target.checkpoint_id.is_none()),
            None => match &target.checkpoint_id {
                Some(id) => Err(GraphError::Checkpoint(CheckpointError::NotFound {
                    thread_id: target.thread_id.to_string(),
                    checkpoint_ns: target.checkpoint_ns.to_string(),
                    checkpoint_id: id.to_string(),
                })),
                None => Ok(StateSnapshot {
                    values: S::default(),
                    next: Vec::new(),
                    config: target,
                    metadata: None,
                    created_at: None,
                    parent_config: None,
                    tasks: Vec::new(),
                    interrupts: Vec::new(),
                }),
            },
        }
    }

    /// Creates a new checkpoint as if node `as_node` had returned `values` (its
    /// edges and conditional edges fire as well), on top of the checkpoint `config`
    /// addresses (or the thread's latest). Without `as_node`, the update is
    /// attributed to the node that ran last. `as_node = Some("__copy__")` copies
    /// the checkpoint unchanged as a fork. Returns the new checkpoint's config; run
    /// from it with `invoke(None, ..)` (time travel).
    ///
    /// Two more special nodes: `END` marks the pending step as done (tasks that
    /// completed keep their writes, the others are dropped: `next` becomes empty);
    /// `"__input__"` treats `values` as new graph input (`__start__` is next).
    ///
    /// The conditional edges that fire read `C::default()` as the context
    /// value; see [`with_context`](Self::with_context).
    pub async fn update_state(
        &self,
        config: &RunConfig,
        values: impl Into<Option<S::Update>>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig, GraphError>
    where
        C: DefaultContext,
    {
        self.update_state_in(C::default_context(), config, values.into(), as_node)
            .await
    }

    pub(crate) async fn update_state_in(
        &self,
        context: RunContext,
        config: &RunConfig,
        values: Option<S::Update>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig, GraphError> {
        let saver = self
            .saver
            .clone()
            .ok_or(GraphError::NoCheckpointer("update_state"))?;
        self.check_namespace(config)?;
        let mut run = Run::at_namespace(Arc::clone(&self.graph), config.clone(), Some(saver))?;
        run.with_context(context);
        run.update_state(values, as_node).await
    }

    /// Several `update_state`s, one checkpoint per superstep: each inner list is
    /// applied together (as_node required when it has more than one update).
    pub async fn bulk_update_state(
        &self,
        config: &RunConfig,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError>
    where
        C: DefaultContext,
    {
        self.bulk_update_state_in(C::default_context(), config, supersteps)
            .await
    }

    pub(crate) async fn bulk_update_state_in(
        &self,
        context: RunContext,
        config: &RunConfig,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError> {
        let saver = self
            .saver
            .clone()
            .ok_or(GraphError::NoCheckpointer("bulk_update_state"))?;
        self.check_namespace(config)?;
        let mut run = Run::at_namespace(Arc::clone(&self.graph), config.clone(), Some(saver))?;
        run.with_context(context);
        run.bulk_update_state(supersteps).await
    }

    /// Every checkpoint of a thread, newest first (filter, `before` and `limit` in
    /// `options`), each as a snapshot without pending writes applied.
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let saver = self
            .saver
            .as_ref()
            .ok_or(GraphError::NoCheckpointer("get_state_history"))?;
        self.check_namespace(config)?;
        let mut target = Self::target(config)?;
        target.checkpoint_id = None;
        let tuples = saver.list(Some(&target), options).await?;
        tuples
            .iter()
            .map(|tuple| {
                Run::at_namespace(Arc::clone(&self.graph), config.clone(), None)?
                    .snapshot_of(tuple, false)
            })
            .collect()
    }

    fn target(config: &RunConfig) -> Result<CheckpointConfig, GraphError> {
        let Some(thread_id) = config.shared_thread_id() else {
            return Err(GraphError::InvalidConfig(ConfigError::NoThreadToRead));
        };
        Ok(CheckpointConfig {
            thread_id: thread_id.clone(),
            checkpoint_ns: config.shared_checkpoint_ns().clone(),
            checkpoint_id: config.shared_checkpoint_id().cloned(),
        })
    }

    /// Runs the graph, reporting the events of `modes` as they happen.
    ///
    /// The run advances only while the stream is polled. An error ends the stream
    /// after the events that preceded it. The run is given no context value
    /// (see [`with_context`](Self::with_context)).
    pub fn stream(
        &self,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
        modes: impl Into<StreamModes>,
    ) -> GraphStream<S>
    where
        C: DefaultContext,
    {
        self.stream_in(C::default_context(), input.into(), config, modes.into())
    }

    pub(crate) fn stream_in(
        &self,
        context: RunContext,
        input: GraphInput<S>,
        config: &RunConfig,
        modes: StreamModes,
    ) -> GraphStream<S> {
        let (tx, rx) = unbounded_channel();
        let sink = EventSink::to_stream(modes, tx);
        let graph = Arc::clone(&self.graph);
        let config = config.clone();
        let saver = self.saver.clone();
        let cache = self.cache.clone();
        let store = self.store.clone();
        let warm = Arc::clone(&self.warm);
        let run = async move {
            let mut run = Run::new(graph, config, Some(sink), saver)?;
            run.with_cache(cache)
                .with_warm(&warm)
                .with_context(context)
                .with_store(store);
            run.run(input).await.map(drop)
        };
        GraphStream {
            run: Some(Box::pin(run)),
            rx,
            error: None,
        }
    }
}

impl<S: State> CompiledGraph<S> {
    /// This untyped graph as one of context type `D`: its nodes and routers
    /// read no typed context value, so it runs with any.
    fn retyped<D: ?Sized>(&self) -> CompiledGraph<S, D> {
        CompiledGraph {
            graph: Arc::clone(&self.graph),
            saver: self.saver.clone(),
            drawing: Arc::clone(&self.drawing),
            namespaced: self.namespaced,
            cache: self.cache.clone(),
            store: self.store.clone(),
            context: PhantomData,
            warm: Arc::clone(&self.warm),
        }
    }
}

/// A compiled graph with the context value of its runs, made by
/// [`CompiledGraph::with_context`]: its methods run the graph as the graph's
/// own do, each run reading the value.
pub struct GraphWithContext<'g, S: State, C: ?Sized> {
    graph: &'g CompiledGraph<S, C>,
    context: RunContext,
}

impl<S: State, C: ?Sized> Clone for GraphWithContext<'_, S, C> {
    fn clone(&self) -> Self {
        GraphWithContext {
            graph: self.graph,
            context: self.context.clone(),
        }
    }
}

impl<S: State, C: ?Sized + 'static> std::fmt::Debug for GraphWithContext<'_, S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphWithContext")
            .field("graph", self.graph)
            .field("context", &std::any::type_name::<C>())
            .finish_non_exhaustive()
    }
}

impl<S: State, C: ?Sized + 'static> GraphWithContext<'_, S, C> {
    /// [`CompiledGraph::invoke`] with the context value.
    pub async fn invoke(
        &self,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
    ) -> Result<GraphOutput<S>, GraphError> {
        self.graph
            .invoke_in(self.context.clone(), input.into(), config)
            .await
    }

    /// [`CompiledGraph::stream`] with the context value.
    pub fn stream(
        &self,
        input: impl Into<GraphInput<S>>,
        config: &RunConfig,
        modes: impl Into<StreamModes>,
    ) -> GraphStream<S> {
        self.graph
            .stream_in(self.context.clone(), input.into(), config, modes.into())
    }

    /// [`CompiledGraph::batch`] with the context value, shared by the runs.
    pub async fn batch<I>(
        &self,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: super::BatchOptions,
    ) -> Vec<Result<GraphOutput<S>, GraphError>>
    where
        I: Into<GraphInput<S>>,
    {
        self.graph
            .batch_in(self.context.clone(), runs, options)
            .await
    }

    /// [`CompiledGraph::batch_stream`] with the context value, shared by the
    /// runs.
    pub fn batch_stream<I>(
        &self,
        runs: impl IntoIterator<Item = (I, RunConfig)>,
        options: super::BatchOptions,
    ) -> impl Stream<Item = super::BatchItem<S>> + Send + Unpin + 'static
    where
        I: Into<GraphInput<S>>,
    {
        self.graph
            .batch_stream_in(self.context.clone(), runs, options)
    }

    /// [`CompiledGraph::update_state`] with the context value, which the
    /// conditional edges that fire read.
    pub async fn update_state(
        &self,
        config: &RunConfig,
        values: impl Into<Option<S::Update>>,
        as_node: Option<&str>,
    ) -> Result<CheckpointConfig, GraphError> {
        self.graph
            .update_state_in(self.context.clone(), config, values.into(), as_node)
            .await
    }

    /// [`CompiledGraph::bulk_update_state`] with the context value, which the
    /// conditional edges that fire read.
    pub async fn bulk_update_state(
        &self,
        config: &RunConfig,
        supersteps: Vec<Vec<NodeUpdate<S>>>,
    ) -> Result<CheckpointConfig, GraphError> {
        self.graph
            .bulk_update_state_in(self.context.clone(), config, supersteps)
            .await
    }
}

type RunFuture = Pin<Box<dyn Future<Output = Result<(), GraphError>> + Send>>;

/// The stream returned by [`CompiledGraph::stream`].
pub struct GraphStream<S: State> {
    run: Option<RunFuture>,
    rx: UnboundedReceiver<StreamEvent<S>>,
    error: Option<GraphError>,
}

impl<S: State> Stream for GraphStream<S> {
    type Item = Result<StreamEvent<S>, GraphError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(event)) => return Poll::Ready(Some(Ok(event))),
                Poll::Ready(None) => return Poll::Ready(this.error.take().map(Err)),
                Poll::Pending => {}
            }
            let Some(run) = this.run.as_mut() else {
                return Poll::Pending;
            };
            match run.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    this.run = None;
                    this.error = result.err();
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<S: State> Unpin for GraphStream<S> {}
