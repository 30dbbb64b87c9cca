//! [`RunConfig`]: per-run settings (thread, recursion limit, metadata), and
//! [`SubgraphCheckpoints`]: where a subgraph keeps its checkpoints.

use crate::checkpoint::SharedStr;
use crate::interrupt::Breakpoints;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The recursion limit used when none is set: LangGraph's default, overridable with
/// the `LANGGRAPH_DEFAULT_RECURSION_LIMIT` environment variable. This reads the
/// environment at each call; a [`RunConfig`] takes the value the process's
/// first one read.
pub fn default_recursion_limit() -> u64 {
    std::env::var("LANGGRAPH_DEFAULT_RECURSION_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(10_007)
}

/// [`default_recursion_limit`] as the process's first config read it: the
/// environment is read once, as LangGraph reads it once, at import.
fn process_recursion_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(default_recursion_limit)
}

/// When a run stores its checkpoints (docs/semantics.md §2.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// Every checkpoint is stored before a node of a later superstep runs, and
    /// the last one before the run returns (with the release of the thread,
    /// in one call when the saver can).
    Sync,
    /// Checkpoints are stored in the background while the next superstep runs,
    /// in order; the run waits for the last one before it returns.
    #[default]
    Async,
    /// Only the final checkpoint is stored, when the run ends (or fails); the
    /// writes of tasks that completed are stored too when a step fails.
    Exit,
}

/// Settings of one `invoke` / `stream` call.
///
/// Cheap to clone: the settings are shared (an `Arc`), and a run keeps the
/// caller's instead of copying them; the `with_*` methods copy them only when
/// another clone still shares them.
///
/// ```
/// use stategraph::RunConfig;
///
/// let config = RunConfig::thread("t-1")
///     .with_recursion_limit(50)
///     .with_metadata("user", "ada");
/// assert_eq!(config.thread_id(), Some("t-1"));
/// assert_eq!(config.recursion_limit(), 50);
/// assert_eq!(config.metadata()["user"], "ada");
/// ```
#[derive(Clone, PartialEq)]
pub struct RunConfig(Arc<Settings>);

/// The settings a [`RunConfig`] shares.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    thread_id: Option<SharedStr>,
    checkpoint_id: Option<SharedStr>,
    checkpoint_ns: SharedStr,
    recursion_limit: u64,
    metadata: Map<String, Value>,
    configurable: Map<String, Value>,
    durability: Durability,
    interrupt_before: Option<Breakpoints>,
    interrupt_after: Option<Breakpoints>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            thread_id: None,
            checkpoint_id: None,
            checkpoint_ns: SharedStr::default(),
            recursion_limit: process_recursion_limit(),
            metadata: Map::new(),
            configurable: Map::new(),
            durability: Durability::default(),
            interrupt_before: None,
            interrupt_after: None,
        }
    }
}

impl std::fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &*self.0;
        f.debug_struct("RunConfig")
            .field("thread_id", &s.thread_id)
            .field("checkpoint_id", &s.checkpoint_id)
            .field("checkpoint_ns", &s.checkpoint_ns)
            .field("recursion_limit", &s.recursion_limit)
            .field("metadata", &s.metadata)
            .field("configurable", &s.configurable)
            .field("durability", &s.durability)
            .field("interrupt_before", &s.interrupt_before)
            .field("interrupt_after", &s.interrupt_after)
            .finish()
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig(Arc::new(Settings::default()))
    }
}

impl RunConfig {
    /// A config with no thread (for graphs without a checkpointer).
    pub fn new() -> Self {
        Self::default()
    }

    /// A config for the thread `thread_id`.
    pub fn thread(thread_id: impl ToString) -> Self {
        RunConfig(Arc::new(Settings {
            thread_id: Some(SharedStr::from(thread_id.to_string())),
            ..Settings::default()
        }))
    }

    /// A config addressing a stored checkpoint (e.g. the one `update_state`
    /// returned), to run or read from it.
    pub fn at_checkpoint(checkpoint: &crate::checkpoint::CheckpointConfig) -> Self {
        RunConfig(Arc::new(Settings {
            thread_id: Some(checkpoint.thread_id.clone()),
            checkpoint_id: checkpoint.checkpoint_id.clone(),
            checkpoint_ns: checkpoint.checkpoint_ns.clone(),
            ..Settings::default()
        }))
    }

    /// The settings, to change (copied first if another clone shares them).
    fn settings(&mut self) -> &mut Settings {
        Arc::make_mut(&mut self.0)
    }

    /// Sets the maximum number of supersteps (at least 1).
    pub fn with_recursion_limit(mut self, limit: u64) -> Self {
        self.settings().recursion_limit = limit;
        self
    }

    /// Addresses a specific checkpoint of the thread (time travel).
    pub fn with_checkpoint_id(mut self, id: impl Into<SharedStr>) -> Self {
        self.settings().checkpoint_id = Some(id.into());
        self
    }

    /// Sets the checkpoint namespace (`""` for the root graph).
    pub fn with_checkpoint_ns(mut self, ns: impl Into<SharedStr>) -> Self {
        self.settings().checkpoint_ns = ns.into();
        self
    }

    /// Adds a metadata entry, stored with the run's checkpoints.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.settings().metadata.insert(key.into(), value.into());
        self
    }

    /// Adds a `configurable` entry, visible to nodes through their context.
    pub fn with_configurable(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.settings()
            .configurable
            .insert(key.into(), value.into());
        self
    }

    /// Sets when checkpoints are stored.
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.settings().durability = durability;
        self
    }

    /// Stops this run before the given nodes run, instead of the graph's own
    /// `interrupt_before` (`Breakpoints::All` for every node). Resume with
    /// `invoke(None, ..)`.
    pub fn with_interrupt_before(mut self, nodes: Breakpoints) -> Self {
        self.settings().interrupt_before = Some(nodes);
        self
    }

    /// Stops this run after the given nodes ran, instead of the graph's own
    /// `interrupt_after`.
    pub fn with_interrupt_after(mut self, nodes: Breakpoints) -> Self {
        self.settings().interrupt_after = Some(nodes);
        self
    }

    /// The config of a graph nested in a task of this run: same thread, limits
    /// and metadata, its own namespace; no checkpoint id and no per-call
    /// breakpoints (they address the root graph).
    pub(crate) fn for_nested(&self, ns: SharedStr) -> Self {
        RunConfig(Arc::new(Settings {
            checkpoint_ns: ns,
            checkpoint_id: None,
            interrupt_before: None,
            interrupt_after: None,
            ..(*self.0).clone()
        }))
    }

    /// The thread id as shared text, if any (a run's checkpoint configs
    /// share it).
    pub(crate) fn shared_thread_id(&self) -> Option<&SharedStr> {
        self.0.thread_id.as_ref()
    }

    /// The checkpoint id as shared text, if any.
    pub(crate) fn shared_checkpoint_id(&self) -> Option<&SharedStr> {
        self.0.checkpoint_id.as_ref()
    }

    /// The checkpoint namespace as shared text.
    pub(crate) fn shared_checkpoint_ns(&self) -> &SharedStr {
        &self.0.checkpoint_ns
    }

    /// The call's `interrupt_before`, if set.
    pub fn interrupt_before(&self) -> Option<&Breakpoints> {
        self.0.interrupt_before.as_ref()
    }

    /// The call's `interrupt_after`, if set.
    pub fn interrupt_after(&self) -> Option<&Breakpoints> {
        self.0.interrupt_after.as_ref()
    }

    /// The durability mode.
    pub fn durability(&self) -> Durability {
        self.0.durability
    }

    /// The thread id, if any.
    pub fn thread_id(&self) -> Option<&str> {
        self.0.thread_id.as_deref()
    }

    /// The addressed checkpoint id, if any.
    pub fn checkpoint_id(&self) -> Option<&str> {
        self.0.checkpoint_id.as_deref()
    }

    /// The checkpoint namespace.
    pub fn checkpoint_ns(&self) -> &str {
        &self.0.checkpoint_ns
    }

    /// The recursion limit.
    pub fn recursion_limit(&self) -> u64 {
        self.0.recursion_limit
    }

    /// The metadata entries.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.0.metadata
    }

    /// The `configurable` entries.
    pub fn configurable(&self) -> &Map<String, Value> {
        &self.0.configurable
    }

    // The getters' earlier names, kept so code written against them still
    // compiles (with a warning).

    #[doc(hidden)]
    #[deprecated(note = "use `interrupt_before()`: getters have no `get_` prefix")]
    pub fn get_interrupt_before(&self) -> Option<&Breakpoints> {
        self.interrupt_before()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `interrupt_after()`: getters have no `get_` prefix")]
    pub fn get_interrupt_after(&self) -> Option<&Breakpoints> {
        self.interrupt_after()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `durability()`: getters have no `get_` prefix")]
    pub fn get_durability(&self) -> Durability {
        self.durability()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `checkpoint_id()`: getters have no `get_` prefix")]
    pub fn get_checkpoint_id(&self) -> Option<&str> {
        self.checkpoint_id()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `checkpoint_ns()`: getters have no `get_` prefix")]
    pub fn get_checkpoint_ns(&self) -> &str {
        self.checkpoint_ns()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `recursion_limit()`: getters have no `get_` prefix")]
    pub fn get_recursion_limit(&self) -> u64 {
        self.recursion_limit()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `metadata()`: getters have no `get_` prefix")]
    pub fn get_metadata(&self) -> &Map<String, Value> {
        self.metadata()
    }

    #[doc(hidden)]
    #[deprecated(note = "use `configurable()`: getters have no `get_` prefix")]
    pub fn get_configurable(&self) -> &Map<String, Value> {
        self.configurable()
    }
}

/// Where a subgraph keeps its checkpoints (LangGraph's `checkpointer=None / True
/// / False` on the subgraph).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SubgraphCheckpoints {
    /// The caller's saver, in a namespace of the calling task: every call starts
    /// from its input; its checkpoints are kept, and an interrupt inside it can be
    /// resumed. The default.
    #[default]
    PerCall,
    /// The caller's saver, in a namespace named after the node (without task
    /// ids): the subgraph's state carries over from one call to the next on the
    /// same thread.
    Persistent,
    /// Nothing is stored: an interrupt inside cannot be resumed.
    Off,
}
