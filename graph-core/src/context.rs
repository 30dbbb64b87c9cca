//! [`Context`]: what a running node can know and do besides reading its input,
//! and the run's context value it reads (LangGraph's `Runtime.context`).
//!
//! A graph may declare the type of a read-only value every run is given — a user
//! id, a database handle, the model to call — as its second type parameter:
//! `StateGraph::<State, UserCtx>`. Its nodes and routers take `&Context<UserCtx>`
//! and read the value with [`Context::context`]; each run gets its own value
//! ([`CompiledGraph::with_context`](crate::CompiledGraph::with_context)), and it
//! is never stored in a checkpoint.
//!
//! ```
//! use stategraph::prelude::*;
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Chat { reply: String }
//!
//! struct UserCtx { user: String }
//!
//! #[node]
//! fn greet(_: &Chat, ctx: &Context<UserCtx>) -> ChatUpdate {
//!     Chat::update().reply(format!("hello, {}", ctx.context().user))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = StateGraph::<Chat, UserCtx>::with_context_schema()
//!     .add_node(greet)
//!     .add_edge(START, greet)
//!     .compile()?;
//! let ctx = UserCtx { user: "ada".into() };
//! let out = app.with_context(ctx).invoke(Chat::update(), &RunConfig::new()).await?;
//! assert_eq!(out.reply, "hello, ada");
//! # Ok(())
//! # }
//! ```
//!
//! A node that takes the plain `&Context` (no type argument) runs in a graph of
//! any context type; it sees the value untyped, as `&dyn Any`.

use crate::config::RunConfig;
use crate::error::NodeError;
use crate::interrupt::{Interrupt, ResumeTypeError, Scratchpad};
use crate::scope::StepScope;
use std::any::Any;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The context type of a graph that declares none, and the view of the context
/// a node taking the plain [`Context`] has: any value, untyped.
pub type Untyped = dyn Any + Send + Sync;

pub(crate) use crate::scope::RunContext;

pub(crate) type CustomSink = Arc<dyn Fn(&Arc<str>, serde_json::Value) + Send + Sync>;
/// Takes the task's node, id and step with the chunk.
pub(crate) type MessageSink = Arc<dyn Fn(&Arc<str>, &str, i64, serde_json::Value) + Send + Sync>;

/// Where a task's streamed values go: one sink per mode a node can write to, `None`
/// when the caller does not listen to that mode.
#[derive(Clone, Default)]
pub(crate) struct StreamSinks {
    pub(crate) custom: Option<CustomSink>,
    pub(crate) messages: Option<MessageSink>,
    /// The starts and results of task calls (`crate::func`), for the
    /// `updates`, `tasks` and `debug` modes.
    pub(crate) calls: Option<CallSink>,
}

/// Where task calls (`crate::func`) report their progress.
pub(crate) type CallSink = Arc<dyn Fn(CallEvent<'_>) + Send + Sync>;

/// A task call starting, or finishing with its saved result or an error.
pub(crate) enum CallEvent<'a> {
    Start {
        id: &'a str,
        task: &'a str,
    },
    Done {
        id: &'a str,
        task: &'a str,
        result: Result<&'a crate::checkpoint::Blob, String>,
        /// Whether the result came from the cache (no `tasks` result then).
        cached: bool,
    },
}

/// The context of one task: its step, ids, the run's config, the stream, and
/// the run's context value of type `C` ([`context`](Self::context)).
///
/// Take it as a second parameter of a `#[node]` fn: `ctx: &Context` when the
/// node does not read a typed context value (it then runs in a graph of any
/// context type), `ctx: &Context<UserCtx>` to read the `UserCtx` of a graph
/// built as `StateGraph::<State, UserCtx>` (only there: in a graph of another
/// context type it does not compile).
pub struct Context<C: ?Sized = Untyped> {
    inner: Arc<TaskInfo>,
    _context: PhantomData<fn(&C)>,
}

impl<C: ?Sized> Clone for Context<C> {
    fn clone(&self) -> Self {
        Context {
            inner: Arc::clone(&self.inner),
            _context: PhantomData,
        }
    }
}

struct TaskInfo {
    node: Arc<str>,
    task_id: String,
    /// The superstep the task belongs to, shared by its sibling tasks.
    scope: Arc<StepScope>,
    sinks: StreamSinks,
    attempt: u32,
    scratchpad: Option<Arc<Scratchpad>>,
    /// How many graphs this attempt ran nested in it so far.
    nested_calls: AtomicU32,
    /// How many task calls (`crate::func`) this attempt made so far.
    task_calls: AtomicU32,
}

impl TaskInfo {
    /// Whether a graph nested in this task continues its own checkpoint: the
    /// run is resuming, or this is a retry (docs/semantics.md §8.4, §11.1).
    fn nested_resumes(&self) -> bool {
        self.scope.resuming || self.attempt > 1
    }
}

impl Context {
    pub(crate) fn new(
        node: Arc<str>,
        task_id: String,
        scope: Arc<StepScope>,
        sinks: StreamSinks,
        scratchpad: Option<Arc<Scratchpad>>,
    ) -> Self {
        Context {
            inner: Arc::new(TaskInfo {
                node,
                task_id,
                scope,
                sinks,
                attempt: 1,
                scratchpad,
                nested_calls: AtomicU32::new(0),
                task_calls: AtomicU32::new(0),
            }),
            _context: PhantomData,
        }
    }

    /// This context as the `Context<C>` of a node or router of a graph whose
    /// context type is `C`. Only the engine calls it, for graphs of that type,
    /// whose runs hold a `C` ([`Context::context`] relies on it).
    pub(crate) fn assume<C: ?Sized>(self) -> Context<C> {
        Context {
            inner: self.inner,
            _context: PhantomData,
        }
    }

    /// The run's context value, untyped: the value the run was given
    /// ([`CompiledGraph::with_context`](crate::CompiledGraph::with_context)),
    /// or `()` when it was given none. Downcast it with `downcast_ref`; a node
    /// of a graph with a context type reads it typed with `&Context<UserCtx>`
    /// instead.
    pub fn context(&self) -> &Untyped {
        static NONE: () = ();
        match &self.inner.scope.context {
            Some(value) => &**value,
            None => &NONE,
        }
    }
}

impl<C: Any + Send + Sync> Context<C> {
    /// The run's context value: what the run was given with
    /// [`CompiledGraph::with_context`](crate::CompiledGraph::with_context), or
    /// `C::default()` for a run given none. Read-only, shared by every node and
    /// router of the run and the subgraphs they run, and never checkpointed: a
    /// resumed run reads the value of the call that resumes it.
    pub fn context(&self) -> &C {
        // A `Context<C>` is only made for the nodes and routers of a graph whose
        // context type is `C`, and every run of such a graph (or of a graph it
        // is nested in) holds a `C`.
        self.inner
            .scope
            .context
            .as_deref()
            .and_then(|value| value.downcast_ref::<C>())
            .expect("a run of a graph with a context type holds a value of that type")
    }
}

impl<C: ?Sized> Context<C> {
    /// This task's context, without the context value's type: for code that
    /// takes the plain `&Context` (it sees the value as `&dyn Any`).
    pub fn untyped(&self) -> Context {
        Context {
            inner: Arc::clone(&self.inner),
            _context: PhantomData,
        }
    }

    /// The same task's context for attempt `attempt` (retries).
    pub(crate) fn for_attempt(&self, attempt: u32) -> Self {
        let i = &self.inner;
        if let Some(pad) = &i.scratchpad {
            pad.restart();
        }
        // The attempt's task calls count from zero again (the engine numbers
        // them on this context, which the attempts share).
        i.task_calls.store(0, Ordering::Relaxed);
        Context {
            inner: Arc::new(TaskInfo {
                node: Arc::clone(&i.node),
                task_id: i.task_id.clone(),
                scope: Arc::clone(&i.scope),
                sinks: i.sinks.clone(),
                attempt,
                scratchpad: i.scratchpad.clone(),
                nested_calls: AtomicU32::new(0),
                task_calls: AtomicU32::new(0),
            }),
            _context: PhantomData,
        }
    }

    /// The store the graph was compiled with
    /// ([`CompileOptions::store`](crate::CompileOptions::store)): long-term
    /// memory shared across threads, as LangGraph's `runtime.store`. A
    /// subgraph reaches its parent's. [`StoreError::NoStore`] when the graph
    /// has none; both errors convert into a node's error with `?`:
    ///
    /// ```
    /// use stategraph::store::{Namespace, StoreExt};
    /// use stategraph::{Context, NodeError};
    ///
    /// async fn remember(ctx: &Context, user: &str, fact: &str) -> Result<(), NodeError> {
    ///     let ns = Namespace::new(["memories", user])?;
    ///     ctx.store()?.put(&ns, "latest", serde_json::json!({"fact": fact})).await?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// Writes to the store are not part of the thread's checkpoints: resuming
    /// or replaying from an earlier checkpoint (time travel) does not undo them.
    ///
    /// [`StoreError::NoStore`]: crate::store::StoreError::NoStore
    pub fn store(&self) -> Result<&Arc<dyn crate::store::Store>, crate::store::StoreError> {
        self.inner
            .scope
            .store
            .as_ref()
            .ok_or(crate::store::StoreError::NoStore)
    }

    /// Which attempt this is (1 for the first run; more under a `RetryPolicy`).
    pub fn attempt(&self) -> u32 {
        self.inner.attempt
    }

    /// The name of the running node.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The id of the running task (deterministic: same checkpoint, same id).
    pub fn task_id(&self) -> &str {
        &self.inner.task_id
    }

    /// The current superstep (the `__start__` step is 0).
    pub fn step(&self) -> i64 {
        self.inner.scope.step
    }

    /// Supersteps left before the recursion limit, this one included.
    pub fn remaining_steps(&self) -> i64 {
        self.inner.scope.stop - self.inner.scope.step
    }

    /// Whether this is the last superstep the recursion limit allows.
    pub fn is_last_step(&self) -> bool {
        self.inner.scope.step == self.inner.scope.stop - 1
    }

    /// The thread id of the run, if any.
    pub fn thread_id(&self) -> Option<&str> {
        self.inner.scope.config.thread_id()
    }

    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.inner.scope.config
    }

    /// Emits `value` on the `custom` stream mode right away (a no-op when the caller
    /// did not ask for that mode). Values that fail to serialise are sent as `null`.
    pub fn write_custom(&self, value: impl serde::Serialize) {
        if let Some(sink) = &self.inner.sinks.custom {
            let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
            sink(&self.inner.node, value);
        }
    }

    /// Emits `chunk` on the `messages` stream mode right away, with this task's
    /// node, id and step as metadata (a no-op when the caller did not ask for that
    /// mode). Chat model integrations call this for each token or tool-call chunk
    /// they receive; values that fail to serialise are sent as `null`.
    pub fn write_message_chunk(&self, chunk: impl serde::Serialize) {
        if let Some(sink) = &self.inner.sinks.messages {
            let chunk = serde_json::to_value(chunk).unwrap_or(serde_json::Value::Null);
            let i = &self.inner;
            sink(&i.node, &i.task_id, i.scope.step, chunk);
        }
    }

    /// Whether the caller is listening to the `messages` stream mode (a model
    /// call may then stream its tokens instead of waiting for the whole reply).
    pub fn is_streaming_messages(&self) -> bool {
        self.inner.sinks.messages.is_some()
    }

    /// Pauses the run until a human (or any caller) answers `question`; returns the
    /// answer once the thread is resumed with `Command::resume(answer)`.
    ///
    /// The first time, this returns an error that pauses the node: return it with
    /// `?` (the node must return `Result<_, NodeError>`). The run stops after the
    /// superstep's other tasks finish, and the caller sees the question in
    /// [`GraphOutput::interrupts`](crate::GraphOutput). On resume the node runs
    /// again **from its beginning**, so code before this call runs twice: keep side
    /// effects after it, or make them idempotent. Several calls in one node are
    /// answered in order, one resume each.
    ///
    /// The answer is deserialised as `A`; a value that does not fit returns a
    /// [`ResumeTypeError`] (the run fails, the thread is unchanged, resume again with
    /// a value of the right type). Resuming needs a checkpointer.
    ///
    /// ```
    /// use stategraph::prelude::*;
    ///
    /// #[derive(State, Clone, Default, Serialize, Deserialize)]
    /// struct Review { draft: String, approved: bool }
    ///
    /// #[node]
    /// fn approve(s: &Review, ctx: &Context) -> Result<ReviewUpdate, NodeError> {
    ///     let approved: bool = ctx.interrupt(format!("Publish {:?}?", s.draft))?;
    ///     Ok(Review::update().approved(approved))
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let app = StateGraph::<Review>::new()
    ///     .add_node(approve)
    ///     .add_edge(START, approve)
    ///     .compile_with(stategraph::checkpoint::InMemorySaver::new())?;
    /// let config = RunConfig::thread("t1");
    ///
    /// let paused = app.invoke(Review::update().draft("hello".into()), &config).await?;
    /// assert_eq!(paused.interrupts[0].value, "Publish \"hello\"?");
    ///
    /// let done = app.invoke(Command::resume(true), &config).await?;
    /// assert!(done.approved && done.interrupts.is_empty());
    /// # Ok::<(), GraphError>(())
    /// # }).unwrap();
    /// ```
    pub fn interrupt<Q, A>(&self, question: Q) -> Result<A, NodeError>
    where
        Q: serde::Serialize,
        A: serde::de::DeserializeOwned,
    {
        self.ask_on(self.inner.scratchpad.as_deref(), &self.inner.node, question)
    }

    /// One `interrupt` call of `asker` (this task's node, or a task call of
    /// the Functional API, which has its own scratchpad) answered from `pad`.
    pub(crate) fn ask_on<Q, A>(
        &self,
        pad: Option<&Scratchpad>,
        asker: &str,
        question: Q,
    ) -> Result<A, NodeError>
    where
        Q: serde::Serialize,
        A: serde::de::DeserializeOwned,
    {
        let Some(answer) = pad.and_then(Scratchpad::ask) else {
            // No answer: pause. A task without a scratchpad has no answers at all.
            let id = match pad {
                Some(pad) => pad.id().to_owned(),
                None => crate::interrupt::interrupt_id(&self.task_ns()),
            };
            let value = serde_json::to_value(&question).map_err(|e| {
                NodeError::msg(format!(
                    "`{asker}` asked with a value that cannot be serialised: {e}"
                ))
            })?;
            let interrupt = Interrupt { value, id };
            // Recorded for the engine: the pause holds even if the node
            // swallows this `Err`.
            self.raise(crate::scope::Signal::Interrupts(vec![interrupt.clone()]));
            return Err(NodeError::interrupts(vec![interrupt]));
        };
        serde_json::from_str(answer.as_str()).map_err(|source| {
            if let Some(pad) = pad {
                pad.reject_last();
            }
            let mut value = answer.as_str().to_owned();
            if value.len() > 200 {
                let cut = (0..=200)
                    .rev()
                    .find(|&i| value.is_char_boundary(i))
                    .unwrap_or(0);
                value.truncate(cut);
                value.push('…');
            }
            NodeError::from(ResumeTypeError {
                node: asker.to_owned(),
                value,
                expected: std::any::type_name::<A>(),
                source,
            })
        })
    }

    /// The checkpoint namespace of this task (`node:task_id`, under the enclosing
    /// graphs' namespaces in a subgraph).
    pub fn checkpoint_ns(&self) -> String {
        self.task_ns()
    }

    pub(crate) fn task_ns(&self) -> String {
        self.inner
            .scope
            .task_ns(&self.inner.node, &self.inner.task_id)
    }

    pub(crate) fn scope(&self) -> &Arc<StepScope> {
        &self.inner.scope
    }

    /// Records a control signal of this task (see `scope::Signals`).
    pub(crate) fn raise(&self, signal: crate::scope::Signal) {
        self.inner.scope.signals.raise(&self.inner.task_id, signal);
    }

    /// Whether this task raised a control signal.
    pub(crate) fn signalled(&self) -> bool {
        self.inner.scope.signals.raised(&self.inner.task_id)
    }

    /// Whether a graph run nested in this task continues its checkpoint.
    pub(crate) fn nested_resumes(&self) -> bool {
        self.inner.nested_resumes()
    }

    /// The namespace of the next graph this task runs nested: the task's own for
    /// the first, then `|1`, `|2`... (deterministic, so a re-run finds the same).
    pub(crate) fn next_nested_ns(&self) -> String {
        let k = self.inner.nested_calls.fetch_add(1, Ordering::Relaxed);
        let ns = self.task_ns();
        if k == 0 {
            ns
        } else {
            format!("{ns}|{k}")
        }
    }

    /// Reports a task call's start or result to the stream, if the caller
    /// listens to a mode that shows it.
    pub(crate) fn emit_call(&self, event: CallEvent<'_>) {
        if let Some(sink) = &self.inner.sinks.calls {
            sink(event);
        }
    }

    /// The number of this task's next task call (`crate::func`).
    pub(crate) fn next_task_call(&self) -> u32 {
        self.inner.task_calls.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether the caller is listening to the `custom` stream mode.
    pub fn is_streaming_custom(&self) -> bool {
        self.inner.sinks.custom.is_some()
    }
}

impl<C: ?Sized> std::fmt::Debug for Context<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("node", &self.inner.node)
            .field("task_id", &self.inner.task_id)
            .field("step", &self.inner.scope.step)
            .finish_non_exhaustive()
    }
}

/// The context parameter a node or router may take in a graph whose context
/// type is `C`: `Context<C>` itself, or the untyped [`Context`], which fits a
/// graph of any context type.
///
/// `#[node]` fns and closure nodes and routers use it to receive the task's
/// context as the parameter they declare.
#[diagnostic::on_unimplemented(
    message = "a node or router taking `{Self}` cannot run in a graph whose context type is `{C}`",
    label = "reads another context type than the graph's",
    note = "the graph's context type is `{C}` (`dyn Any + Send + Sync` when it declares none): take `&Context<{C}>` to read its value, or the plain `&Context`, which fits a graph of any context type",
    note = "to read the type `{Self}` names, build the graph with it: `StateGraph::<State, Ctx>::with_context_schema()`"
)]
pub trait FromContext<C: ?Sized> {
    /// The task's context as this parameter.
    fn from_context(ctx: Context<C>) -> Self;
}

impl<C> FromContext<C> for Context<C> {
    fn from_context(ctx: Context<C>) -> Self {
        ctx
    }
}

impl<C: ?Sized> FromContext<C> for Context {
    fn from_context(ctx: Context<C>) -> Self {
        Context {
            inner: ctx.inner,
            _context: PhantomData,
        }
    }
}
