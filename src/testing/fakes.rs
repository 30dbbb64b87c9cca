//! Deterministic fakes: a checkpointer and a store that record every call, a
//! builder of scripted chat model turns, and tokio's paused clock.
//!
//! ```
//! use stategraph::checkpoint::InMemorySaver;
//! use stategraph::prelude::*;
//! use stategraph::testing::fakes::{RecordingSaver, SaverCall};
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Count {
//!     n: u32,
//! }
//!
//! #[node]
//! fn bump(c: &Count) -> CountUpdate {
//!     Count::update().n(c.n + 1)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let saver = RecordingSaver::new(InMemorySaver::new());
//! let app = StateGraph::<Count>::new()
//!     .add_node(bump)
//!     .add_edge(START, bump)
//!     .compile_with(CompileOptions::new().checkpointer(saver.clone()))?;
//! app.invoke(Count::update(), &RunConfig::thread("t")).await?;
//!
//! // As in LangGraph's history: the input (step -1), the input applied by
//! // `__start__` (step 0), the step of `bump` (step 1).
//! let steps: Vec<i64> = saver
//!     .calls()
//!     .iter()
//!     .filter_map(|call| match call {
//!         SaverCall::Put { step, .. } => Some(*step),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(steps, [-1, 0, 1]);
//! # Ok(())
//! # }
//! ```
//!
//! # Time
//!
//! Retry backoff ([`RetryPolicy`](crate::RetryPolicy)) and node timeouts
//! ([`NodeOptions::timeout`](crate::NodeOptions::timeout)) wait on tokio's
//! timer. Under a paused clock (`#[tokio::test(start_paused = true)]`, or
//! `tokio::time::pause()`, with tokio's `test-util` feature), a test that
//! waits for a minute of backoff or a 30 s timeout completes at once and
//! deterministically: with every task idle, tokio advances the clock to the next
//! timer. A stand-in of [`Stepper::fake_with`](super::Stepper::fake_with) that
//! `tokio::time::sleep`s is a slow model the same way. The store's TTLs and the
//! node cache's expiry read the system clock, not tokio's: test them with a
//! short TTL and a real wait, or through [`Store::sweep_ttl`].

use futures::future::BoxFuture;
use graph_core::checkpoint::{
    Blob, ChannelVersions, Checkpoint, CheckpointConfig, CheckpointError, CheckpointMetadata,
    CheckpointSource, CheckpointTuple, Checkpointer, ListOptions, Retention, RunGuard,
};
use graph_core::store::{Op, OpResult, Store, StoreError};
use std::sync::{Arc, Mutex, PoisonError};

/// One call a [`RecordingSaver`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaverCall {
    /// `get_tuple`.
    GetTuple {
        /// The thread.
        thread_id: String,
        /// The checkpoint asked for (`None`: the latest).
        checkpoint_id: Option<String>,
    },
    /// `list`.
    List {
        /// The thread (`None`: every thread).
        thread_id: Option<String>,
    },
    /// `put`: a checkpoint stored.
    Put {
        /// The thread.
        thread_id: String,
        /// The namespace (`""` at the root).
        checkpoint_ns: String,
        /// `metadata.step`.
        step: i64,
        /// `metadata.source`.
        source: CheckpointSource,
    },
    /// `put_writes`: a task's writes stored.
    PutWrites {
        /// The thread.
        thread_id: String,
        /// The task.
        task_id: String,
        /// The channels written, in order.
        channels: Vec<String>,
    },
    /// `delete_thread`.
    DeleteThread {
        /// The thread.
        thread_id: String,
    },
    /// `prune`.
    Prune {
        /// The thread.
        thread_id: String,
    },
}

/// A checkpointer that records every call, then hands it to the saver it wraps
/// (an [`InMemorySaver`](crate::checkpoint::InMemorySaver), say). Clones share
/// the record.
#[derive(Clone)]
pub struct RecordingSaver {
    inner: Arc<dyn Checkpointer>,
    calls: Arc<Mutex<Vec<SaverCall>>>,
}

impl std::fmt::Debug for RecordingSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingSaver")
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl RecordingSaver {
    /// Records the calls to `inner`.
    pub fn new(inner: impl Checkpointer) -> Self {
        RecordingSaver {
            inner: Arc::new(inner),
            calls: Arc::default(),
        }
    }

    /// The calls so far, in order.
    pub fn calls(&self) -> Vec<SaverCall> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the calls so far.
    pub fn clear(&self) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn record(&self, call: SaverCall) {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }
}

impl Checkpointer for RecordingSaver {
    fn get_tuple<'a>(
        &'a self,
        config: &'a CheckpointConfig,
    ) -> BoxFuture<'a, Result<Option<CheckpointTuple>, CheckpointError>> {
        self.record(SaverCall::GetTuple {
            thread_id: config.thread_id.to_string(),
            checkpoint_id: config.checkpoint_id.as_ref().map(ToString::to_string),
        });
        self.inner.get_tuple(config)
    }

    fn list<'a>(
        &'a self,
        config: Option<&'a CheckpointConfig>,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<CheckpointTuple>, CheckpointError>> {
        self.record(SaverCall::List {
            thread_id: config.map(|c| c.thread_id.to_string()),
        });
        self.inner.list(config, options)
    }

    fn put<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> BoxFuture<'a, Result<CheckpointConfig, CheckpointError>> {
        self.record(SaverCall::Put {
            thread_id: config.thread_id.to_string(),
            checkpoint_ns: config.checkpoint_ns.to_string(),
            step: metadata.step,
            source: metadata.source,
        });
        self.inner.put(config, checkpoint, metadata, new_versions)
    }

    fn put_writes<'a>(
        &'a self,
        config: &'a CheckpointConfig,
        writes: Vec<(String, Blob)>,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.record(SaverCall::PutWrites {
            thread_id: config.thread_id.to_string(),
            task_id: task_id.to_owned(),
            channels: writes.iter().map(|(c, _)| c.clone()).collect(),
        });
        self.inner.put_writes(config, writes, task_id)
    }

    fn delete_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.record(SaverCall::DeleteThread {
            thread_id: thread_id.to_owned(),
        });
        self.inner.delete_thread(thread_id)
    }

    fn prune<'a>(
        &'a self,
        thread_id: &'a str,
        retention: Retention,
    ) -> BoxFuture<'a, Result<u64, CheckpointError>> {
        self.record(SaverCall::Prune {
            thread_id: thread_id.to_owned(),
        });
        self.inner.prune(thread_id, retention)
    }

    fn begin_run<'a>(
        &'a self,
        thread_id: &'a str,
        checkpoint_ns: &'a str,
    ) -> BoxFuture<'a, Result<RunGuard, CheckpointError>> {
        Box::pin(async move {
            let guard = self.inner.begin_run(thread_id, checkpoint_ns).await?;
            // A run writes through the guard's fenced view, when it has one:
            // recorded too.
            Ok(match guard.writer().cloned() {
                Some(writer) => guard.with_writer(Arc::new(RecordingSaver {
                    inner: writer,
                    calls: Arc::clone(&self.calls),
                })),
                None => guard,
            })
        })
    }
}

/// A store that records every operation, then hands it to the store it wraps
/// (an [`InMemoryStore`](crate::store::InMemoryStore), say). Clones share the
/// record.
#[derive(Clone)]
pub struct RecordingStore {
    inner: Arc<dyn Store>,
    ops: Arc<Mutex<Vec<Op>>>,
}

impl std::fmt::Debug for RecordingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingStore")
            .field("ops", &self.ops())
            .finish_non_exhaustive()
    }
}

impl RecordingStore {
    /// Records the operations on `inner`.
    pub fn new(inner: impl Store) -> Self {
        RecordingStore {
            inner: Arc::new(inner),
            ops: Arc::default(),
        }
    }

    /// The operations so far, in order (each `get`, `put`, `search`, ... is one).
    pub fn ops(&self) -> Vec<Op> {
        self.ops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Forgets the operations so far.
    pub fn clear(&self) {
        self.ops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl Store for RecordingStore {
    fn batch(&self, ops: Vec<Op>) -> BoxFuture<'_, Result<Vec<OpResult>, StoreError>> {
        self.ops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(ops.iter().cloned());
        self.inner.batch(ops)
    }

    fn sweep_ttl(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.inner.sweep_ttl()
    }
}

/// The turns of a scripted chat model, built one reply at a time: tool calls
/// get the ids `call_1`, `call_2`, ... in order, so that a test can name them.
///
/// ```
/// use stategraph::json;
/// use stategraph::testing::fakes::Script;
///
/// let model = Script::new()
///     .tool_call("add", json!({"a": 3, "b": 4}))
///     .tool_calls([("multiply", json!({"a": 7, "b": 12})), ("log", json!({}))])
///     .answer("12 * (3 + 4) = 84.")
///     .model();
/// # let _ = model;
/// ```
#[cfg(feature = "agents")]
#[derive(Debug, Clone, Default)]
pub struct Script {
    replies: Vec<crate::agents::AiMessage>,
    calls: usize,
}

#[cfg(feature = "agents")]
impl Script {
    /// No replies yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A reply that calls one tool with `args`.
    pub fn tool_call(self, name: &str, args: serde_json::Value) -> Self {
        self.tool_calls([(name, args)])
    }

    /// A reply that calls several tools at once (run in parallel by a
    /// [`ToolNode`](crate::agents::ToolNode)).
    pub fn tool_calls<'n>(
        mut self,
        calls: impl IntoIterator<Item = (&'n str, serde_json::Value)>,
    ) -> Self {
        let mut reply = crate::agents::AiMessage::new("");
        for (name, args) in calls {
            self.calls += 1;
            let id = format!("call_{}", self.calls);
            reply = reply.with_tool_call(crate::agents::ToolCall::new(id, name, args));
        }
        self.replies.push(reply);
        self
    }

    /// A reply with text and no tool call (a ReAct agent's answer).
    pub fn answer(mut self, text: &str) -> Self {
        self.replies.push(crate::agents::AiMessage::new(text));
        self
    }

    /// Any reply.
    pub fn reply(mut self, reply: crate::agents::AiMessage) -> Self {
        self.replies.push(reply);
        self
    }

    /// The replies, in order.
    pub fn replies(&self) -> &[crate::agents::AiMessage] {
        &self.replies
    }

    /// The model replying with these, in order (then from the first again).
    pub fn model(self) -> crate::agents::model::FakeChatModel {
        crate::agents::model::FakeChatModel::new(self.replies)
    }
}
