//! Subgraphs (docs/semantics.md §8): a compiled graph used as a node of another
//! graph, or run from inside a node with [`CompiledGraph::invoke_nested`].
//!
//! A subgraph runs in its own checkpoint namespace under the calling task
//! (`node:<task id>`), with the caller's saver: an interrupt inside it pauses the
//! whole run and a resume continues exactly the child task that asked.

use crate::checkpoint::Checkpointer;
use crate::command::Targets;
use crate::config::RunConfig;
pub use crate::config::SubgraphCheckpoints;
use crate::context::{Context, FromContext, Untyped};
use crate::error::{GraphError, NodeError};
use crate::graph::CompiledGraph;
use crate::io::{GraphInput, GraphOutput};
pub use crate::node::ErasedSubgraph;
use crate::node::{IntoNodeOutput, Node, NodeFuture, NodeOutput, NodeSpec};
use crate::pregel::Run;
use crate::snapshot::{StateSnapshot, SubgraphSnapshot};
use crate::state::State;
use futures::future::BoxFuture;
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

type InputMap<I, C> = Arc<dyn Fn(&I) -> <C as State>::Update + Send + Sync>;
type OutputMap<P, C> = Arc<dyn Fn(C) -> Result<NodeOutput<P>, NodeError> + Send + Sync>;

/// A compiled graph with state `C` as a node of a graph with state `P`, taking
/// `I` as input (`P` for a node triggered by edges, a payload type for a node
/// reached by [`send`](crate::send)).
///
/// [`Subgraph::new`] shares the parent's state type: the child starts from the
/// parent's state and its final state is written back (reducer fields fold the
/// child's value in again, as in LangGraph). [`Subgraph::mapped`] takes a child
/// with its own state and two functions: the child's input from the node's input,
/// and the parent's update from the child's final state.
///
/// `X` is the child's context type: the parent's, or untyped (a child that
/// reads no typed context fits a parent of any context type). The child's
/// nodes read the parent run's context value.
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph::Subgraph;
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Joke { subject: String, joke: String }
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Show {
///     subjects: Vec<String>,
///     #[reducer(concat)]
///     jokes: Vec<String>,
/// }
/// fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> { a.extend(b); a }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let writer = StateGraph::<Joke>::new()
///     .add_node(node_fn("write", |j: &Joke| Joke::update().joke(format!("a joke about {}", j.subject))))
///     .add_edge(START, "write")
///     .compile()?;
///
/// // Reached by `send` with a `String`; returns the joke to the parent's list.
/// let joke = Subgraph::mapped(
///     "joke",
///     writer,
///     |subject: &String| Joke::update().subject(subject.clone()),
///     |done: Joke| Show::update().jokes(vec![done.joke]),
/// );
/// let fan_out = {
///     let joke = joke.clone();
///     move |s: &Show| s.subjects.iter().map(|x| send(&joke, x.clone())).collect::<Vec<_>>()
/// };
/// let show = StateGraph::<Show>::new()
///     .add_node(joke)
///     .add_conditional_edges(START, fan_out)
///     .compile()?;
///
/// let out = show
///     .invoke(Show::update().subjects(vec!["cats".into(), "dogs".into()]), &RunConfig::new())
///     .await?;
/// assert_eq!(out.jokes, ["a joke about cats", "a joke about dogs"]);
/// # Ok::<(), GraphError>(())
/// # }).unwrap();
/// ```
pub struct Subgraph<P: State, I, C: State, X: ?Sized = Untyped> {
    name: Cow<'static, str>,
    graph: CompiledGraph<C, X>,
    input: InputMap<I, C>,
    output: OutputMap<P, C>,
    targets: Targets,
    checkpoints: SubgraphCheckpoints,
}

impl<P: State, I, C: State, X: ?Sized> Clone for Subgraph<P, I, C, X> {
    fn clone(&self) -> Self {
        Subgraph {
            name: self.name.clone(),
            graph: self.graph.clone(),
            input: Arc::clone(&self.input),
            output: Arc::clone(&self.output),
            targets: self.targets,
            checkpoints: self.checkpoints,
        }
    }
}

impl<P: State, I, C: State, X: ?Sized + 'static> std::fmt::Debug for Subgraph<P, I, C, X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subgraph")
            .field("name", &self.name)
            .field("graph", &self.graph)
            .field("checkpoints", &self.checkpoints)
            .finish()
    }
}

impl<S: State, X: ?Sized> Subgraph<S, S, S, X> {
    /// `graph` as a node named `name` of a graph with the same state type: it
    /// starts from the parent's state, and its final state is written back.
    pub fn new(name: impl Into<Cow<'static, str>>, graph: CompiledGraph<S, X>) -> Self {
        Subgraph {
            name: name.into(),
            graph,
            input: Arc::new(S::to_update),
            output: Arc::new(|done: S| {
                // As LangGraph's subgraph hands back its output channels only.
                let mut update = done.to_update();
                S::without_private(&mut update);
                Ok(NodeOutput::new().with_update(update))
            }),
            targets: Targets::None,
            checkpoints: SubgraphCheckpoints::default(),
        }
    }
}

impl<P: State, I: Any + Send + Sync, C: State, X: ?Sized> Subgraph<P, I, C, X> {
    /// `graph` (with its own state `C`) as a node named `name`: `input` makes the
    /// child's input from the node's input (the parent state, or a `Send`
    /// payload), `output` the node's result from the child's final state (an
    /// update of the parent, a `Command`, anything a node may return).
    pub fn mapped<R: IntoNodeOutput<P>>(
        name: impl Into<Cow<'static, str>>,
        graph: CompiledGraph<C, X>,
        input: impl Fn(&I) -> C::Update + Send + Sync + 'static,
        output: impl Fn(C) -> R + Send + Sync + 'static,
    ) -> Self {
        Subgraph {
            name: name.into(),
            graph,
            input: Arc::new(input),
            output: Arc::new(move |done| output(done).into_output()),
            targets: R::targets(),
            checkpoints: SubgraphCheckpoints::default(),
        }
    }

    /// Where the subgraph keeps its checkpoints (default: per call, in the
    /// caller's saver).
    pub fn checkpoints(mut self, mode: SubgraphCheckpoints) -> Self {
        self.checkpoints = mode;
        self
    }

    /// The compiled child graph.
    pub fn graph(&self) -> &CompiledGraph<C, X> {
        &self.graph
    }
}

impl<P: State, I: Any + Send + Sync, C: State, X: ?Sized + 'static> NodeSpec
    for Subgraph<P, I, C, X>
{
    type Input = I;

    fn name(&self) -> Cow<'static, str> {
        self.name.clone()
    }
}

impl<P, I, C, X, PX> Node<P, PX> for Subgraph<P, I, C, X>
where
    P: State,
    I: Any + Send + Sync,
    C: State,
    X: ?Sized + 'static,
    PX: ?Sized + 'static,
    Context<X>: FromContext<PX>,
{
    fn run(&self, input: Arc<I>, ctx: Context<PX>) -> NodeFuture<P> {
        let child = GraphInput::update((self.input)(&input));
        let graph = self.graph.clone();
        let output = Arc::clone(&self.output);
        let mode = self.checkpoints;
        NodeFuture::new(async move {
            let done = graph.run_in(&ctx, child, mode).await?;
            output(done)
        })
    }

    fn targets(&self) -> Targets {
        self.targets
    }

    fn as_subgraph(&self) -> Option<&dyn ErasedSubgraph> {
        Some(self)
    }
}

impl<C: State, X: ?Sized + 'static> CompiledGraph<C, X> {
    /// Runs this graph from inside a node, as a subgraph of the node's task: in
    /// the task's checkpoint namespace, with the caller's saver and context
    /// value (this graph's context type is the caller's, or untyped). Returns
    /// the final state. An interrupt inside it pauses the caller too (return
    /// the error with `?`), and on resume the caller's node re-runs and this
    /// call continues the child where it paused. A second call in the same
    /// node gets its own namespace (`|1`, `|2`...). As with
    /// [`invoke`](Self::invoke), private fields are neither written from
    /// `input` nor returned.
    pub async fn invoke_nested<PX: ?Sized>(
        &self,
        ctx: &Context<PX>,
        input: impl Into<GraphInput<C>>,
    ) -> Result<C, NodeError>
    where
        Context<X>: FromContext<PX>,
    {
        let mut state = self
            .run_in(ctx, input.into(), SubgraphCheckpoints::PerCall)
            .await?;
        if !C::PRIVATE_FIELDS.is_empty() {
            state.clear_private();
        }
        Ok(state)
    }

    /// Runs this graph nested in the task of `ctx`, whose run's context value
    /// it shares (its type fits this graph's: the callers check
    /// `Context<X>: FromContext<PX>`).
    pub(crate) async fn run_in<PX: ?Sized>(
        &self,
        ctx: &Context<PX>,
        input: GraphInput<C>,
        mode: SubgraphCheckpoints,
    ) -> Result<C, NodeError> {
        let mut run = Run::nested(Arc::clone(&self.graph), self.saver.clone(), ctx, mode)?;
        run.with_cache(self.cache.clone())
            .with_store(self.store.clone());
        let GraphOutput {
            state,
            interrupts,
            breakpoint,
        } = match run.run_nested(input).await {
            Ok(output) => output,
            // A command for this graph: recorded for the engine, which hands it
            // on even if the node swallows the `Err`.
            Err(e) => match e.into_parent() {
                Ok(route) => {
                    ctx.raise(crate::scope::Signal::Parent(route));
                    return Err(NodeError::parent_raised());
                }
                Err(e) => return Err(e),
            },
        };
        if !interrupts.is_empty() || breakpoint.is_some() {
            // Likewise, the pause holds even if the node swallows the `Err`.
            ctx.raise(crate::scope::Signal::Interrupts(interrupts.clone()));
            return Err(NodeError::interrupts(interrupts));
        }
        Ok(Arc::try_unwrap(state).unwrap_or_else(|shared| (*shared).clone()))
    }
}

impl<P: State, I: Any + Send + Sync, C: State, X: ?Sized + 'static> ErasedSubgraph
    for Subgraph<P, I, C, X>
{
    fn graph_any(&self) -> &dyn Any {
        &self.graph
    }

    fn state_type_name(&self) -> &'static str {
        std::any::type_name::<C>()
    }

    fn checkpoints(&self) -> SubgraphCheckpoints {
        self.checkpoints
    }

    fn child(&self, node: &str) -> Option<&dyn ErasedSubgraph> {
        self.graph.child_subgraph(node)
    }

    fn drawing(&self) -> Arc<crate::draw::Drawing> {
        self.graph.drawing()
    }

    fn snapshot(
        &self,
        saver: Arc<dyn Checkpointer>,
        config: RunConfig,
    ) -> BoxFuture<'_, Result<Option<SubgraphSnapshot>, GraphError>> {
        Box::pin(async move {
            let view = self.graph.subgraph_view(saver);
            let snapshot = view.get_state_with_subgraphs(&config).await?;
            Ok(snapshot
                .metadata
                .is_some()
                .then(|| SubgraphSnapshot::new(snapshot)))
        })
    }
}

impl<S: State, X: ?Sized + 'static> CompiledGraph<S, X> {
    /// The subgraph node named `node`, if it is one.
    pub(crate) fn child_subgraph(&self, node: &str) -> Option<&dyn ErasedSubgraph> {
        let &i = self.graph.node_by_name.get(node)?;
        self.graph.nodes[i].runner.as_ref()?.as_subgraph()
    }

    /// Like [`get_state`](Self::get_state), with each task of a
    /// [`Subgraph`] node carrying the subgraph's own snapshot in
    /// [`SnapshotTask::state`](crate::SnapshotTask) (recursively), when the
    /// subgraph has stored one (LangGraph's `get_state(subgraphs=True)`).
    pub async fn get_state_with_subgraphs(
        &self,
        config: &RunConfig,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let mut snapshot = self.get_state(config).await?;
        let Some(saver) = self.saver.clone() else {
            return Ok(snapshot);
        };
        let thread = snapshot.config.thread_id.clone();
        for task in &mut snapshot.tasks {
            let Some(sub) = self.child_subgraph(&task.name) else {
                continue;
            };
            let ns = match sub.checkpoints() {
                SubgraphCheckpoints::PerCall => task.checkpoint_ns.clone(),
                SubgraphCheckpoints::Persistent => crate::pregel::recast(&task.checkpoint_ns),
                SubgraphCheckpoints::Off => continue,
            };
            let child = RunConfig::thread(&thread).with_checkpoint_ns(ns);
            task.state = sub.snapshot(Arc::clone(&saver), child).await?;
        }
        Ok(snapshot)
    }
}
