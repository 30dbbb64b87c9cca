//! [`Context`]: what a running node can know and do besides reading its input.

use crate::config::RunConfig;
use crate::error::NodeError;
use crate::interrupt::{Interrupt, ResumeTypeError, Scratchpad};
use crate::scope::StepScope;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub(crate) type CustomSink = Arc<dyn Fn(&Arc<str>, serde_json::Value) + Send + Sync>;
pub(crate) type MessageSink = Arc<dyn Fn(&Context, serde_json::Value) + Send + Sync>;

/// Where a task's streamed values go: one sink per mode a node can write to, `None`
/// when the caller does not listen to that mode.
#[derive(Clone, Default)]
pub(crate) struct StreamSinks {
    pub(crate) custom: Option<CustomSink>,
    pub(crate) messages: Option<MessageSink>,
}

/// The context of one task: its step, ids, the run's config, and the custom stream.
///
/// Take it as a second parameter of a `#[node]` fn (`ctx: &Context`).
#[derive(Clone)]
pub struct Context {
    inner: Arc<TaskInfo>,
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
            }),
        }
    }

    /// The same task's context for attempt `attempt` (retries).
    pub(crate) fn for_attempt(&self, attempt: u32) -> Self {
        let i = &self.inner;
        if let Some(pad) = &i.scratchpad {
            pad.restart();
        }
        Context {
            inner: Arc::new(TaskInfo {
                node: Arc::clone(&i.node),
                task_id: i.task_id.clone(),
                scope: Arc::clone(&i.scope),
                sinks: i.sinks.clone(),
                attempt,
                scratchpad: i.scratchpad.clone(),
                nested_calls: AtomicU32::new(0),
            }),
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

    pub(crate) fn node_arc(&self) -> Arc<str> {
        Arc::clone(&self.inner.node)
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
            sink(self, chunk);
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
        let pad = self.inner.scratchpad.as_deref();
        let Some(answer) = pad.and_then(Scratchpad::ask) else {
            // No answer: pause. A task without a scratchpad has no answers at all.
            let id = match pad {
                Some(pad) => pad.id().to_owned(),
                None => crate::interrupt::interrupt_id(&self.task_ns()),
            };
            let value = serde_json::to_value(&question).map_err(|e| {
                NodeError::msg(format!(
                    "node `{}` asked with a value that cannot be serialised: {e}",
                    self.inner.node
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
                node: self.inner.node.to_string(),
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

    /// Whether the caller is listening to the `custom` stream mode.
    pub fn is_streaming_custom(&self) -> bool {
        self.inner.sinks.custom.is_some()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("node", &self.inner.node)
            .field("task_id", &self.inner.task_id)
            .field("step", &self.inner.scope.step)
            .finish_non_exhaustive()
    }
}
