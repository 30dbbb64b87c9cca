//! Errors at the crate boundary: [`GraphError`] for running and building graphs,
//! [`NodeError`] for what a node body returns, [`InvalidUpdateError`] for channel misuse.

use std::fmt;

mod invalid;
pub use crate::interrupt::ResumeError;
pub use invalid::{BreakpointSide, ConfigError, EmptyInputError, GraphProblem, Reach, SendError};

/// LangGraph's troubleshooting codes, carried by the errors that have one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The run needed more supersteps than the recursion limit allows.
    GraphRecursionLimit,
    /// Several writes reached a channel that accepts one per superstep.
    InvalidConcurrentGraphUpdate,
    /// A node returned something that is not a state update.
    InvalidGraphNodeReturnValue,
    /// Several subgraphs were called from one node with the same checkpointer namespace.
    MultipleSubgraphs,
    /// A chat history is not valid for the model.
    InvalidChatHistory,
}

impl ErrorCode {
    /// The code as LangGraph spells it, e.g. `GRAPH_RECURSION_LIMIT`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::GraphRecursionLimit => "GRAPH_RECURSION_LIMIT",
            ErrorCode::InvalidConcurrentGraphUpdate => "INVALID_CONCURRENT_GRAPH_UPDATE",
            ErrorCode::InvalidGraphNodeReturnValue => "INVALID_GRAPH_NODE_RETURN_VALUE",
            ErrorCode::MultipleSubgraphs => "MULTIPLE_SUBGRAPHS",
            ErrorCode::InvalidChatHistory => "INVALID_CHAT_HISTORY",
        }
    }

    /// The troubleshooting page for this code.
    pub fn url(self) -> String {
        format!(
            "https://docs.langchain.com/oss/python/langgraph/errors/{}",
            self.as_str()
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A write that a channel cannot accept (LangGraph's `InvalidUpdateError`).
#[derive(Debug, Clone)]
pub struct InvalidUpdateError {
    message: String,
    code: Option<ErrorCode>,
    /// The error of a reducer that rejected the write.
    reducer_error: Option<std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>>,
}

/// Compares messages and codes (a reducer's error has no equality of its own).
impl PartialEq for InvalidUpdateError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message && self.code == other.code
    }
}

impl Eq for InvalidUpdateError {}

impl InvalidUpdateError {
    /// An error without a troubleshooting code.
    pub fn new(message: impl Into<String>) -> Self {
        InvalidUpdateError {
            message: message.into(),
            code: None,
            reducer_error: None,
        }
    }

    /// The reducer of field `key` rejected a write with `error`.
    pub(crate) fn rejected_by_reducer(
        key: &str,
        error: Box<dyn std::error::Error + Send + Sync + 'static>,
    ) -> Self {
        InvalidUpdateError {
            message: format!("the reducer of `{key}` rejected a write: {error}"),
            code: None,
            reducer_error: Some(std::sync::Arc::from(error)),
        }
    }

    /// The error of the reducer that rejected the write, if a reducer did
    /// (downcast it to the reducer's own error type). Its text is already in
    /// this error's message.
    pub fn reducer_error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.reducer_error.as_deref()
    }

    /// An error with a troubleshooting code.
    pub fn with_code(message: impl Into<String>, code: ErrorCode) -> Self {
        InvalidUpdateError {
            message: message.into(),
            code: Some(code),
            reducer_error: None,
        }
    }

    /// The message without the troubleshooting link.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The troubleshooting code, if any.
    pub fn code(&self) -> Option<ErrorCode> {
        self.code
    }
}

impl fmt::Display for InvalidUpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(code) = self.code {
            write!(f, "\nFor troubleshooting, visit: {}", code.url())?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidUpdateError {}

/// Reading a channel that holds no value (LangGraph's `EmptyChannelError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the channel is empty: nothing has been written to it yet")]
pub struct EmptyChannelError;

/// The error a node body returns.
///
/// Every `std::error::Error + Send + Sync + 'static` converts into it with `?`, so tool
/// errors, I/O errors and your own error types mix freely in one node:
///
/// ```
/// use stategraph::NodeError;
///
/// fn parse(s: &str) -> Result<u32, NodeError> {
///     let n: u32 = s.trim().parse()?; // ParseIntError -> NodeError
///     if n == 0 {
///         return Err(NodeError::msg("zero is not a valid step count"));
///     }
///     Ok(n)
/// }
/// assert!(parse("7").is_ok());
/// assert_eq!(parse("0").unwrap_err().to_string(), "zero is not a valid step count");
/// ```
///
/// Like `anyhow::Error`, it does not implement `std::error::Error` itself (that would
/// conflict with the blanket conversion); [`GraphError`] wraps it and exposes it as a source.
///
/// An error is *transient* ([`is_transient`](NodeError::is_transient)) when running
/// the node again may succeed; the default [`RetryPolicy`](crate::RetryPolicy)
/// retries only those.
pub struct NodeError {
    inner: Box<dyn std::error::Error + Send + Sync + 'static>,
    /// Marked transient by [`NodeError::transient`].
    transient: bool,
}

impl NodeError {
    /// An error from a plain message.
    pub fn msg(message: impl fmt::Display) -> Self {
        NodeError::new(Box::new(MessageError(message.to_string())))
    }

    fn new(inner: Box<dyn std::error::Error + Send + Sync + 'static>) -> Self {
        NodeError {
            inner,
            transient: false,
        }
    }

    /// `error`, marked transient: running the node again may succeed (a rate
    /// limit, a service that is restarting, a lock held elsewhere), so the
    /// default [`RetryPolicy`](crate::RetryPolicy) retries it. The error keeps
    /// its type: [`is`](NodeError::is) and [`downcast_ref`](NodeError::downcast_ref)
    /// see `error`, and so does the source of [`GraphError::NodeFailed`].
    ///
    /// ```
    /// use stategraph::NodeError;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("the quota service answered {0}")]
    /// struct Quota(u16);
    ///
    /// let busy = NodeError::transient(Quota(503));
    /// assert!(busy.is_transient() && busy.is::<Quota>());
    /// assert!(!NodeError::from(Quota(400)).is_transient());
    /// ```
    pub fn transient(error: impl Into<NodeError>) -> Self {
        let mut error = error.into();
        error.transient = true;
        error
    }

    /// Whether running the node again may succeed — what the default
    /// [`RetryPolicy`](crate::RetryPolicy) retries. True for an error made with
    /// [`NodeError::transient`], a [`NodeTimeout`], and an error whose
    /// [`source`](std::error::Error::source) chain holds a [`std::io::Error`] of
    /// a connection kind (refused, reset, aborted, not connected, broken pipe,
    /// timed out, host or network unreachable); false for every other error, your
    /// own types included until you mark them. Interrupts are never transient.
    ///
    /// ```
    /// use stategraph::NodeError;
    /// use std::io::{Error, ErrorKind};
    ///
    /// let reset = NodeError::from(Error::from(ErrorKind::ConnectionReset));
    /// assert!(reset.is_transient());
    /// let missing = NodeError::from(Error::from(ErrorKind::NotFound));
    /// assert!(!missing.is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        if self.is_interrupt() {
            return false;
        }
        if self.transient {
            return true;
        }
        let mut link: Option<&(dyn std::error::Error + 'static)> = Some(&*self.inner);
        while let Some(error) = link {
            if error.is::<NodeTimeout>()
                || matches!(
                    error.downcast_ref::<GraphError>(),
                    Some(GraphError::NodeFailed {
                        transient: true,
                        ..
                    })
                )
            {
                return true;
            }
            if let Some(io) = error.downcast_ref::<std::io::Error>()
                && transient_io_kind(io.kind())
            {
                return true;
            }
            link = error.source();
        }
        false
    }

    /// The underlying error.
    pub fn source_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.inner
    }

    /// Whether the underlying error is of type `E`.
    pub fn is<E: std::error::Error + 'static>(&self) -> bool {
        self.inner.is::<E>()
    }

    /// The underlying error as `E`, if it is one.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.inner.downcast_ref::<E>()
    }

    pub(crate) fn into_boxed(self) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self.inner
    }

    /// The signal of a node that paused at `interrupt` calls (its own, or those of
    /// a subgraph it ran).
    pub(crate) fn interrupts(interrupts: Vec<crate::interrupt::Interrupt>) -> Self {
        NodeError::new(Box::new(crate::interrupt::InterruptSignal(interrupts)))
    }

    /// Whether this is the pause of an [`interrupt`](crate::Context::interrupt)
    /// call rather than a failure. Interrupts are never retried.
    pub fn is_interrupt(&self) -> bool {
        self.inner.is::<crate::interrupt::InterruptSignal>()
    }

    /// The signal of a node that ran a subgraph whose node returned a command for
    /// its parent: this task's result is that command.
    pub(crate) fn parent(route: crate::command::ParentRoute) -> Self {
        NodeError::new(Box::new(ParentSignal(Some(route))))
    }

    /// The signal of a node whose subgraph handed a command to this graph,
    /// the command being recorded in the task's context already.
    pub(crate) fn parent_raised() -> Self {
        NodeError::new(Box::new(ParentSignal(None)))
    }

    /// The command for this task's graph this error carries, or the error itself.
    pub(crate) fn into_parent(self) -> Result<crate::command::ParentRoute, Self> {
        match self.inner.downcast::<ParentSignal>() {
            Ok(signal) => match signal.0 {
                Some(route) => Ok(route),
                None => Err(NodeError::parent_raised()),
            },
            Err(inner) => Err(NodeError {
                inner,
                transient: self.transient,
            }),
        }
    }

    /// The interrupts this error signals, or the error itself.
    pub(crate) fn into_interrupts(self) -> Result<Vec<crate::interrupt::Interrupt>, Self> {
        match self.inner.downcast::<crate::interrupt::InterruptSignal>() {
            Ok(signal) => Ok(signal.0),
            Err(inner) => Err(NodeError {
                inner,
                transient: self.transient,
            }),
        }
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for NodeError {
    fn from(error: E) -> Self {
        NodeError::new(Box::new(error))
    }
}

/// The `std::io::Error` kinds of a connection that failed but may work when
/// tried again (LangGraph's default retries Python's `ConnectionError`).
fn transient_io_kind(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind;
    matches!(
        kind,
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::TimedOut
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
    )
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

/// A subgraph's command for the graph of the task that ran it, travelling up
/// through `?` in the task's node (`None`: recorded in the task's context, where
/// the engine takes it from).
#[derive(Debug)]
struct ParentSignal(Option<crate::command::ParentRoute>);

impl fmt::Display for ParentSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a subgraph handed a command to this node's graph (Command::to_parent); return this \
             error with `?` so the command takes effect",
        )
    }
}

impl std::error::Error for ParentSignal {}

#[derive(Debug)]
struct MessageError(String);

impl fmt::Display for MessageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MessageError {}

/// A node attempt that ran longer than its timeout
/// ([`NodeOptions::timeout`](crate::NodeOptions::timeout)): cancelled, or for a
/// sync node abandoned.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "node `{node}` did not finish within its timeout of {limit:?} and was {}",
    if *abandoned {
        "abandoned: a sync node cannot be interrupted, so it runs to its end in the background \
         and its result is discarded"
    } else {
        "cancelled"
    }
)]
#[non_exhaustive]
pub struct NodeTimeout {
    /// The node.
    pub node: String,
    /// Its timeout.
    pub limit: std::time::Duration,
    /// Whether the attempt was a sync node's, left running on tokio's blocking
    /// pool rather than cancelled: its side effects still happen.
    pub abandoned: bool,
}

/// Where code of yours that the engine calls outside a node's body panicked
/// ([`GraphError::Panicked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PanicSite {
    /// The reducer of a state field (`#[reducer(f)]`), folding the writes of
    /// superstep `step` (for a field without a reducer: the `Drop` of a value a
    /// write replaced).
    Reducer {
        /// The field.
        field: String,
        /// The superstep whose writes were being applied.
        step: i64,
    },
    /// A router of a conditional edge from `node` (`add_conditional_edges`),
    /// choosing where task `task_id` of superstep `step` goes next.
    Router {
        /// The node the conditional edge leaves.
        node: String,
        /// The task whose routes were being resolved (empty for `update_state`).
        task_id: String,
        /// The superstep.
        step: i64,
    },
    /// A `Serialize` impl, while the checkpoint of superstep `step` or a task's
    /// writes were stored (or a cached node's input was hashed).
    Serializing {
        /// The value being serialised.
        value: SerdeValue,
        /// The superstep.
        step: i64,
    },
    /// A `Deserialize` impl, while checkpoint `checkpoint_id` or its pending
    /// writes were read.
    Deserializing {
        /// The value being deserialised.
        value: SerdeValue,
        /// The checkpoint being read.
        checkpoint_id: String,
    },
    /// The `retry_on` predicate of `node`'s retry policy, deciding whether a
    /// failed attempt of task `task_id` runs again.
    RetryPredicate {
        /// The node.
        node: String,
        /// The task whose attempt failed.
        task_id: String,
        /// The superstep.
        step: i64,
    },
    /// Elsewhere in the run, outside the places above: a `Clone`, `Default` or
    /// `Drop` impl of the state, a checkpointer, or the engine itself.
    Run,
}

impl fmt::Display for PanicSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PanicSite::Reducer { field, step } => {
                write!(f, "the reducer of field `{field}` (step {step})")
            }
            PanicSite::Router {
                node,
                task_id,
                step,
            } if task_id.is_empty() => write!(
                f,
                "the router of a conditional edge from node `{node}` (update_state, step {step})"
            ),
            PanicSite::Router {
                node,
                task_id,
                step,
            } => write!(
                f,
                "the router of a conditional edge from node `{node}` (task {task_id}, step {step})"
            ),
            PanicSite::Serializing { value, step } => {
                write!(f, "the Serialize impl of {value} (step {step})")
            }
            PanicSite::Deserializing {
                value,
                checkpoint_id,
            } => write!(
                f,
                "the Deserialize impl of {value} (reading checkpoint {checkpoint_id})"
            ),
            PanicSite::RetryPredicate {
                node,
                task_id,
                step,
            } => write!(
                f,
                "the retry_on predicate of node `{node}`'s retry policy (task {task_id}, step \
                 {step})"
            ),
            PanicSite::Run => f.write_str(
                "code the run called outside its nodes (a Clone, Default or Drop impl of the \
                 state, or a checkpointer)",
            ),
        }
    }
}

/// The value whose `Serialize` or `Deserialize` impl panicked ([`PanicSite`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SerdeValue {
    /// A state field: its value, or a write to it.
    StateField(String),
    /// The payload of a `Send` to this node.
    SendPayload(String),
    /// The input of this node, hashed for its cache key.
    CacheKey(String),
}

impl fmt::Display for SerdeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SerdeValue::StateField(field) => write!(f, "field `{field}`"),
            SerdeValue::SendPayload(node) => write!(f, "the payload of a Send to `{node}`"),
            SerdeValue::CacheKey(node) => write!(f, "the input of node `{node}` (its cache key)"),
        }
    }
}

/// Everything that can go wrong building or running a graph.
///
/// Match on the variant for what a program can act on; its fields carry the
/// facts, and its message names them with the fix:
///
/// ```
/// use stategraph::error::GraphProblem;
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Job { done: bool }
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("the tool is down")]
/// struct ToolDown;
///
/// #[node]
/// fn work(_: &Job) -> Result<JobUpdate, ToolDown> { Err(ToolDown) }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // compile() reports every problem at once.
/// let Err(GraphError::InvalidGraph { problems }) =
///     StateGraph::<Job>::new().add_node(work).add_edge(work, "ghost").compile()
/// else {
///     panic!("the graph is invalid")
/// };
/// assert!(problems.contains(&GraphProblem::NoEntrypoint));
///
/// // A node's error keeps its type: downcast the source.
/// let app = StateGraph::<Job>::new().add_node(work).add_edge(START, work).compile().unwrap();
/// match app.invoke(Job::update(), &RunConfig::new()).await {
///     Err(GraphError::NodeFailed { node, source, .. }) => {
///         assert_eq!(node, "work");
///         assert!(source.is::<ToolDown>());
///     }
///     other => panic!("expected NodeFailed, got {other:?}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The graph definition is invalid; raised by `compile()` with every problem found.
    #[error("invalid graph:\n{}", ProblemList(problems))]
    InvalidGraph {
        /// Every problem found; each one's message names the node or edge and
        /// the fix.
        problems: Vec<GraphProblem>,
    },

    /// A write a channel cannot accept, e.g. two writes to a field without a reducer.
    #[error(transparent)]
    InvalidUpdate(#[from] InvalidUpdateError),

    /// The run hit the recursion limit.
    #[error(
        "Recursion limit of {limit} reached without hitting a stop condition. You can increase \
         the limit by setting the `recursion_limit` config key.\nFor troubleshooting, visit: \
         https://docs.langchain.com/oss/python/langgraph/errors/GRAPH_RECURSION_LIMIT"
    )]
    RecursionLimit {
        /// The limit in force.
        limit: u64,
    },

    /// The run was started with no input and had nothing to resume.
    #[error("{0}")]
    EmptyInput(EmptyInputError),

    /// A node failed. Its error is the [`source`](std::error::Error::source),
    /// not part of this message, so a reporter that prints the chain prints it
    /// once.
    #[error("node `{node}` failed (task {task_id}, step {step})")]
    NodeFailed {
        /// The node's name.
        node: String,
        /// The failed task's id.
        task_id: String,
        /// The superstep in which it failed.
        step: i64,
        /// What the node returned.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
        /// Whether that error was transient ([`NodeError::is_transient`]); when
        /// this graph runs as a subgraph, its parent's node fails with a
        /// transient error too, so the parent's default retry policy retries it.
        transient: bool,
    },

    /// A node panicked; the panic was caught and the run stopped.
    #[error("node `{node}` panicked (task {task_id}, step {step}): {message}")]
    NodePanicked {
        /// The node's name.
        node: String,
        /// The task's id.
        task_id: String,
        /// The superstep.
        step: i64,
        /// The panic payload, when it was a string.
        message: String,
    },

    /// The router of a conditional edge from `node` returned `Err` (a router
    /// returning `Result`). The error is the
    /// [`source`](std::error::Error::source). As when a router panics, the run
    /// stopped without applying the step: with a checkpointer the thread keeps
    /// its last checkpoint, and invoking it again runs `node`'s task again.
    #[error("the router of a conditional edge from node `{node}` failed ({})", RouterAt(task_id, *step))]
    RouterFailed {
        /// The node the conditional edge leaves.
        node: String,
        /// The router's type name (its fn's path, or the closure's).
        router: String,
        /// The task whose routes were being resolved (empty for `update_state`).
        task_id: String,
        /// The superstep.
        step: i64,
        /// What the router returned.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },

    /// The router of a conditional edge from `node` returned `key`, which its
    /// path map ([`PathMap`](crate::PathMap)) does not have (LangGraph raises
    /// `KeyError`). The run stopped without applying the step, as for
    /// [`RouterFailed`](Self::RouterFailed).
    #[error(
        "the router `{router}` of a conditional edge from node `{node}` returned `{key}`, which \
         is not a key of its path map (keys: {}): add `{key}` to the path map, or return one of \
         its keys",
        keys.join(", ")
    )]
    UnmappedRoute {
        /// The node the conditional edge leaves.
        node: String,
        /// The router's type name (its fn's path, or the closure's).
        router: String,
        /// What the router returned (`__end__` for `END`).
        key: String,
        /// The path map's keys.
        keys: Vec<String>,
    },

    /// Code of yours that the engine runs outside a node's body panicked: a
    /// reducer, a router, a `Serialize` or `Deserialize` impl, a retry predicate
    /// ([`PanicSite`] says which, and where). The panic was caught and the run
    /// stopped without applying the step it happened in (tasks of that step
    /// that completed keep their writes, as when a node fails): with a
    /// checkpointer the thread stays at its last checkpoint, which `get_state`
    /// shows, and continues from it once the code is fixed.
    #[error(
        "{site} panicked: {message}; the run stopped and the thread keeps its last checkpoint \
         — fix the code that panicked, then invoke the thread again to continue"
    )]
    Panicked {
        /// What panicked, and where.
        site: PanicSite,
        /// The panic payload, when it was a string.
        message: String,
    },

    /// A `Send` or route named a node whose input type differs from what was sent.
    #[error("{0}")]
    InvalidSend(SendError),

    /// A configuration value is out of range, or a request about a thread
    /// cannot be served.
    #[error("invalid run configuration: {0}")]
    InvalidConfig(ConfigError),

    /// The checkpointer failed, or stored data could not be read back.
    #[error(transparent)]
    Checkpoint(crate::checkpoint::CheckpointError),

    /// A `Command::resume` that cannot be applied: no pending interrupt to answer,
    /// several pending interrupts and a single value, or an unknown interrupt id.
    #[error("{0}")]
    InvalidResume(ResumeError),

    /// A node returned a command for the parent graph (`Command::to_parent`), but
    /// its graph was not running as a subgraph.
    #[error(
        "node `{node}` returned a command for the parent graph (Command::to_parent), but \
         There is no parent graph: this graph is not running as a subgraph"
    )]
    ParentCommand {
        /// The node.
        node: String,
        /// Its task's id.
        task_id: String,
        /// The command.
        command: crate::command::ParentRoute,
    },

    /// Another run of the same thread (and namespace) is in progress in this
    /// process, or in another process when the saver locks threads
    /// (`Checkpointer::begin_run`, e.g. PostgresSaver): runs of one thread must
    /// not overlap.
    #[error(
        "thread `{thread_id}` is already running{}: runs of one thread must not overlap — wait \
         for the other run to finish, or use another thread id (workers that should wait \
         instead hold the saver's lock around their runs, e.g. PostgresSaver::lock_thread)",
        if checkpoint_ns.is_empty() { String::new() } else { format!(" in namespace `{checkpoint_ns}` (several tasks of one step run the same persistent subgraph)") }
    )]
    ThreadBusy {
        /// The thread.
        thread_id: String,
        /// The namespace (`""` for the root graph).
        checkpoint_ns: String,
    },

    /// The run lost its thread while it ran: another run took the thread over
    /// (usually a worker in another process, after this run's lock was lost to
    /// a dropped connection or a server timeout), or the thread was deleted or
    /// pruned meanwhile. The run stopped at the write that found out, and stored
    /// nothing from then on; what it stored before stays, and the thread's
    /// history does not fork.
    #[error(
        "thread `{thread_id}` was taken from this run (lease owner `{owner}`): {reason}; the run \
         stopped and stored nothing more — invoke the thread again to continue from its latest \
         checkpoint"
    )]
    LeaseLost {
        /// The thread.
        thread_id: String,
        /// The lease owner id of this run.
        owner: String,
        /// What happened to the lease.
        reason: String,
    },

    /// An operation needs a checkpointer and the graph has none.
    #[error("No checkpointer set: compile the graph with `compile_with(saver)` to use {0}")]
    NoCheckpointer(&'static str),

    /// A node called `interrupt` in a run without a checkpointer, where the
    /// pause could never be answered. LangGraph returns such an interrupt and
    /// fails only at the resume; stategraph fails at the step that asked.
    #[error(
        "node `{node}` called interrupt (step {step}), but the graph has no checkpointer to keep \
         the pause until it is answered: compile the graph with `compile_with(saver)` and run it \
         on a thread (`RunConfig::thread(id)`)"
    )]
    InterruptWithoutCheckpointer {
        /// The node that asked (the first one, when several did).
        node: String,
        /// The step it ran in.
        step: i64,
        /// What it asked, as given to `interrupt` (JSON).
        value: serde_json::Value,
    },
}

/// Where a router ran: its task and step (`update_state` has no task).
struct RouterAt<'a>(&'a str, i64);

impl fmt::Display for RouterAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            "" => write!(f, "update_state, step {}", self.1),
            task_id => write!(f, "task {task_id}, step {}", self.1),
        }
    }
}

/// `compile()`'s problems, one per line.
struct ProblemList<'a>(&'a [GraphProblem]);

impl fmt::Display for ProblemList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl From<crate::checkpoint::CheckpointError> for GraphError {
    /// A saver's refusal to let this run touch the thread becomes the engine's
    /// error for it ([`GraphError::ThreadBusy`], [`GraphError::LeaseLost`]); every
    /// other checkpointer error is [`GraphError::Checkpoint`].
    fn from(e: crate::checkpoint::CheckpointError) -> Self {
        use crate::checkpoint::CheckpointError;
        match e {
            CheckpointError::ThreadBusy { thread_id } => GraphError::ThreadBusy {
                thread_id,
                checkpoint_ns: String::new(),
            },
            CheckpointError::LeaseLost {
                thread_id,
                owner,
                reason,
            } => GraphError::LeaseLost {
                thread_id,
                owner,
                reason,
            },
            e => GraphError::Checkpoint(e),
        }
    }
}

impl GraphError {
    /// The message with the node's own error after it, as stored for a failed
    /// task and shown in its `tasks` result (`node `x` failed (..): boom`).
    pub(crate) fn task_error_text(&self) -> String {
        match self {
            GraphError::NodeFailed { source, .. } => format!("{self}: {source}"),
            other => other.to_string(),
        }
    }

    /// The task this failure belongs to, when one task of a step failed: its
    /// error is stored with the step's pending writes and reported as its result.
    pub(crate) fn failed_task(&self) -> Option<&str> {
        match self {
            GraphError::NodeFailed { task_id, .. }
            | GraphError::NodePanicked { task_id, .. }
            | GraphError::Panicked {
                site: PanicSite::RetryPredicate { task_id, .. },
                ..
            } => Some(task_id),
            _ => None,
        }
    }

    /// The LangGraph troubleshooting code of this error, if it has one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            GraphError::InvalidUpdate(e) => e.code(),
            GraphError::RecursionLimit { .. } => Some(ErrorCode::GraphRecursionLimit),
            GraphError::ThreadBusy { checkpoint_ns, .. } if !checkpoint_ns.is_empty() => {
                Some(ErrorCode::MultipleSubgraphs)
            }
            _ => None,
        }
    }
}
