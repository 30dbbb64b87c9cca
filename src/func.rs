//! The Functional API (LangGraph's `@entrypoint` and `@task`): a workflow written
//! as one async fn with ordinary control flow, made durable.
//!
//! - `#[task]` on a fn (async or not) whose arguments and result are serde
//!   types: calling it from an entrypoint (or from another task) returns a
//!   [`TaskFuture`]; several run in parallel when awaited together
//!   (`futures::join!`, `try_join_all`). Each call's result is saved as it
//!   finishes, keyed by its position in call order. Options:
//!   `#[task(name = "..", retry = RetryPolicy::new(), timeout = Duration::from_secs(5),
//!   cache_policy = CachePolicy::new())]` (the cache is
//!   [`CompileOptions::cache`](graph_core::CompileOptions::cache)'s; a sync
//!   task with a timeout runs on tokio's blocking pool, as a sync node does).
//!   Inside a task, [`store()`] is the entrypoint's store (LangGraph's
//!   `get_store()`) and [`context()`] its context.
//! - `#[entrypoint]` on an async fn taking the input, optionally
//!   `previous: Option<T>` (what the thread's last run saved),
//!   `ctx: &Context` and `store: &dyn Store` (or `Option<&dyn Store>`: the
//!   store given to [`CompileOptions::store`](graph_core::CompileOptions::store),
//!   LangGraph's injected `store`), and returning the output (or [`Final`]`<Output, Save>`
//!   to save another value than it returns), optionally in a `Result`.
//!   [`Entrypoint::new`] compiles it into a [`CompiledEntrypoint`]: a graph with
//!   one node, with the checkpointers, durability modes, streaming and state
//!   history of any compiled graph.
//! - [`interrupt`] pauses the run; `Command::resume` re-runs the entrypoint
//!   from its start, every task call that finished returns its saved result,
//!   and the `interrupt` call returns the answer.
//!
//! ```
//! use stategraph::checkpoint::InMemorySaver;
//! use stategraph::func::{entrypoint, interrupt, task, Entrypoint};
//! use stategraph::prelude::*;
//!
//! #[task]
//! async fn write_essay(topic: String) -> String {
//!     format!("An essay about {topic}")
//! }
//!
//! #[entrypoint]
//! async fn review(topic: String) -> Result<(String, bool), NodeError> {
//!     let essay = write_essay(topic).await?;
//!     let approved: bool = interrupt(format!("Approve {essay:?}?"))?;
//!     Ok((essay, approved))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = Entrypoint::new(review).compile_with(InMemorySaver::new())?;
//! let config = RunConfig::thread("essay-1");
//!
//! let paused = app.invoke("cats".to_owned(), &config).await?;
//! assert_eq!(paused.interrupts[0].value, "Approve \"An essay about cats\"?");
//!
//! // The essay is not written again: the task returns its saved result.
//! let done = app.invoke_command(Command::resume(true), &config).await?;
//! assert_eq!(done.value, Some(("An essay about cats".to_owned(), true)));
//! # Ok(())
//! # }
//! ```

pub use graph_core::func::{
    context, interrupt, store, EntryFuture, EntrypointFn, Final, FuncError, TaskFuture, TaskOptions,
};
pub use graph_macros::{entrypoint, task};

#[doc(hidden)]
pub use graph_core::func::{
    __ArgsHash, __Codec, __StoreArg, __call, __off_executor, __once, __repeat, __task_result,
};

use graph_core::checkpoint::{CheckpointConfig, ListOptions};
use graph_core::graph::GraphStream;
use graph_core::node::{Node, NodeFuture, NodeSpec};
use graph_core::{
    Command, CompileOptions, CompiledGraph, Context, GraphError, Interrupt, IntoNodeOutput,
    NodeError, RunConfig, StateGraph, StateSnapshot, StreamEvent, StreamMode, StreamModes,
    Subgraph, START,
};
use std::borrow::Cow;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

/// The state of an entrypoint's graph: its last input, its output, and what it
/// saved for the next run (`previous`).
#[derive(crate::State, Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[state(crate = crate)]
pub struct EntryState<I, O, P> {
    /// The input of the thread's last run.
    pub input: Option<I>,
    /// The output of the thread's last finished run.
    pub output: Option<O>,
    /// What the last finished run saved (the `previous` of the next).
    pub previous: Option<P>,
}

impl<I, O, P> Default for EntryState<I, O, P> {
    fn default() -> Self {
        EntryState {
            input: None,
            output: None,
            previous: None,
        }
    }
}

/// The state of the graph entrypoint `F` compiles to.
pub type StateOf<F> =
    EntryState<<F as EntrypointFn>::Input, <F as EntrypointFn>::Output, <F as EntrypointFn>::Save>;

/// The partial update of [`StateOf<F>`], the type a `Command` given to
/// [`CompiledEntrypoint::invoke_command`] carries.
pub type UpdateOf<F> = <StateOf<F> as graph_core::State>::Update;

/// An `#[entrypoint]` fn, to compile.
pub struct Entrypoint<F: EntrypointFn> {
    f: F,
    options: graph_core::NodeOptions,
}

impl<F: EntrypointFn> Entrypoint<F> {
    /// The entrypoint `f` (the unit struct `#[entrypoint]` makes of the fn).
    pub fn new(f: F) -> Self {
        Entrypoint {
            f,
            options: graph_core::NodeOptions::new(),
        }
    }

    /// Retries the whole entrypoint on failure (its finished task calls are
    /// reused by the retry when a checkpointer saved them).
    pub fn retry(mut self, policy: graph_core::RetryPolicy) -> Self {
        self.options = self.options.retry(policy);
        self
    }

    /// The graph it runs as: one node, named after the fn, from `START`.
    pub fn into_graph(self) -> StateGraph<StateOf<F>> {
        let name = self.f.name();
        StateGraph::new()
            .add_node_with(EntryNode(Arc::new(self.f)), self.options)
            .add_edge(START, name)
            .__input_at_input_step()
    }

    /// Compiles it without a checkpointer: nothing is saved, nothing resumes.
    pub fn compile(self) -> Result<CompiledEntrypoint<F>, GraphError> {
        Ok(CompiledEntrypoint {
            graph: self.into_graph().compile()?,
        })
    }

    /// Compiles it with a checkpointer (task results are saved, interrupts
    /// resume, `previous` carries across runs of a thread), or with
    /// [`CompileOptions`]: a checkpointer, the cache of tasks with a
    /// [`CachePolicy`](graph_core::cache::CachePolicy), the store the
    /// entrypoint and its tasks reach (LangGraph's
    /// `@entrypoint(checkpointer=.., cache=.., store=..)`).
    pub fn compile_with(
        self,
        options: impl Into<CompileOptions>,
    ) -> Result<CompiledEntrypoint<F>, GraphError> {
        Ok(CompiledEntrypoint {
            graph: self.into_graph().compile_with(options)?,
        })
    }
}

/// What a run of an entrypoint returned.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EntryOutput<O> {
    /// The output; `None` when the run paused at an interrupt.
    pub value: Option<O>,
    /// The interrupts the run paused at (resume with `Command::resume`).
    pub interrupts: Vec<Interrupt>,
}

/// A compiled entrypoint: runs, streams and inspects threads like the
/// [`CompiledGraph`] it wraps ([`graph`](Self::graph)).
pub struct CompiledEntrypoint<F: EntrypointFn> {
    graph: CompiledGraph<StateOf<F>>,
}

impl<F: EntrypointFn> Clone for CompiledEntrypoint<F> {
    fn clone(&self) -> Self {
        CompiledEntrypoint {
            graph: self.graph.clone(),
        }
    }
}

impl<F: EntrypointFn> CompiledEntrypoint<F> {
    /// The graph it runs as, for everything a compiled graph does (batch,
    /// subgraph use, drawing, `update_state` as a node).
    pub fn graph(&self) -> &CompiledGraph<StateOf<F>> {
        &self.graph
    }

    fn input(input: F::Input) -> UpdateOf<F> {
        StateOf::<F>::update().input(Some(input))
    }

    fn output(out: graph_core::GraphOutput<StateOf<F>>) -> EntryOutput<F::Output> {
        EntryOutput {
            value: if out.interrupts.is_empty() {
                out.state.output
            } else {
                None
            },
            interrupts: out.interrupts,
        }
    }

    /// Runs the entrypoint on `input` (a new run of the thread `config` names).
    pub async fn invoke(
        &self,
        input: F::Input,
        config: &RunConfig,
    ) -> Result<EntryOutput<F::Output>, GraphError> {
        let out = self.graph.invoke(Self::input(input), config).await?;
        Ok(Self::output(out))
    }

    /// Continues the thread with a command: `Command::resume(answer)` after an
    /// interrupt (the entrypoint runs again from its start, finished task calls
    /// return their saved results).
    pub async fn invoke_command(
        &self,
        command: Command<&'static str, UpdateOf<F>>,
        config: &RunConfig,
    ) -> Result<EntryOutput<F::Output>, GraphError> {
        let out = self.graph.invoke(command, config).await?;
        Ok(Self::output(out))
    }

    /// Continues the thread from its checkpoint without new input (after a
    /// crash or a failure: finished task calls return their saved results).
    pub async fn resume(&self, config: &RunConfig) -> Result<EntryOutput<F::Output>, GraphError> {
        let out = self.graph.invoke(None, config).await?;
        Ok(Self::output(out))
    }

    /// Runs the entrypoint on `input`, reporting the events of `modes`: in
    /// `values` mode the entrypoint's output, as LangGraph streams it
    /// ([`EntryEvent::Values`]), every other mode as its graph streams it
    /// ([`EntryEvent::Graph`]; [`graph`](Self::graph)`().stream(..)` gives
    /// the whole [`EntryState`] in `values` mode).
    pub fn stream(
        &self,
        input: F::Input,
        config: &RunConfig,
        modes: impl Into<StreamModes>,
    ) -> EntryStream<F> {
        EntryStream {
            inner: self.graph.stream(Self::input(input), config, modes),
        }
    }

    /// Continues the thread with a command (`Command::resume(answer)`),
    /// reporting the events of `modes` as [`stream`](Self::stream) does.
    pub fn stream_command(
        &self,
        command: Command<&'static str, UpdateOf<F>>,
        config: &RunConfig,
        modes: impl Into<StreamModes>,
    ) -> EntryStream<F> {
        EntryStream {
            inner: self.graph.stream(command, config, modes),
        }
    }

    /// The thread's state: its last input, output and saved value.
    pub async fn get_state(
        &self,
        config: &RunConfig,
    ) -> Result<StateSnapshot<StateOf<F>>, GraphError> {
        self.graph.get_state(config).await
    }

    /// The thread's checkpoints, newest first.
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<StateOf<F>>>, GraphError> {
        self.graph.get_state_history(config, options).await
    }

    /// The entrypoint as a node named `name` of a graph with state `P` (a
    /// subgraph): `input` makes its input from the parent's state, `output`
    /// the node's result (an update of `P`, a `Command`...) from its output.
    /// An interrupt inside it pauses the parent; a resume continues it, its
    /// finished task calls returning their saved results.
    pub fn as_node<P, R>(
        &self,
        name: impl Into<Cow<'static, str>>,
        input: impl Fn(&P) -> F::Input + Send + Sync + 'static,
        output: impl Fn(F::Output) -> R + Send + Sync + 'static,
    ) -> Subgraph<P, P, StateOf<F>>
    where
        P: graph_core::State,
        R: IntoNodeOutput<P>,
    {
        let name = name.into();
        let entry = self
            .graph
            .node_names()
            .next()
            .unwrap_or_default()
            .to_owned();
        Subgraph::mapped(
            name,
            self.graph.clone(),
            move |parent: &P| Self::input(input(parent)),
            move |done: StateOf<F>| match done.output {
                Some(value) => output(value).into_output(),
                None => Err(NodeError::msg(format!(
                    "entrypoint `{entry}` ended without an output"
                ))),
            },
        )
    }

    /// Writes `values` into the thread's state as the entrypoint's node (e.g. a
    /// new `previous`).
    pub async fn update_state(
        &self,
        config: &RunConfig,
        values: UpdateOf<F>,
    ) -> Result<CheckpointConfig, GraphError> {
        self.graph.update_state(config, values, None).await
    }
}

/// One event of [`CompiledEntrypoint::stream`].
///
/// In `values` mode an entrypoint streams its output alone, as LangGraph's
/// `@entrypoint` does (`stream(3, stream_mode="values")` yields `18`, not a
/// state): once when a run ends, and first, when a run resumes, the output
/// the thread holds (`None` while its first run is paused). The other modes'
/// events are the entrypoint graph's.
#[non_exhaustive]
// As large as the `StreamEvent` it wraps, which streams move by value: boxing
// it would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
pub enum EntryEvent<F: EntrypointFn> {
    /// `values` mode: the entrypoint's output after a step (`None` before
    /// the thread's first run returned).
    Values(Option<F::Output>),
    /// `values` mode: the run paused at these interrupts (LangGraph's
    /// `{'__interrupt__': (..)}`).
    ValuesAtInterrupt(Vec<Interrupt>),
    /// An event of another mode (`updates`, `tasks`, `custom`, `debug`,
    /// `checkpoints`, `messages`), as the entrypoint's graph streams it.
    Graph(StreamEvent<StateOf<F>>),
}

impl<F: EntrypointFn> EntryEvent<F> {
    /// The stream mode that produced it.
    pub fn mode(&self) -> StreamMode {
        match self {
            EntryEvent::Values(_) | EntryEvent::ValuesAtInterrupt(_) => StreamMode::Values,
            EntryEvent::Graph(event) => event.mode(),
        }
    }

    fn from_graph(event: StreamEvent<StateOf<F>>) -> Self {
        match event {
            StreamEvent::Values(state) => EntryEvent::Values(state.output.clone()),
            StreamEvent::ValuesAtInterrupt { interrupts, .. } => {
                EntryEvent::ValuesAtInterrupt(interrupts)
            }
            other => EntryEvent::Graph(other),
        }
    }
}

impl<F: EntrypointFn> std::fmt::Debug for EntryEvent<F>
where
    F::Input: std::fmt::Debug,
    F::Output: std::fmt::Debug,
    F::Save: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryEvent::Values(value) => f.debug_tuple("Values").field(value).finish(),
            EntryEvent::ValuesAtInterrupt(interrupts) => f
                .debug_tuple("ValuesAtInterrupt")
                .field(interrupts)
                .finish(),
            EntryEvent::Graph(event) => f.debug_tuple("Graph").field(event).finish(),
        }
    }
}

/// The stream returned by [`CompiledEntrypoint::stream`]: the run's
/// [`EntryEvent`]s, then the run's error if it failed.
pub struct EntryStream<F: EntrypointFn> {
    inner: GraphStream<StateOf<F>>,
}

impl<F: EntrypointFn> futures::Stream for EntryStream<F> {
    type Item = Result<EntryEvent<F>, GraphError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().inner)
            .poll_next(cx)
            .map(|item| item.map(|event| event.map(EntryEvent::from_graph)))
    }
}

/// The one node of an entrypoint's graph.
struct EntryNode<F>(Arc<F>);

impl<F: EntrypointFn> NodeSpec for EntryNode<F> {
    type Input = StateOf<F>;

    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.0.name())
    }
}

impl<F: EntrypointFn> Node<StateOf<F>> for EntryNode<F> {
    fn run(&self, state: Arc<StateOf<F>>, ctx: Context) -> NodeFuture<StateOf<F>> {
        let Some(input) = state.input.clone() else {
            let name = self.0.name();
            return NodeFuture::ready(Err(NodeError::msg(format!(
                "entrypoint `{name}` has no input: start the thread with invoke(input) first"
            ))));
        };
        let previous = state.previous.clone();
        // The engine runs the body in the node's scope of task calls.
        let body = self.0.call(input, previous, ctx);
        NodeFuture::new(async move {
            let done = body.await?;
            let update = StateOf::<F>::update()
                .output(Some(done.value))
                .previous(Some(done.save));
            graph_core::IntoNodeOutput::<StateOf<F>>::into_output(update)
        })
    }
}
