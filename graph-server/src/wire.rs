//! Request and response bodies of LangGraph Server's API, as the
//! `langgraph-sdk` client sends and reads them. Their JSON Schemas make the
//! server's `/openapi.json` (see `openapi.rs`).

use graph_core::interrupt::Breakpoints;
use graph_core::StreamMode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A run's `command`: resume an interrupt, update the state, route.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CommandBody {
    /// The update, an object of the state's fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<Box<RawValue>>,
    /// The answer to the pending interrupt(s) (an object keyed by interrupt id
    /// answers several).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Value>,
    /// Nodes to go to.
    #[serde(default, skip_serializing_if = "Goto::is_none")]
    pub goto: Goto,
}

/// `command.goto`: one node name or several.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Goto {
    /// No goto.
    #[default]
    None,
    /// One node.
    One(String),
    /// Several nodes.
    Many(Vec<String>),
}

impl Goto {
    fn is_none(&self) -> bool {
        matches!(self, Goto::None)
    }

    /// The node names.
    pub fn names(&self) -> &[String] {
        match self {
            Goto::None => &[],
            Goto::One(name) => std::slice::from_ref(name),
            Goto::Many(names) => names,
        }
    }
}

/// A `stream_mode` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StreamModeName {
    /// The state after each step.
    Values,
    /// Each node's update.
    Updates,
    /// Chat model chunks, as `(chunk, metadata)` tuples.
    Messages,
    /// The same as `messages`: LangGraph Server's name for the tuple form.
    MessagesTuple,
    /// Values nodes write with `write_custom`.
    Custom,
    /// Checkpoints and tasks, wrapped with their step.
    Debug,
    /// Each checkpoint.
    Checkpoints,
    /// Each task as it starts and finishes.
    Tasks,
}

impl StreamModeName {
    /// The engine's mode.
    pub fn mode(self) -> StreamMode {
        match self {
            StreamModeName::Values => StreamMode::Values,
            StreamModeName::Updates => StreamMode::Updates,
            StreamModeName::Messages | StreamModeName::MessagesTuple => StreamMode::Messages,
            StreamModeName::Custom => StreamMode::Custom,
            StreamModeName::Debug => StreamMode::Debug,
            StreamModeName::Checkpoints => StreamMode::Checkpoints,
            StreamModeName::Tasks => StreamMode::Tasks,
        }
    }
}

/// One value or a list of them (`stream_mode`, `interrupt_before`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// One.
    One(T),
    /// Several.
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    /// As a list.
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(one) => vec![one.clone()],
            OneOrMany::Many(many) => many.clone(),
        }
    }
}

/// What a run does when its thread is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MultitaskStrategy {
    /// Refuse the run (409).
    Reject,
    /// Cancel the running run, keeping its checkpoints, then run.
    Interrupt,
    /// Cancel the running run and delete it and its checkpoints, then run.
    Rollback,
    /// Run after the runs before it.
    #[default]
    Enqueue,
}

/// A run's `if_not_exists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IfNotExists {
    /// 404 for an unknown thread.
    #[default]
    Reject,
    /// Create the thread.
    Create,
}

/// A streaming run's `on_disconnect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnDisconnect {
    /// Cancel the run when the client goes away.
    Cancel,
    /// Keep running.
    #[default]
    Continue,
}

/// A stateless run's `on_completion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnCompletion {
    /// Delete the temporary thread.
    #[default]
    Delete,
    /// Keep it.
    Keep,
}

/// `interrupt_before` / `interrupt_after`: `"*"` or node names.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum BreakpointsBody {
    /// `"*"`.
    All(String),
    /// Node names.
    Nodes(Vec<String>),
}

impl BreakpointsBody {
    /// The engine's breakpoints.
    pub fn to_breakpoints(&self) -> Breakpoints {
        match self {
            BreakpointsBody::All(_) => Breakpoints::All,
            BreakpointsBody::Nodes(nodes) => Breakpoints::nodes(nodes.iter().cloned()),
        }
    }
}

/// A checkpoint address in a body.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointBody {
    /// The checkpoint.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
    /// Its namespace.
    #[serde(default)]
    pub checkpoint_ns: Option<String>,
    /// The thread (ignored: the path names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// The body of `POST /threads/{id}/runs[/wait|/stream]` and `/runs[...]`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunCreate {
    /// The assistant id or graph name.
    pub assistant_id: String,
    /// The graph's input.
    #[serde(default)]
    pub input: Option<Box<RawValue>>,
    /// A command instead of input.
    #[serde(default)]
    pub command: Option<CommandBody>,
    /// What to stream.
    #[serde(default)]
    pub stream_mode: Option<OneOrMany<StreamModeName>>,
    /// Stream subgraph events too.
    #[serde(default)]
    pub stream_subgraphs: bool,
    /// Keep the events for replay after the run.
    #[serde(default)]
    pub stream_resumable: bool,
    /// The run's metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// The run's config (`configurable`, `recursion_limit`).
    #[serde(default)]
    pub config: Option<Value>,
    /// The run's context (kept, not given to the graph).
    #[serde(default)]
    pub context: Option<Value>,
    /// Run from this checkpoint.
    #[serde(default)]
    pub checkpoint: Option<CheckpointBody>,
    /// Run from this checkpoint id.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
    /// Breakpoints before nodes.
    #[serde(default)]
    pub interrupt_before: Option<BreakpointsBody>,
    /// Breakpoints after nodes.
    #[serde(default)]
    pub interrupt_after: Option<BreakpointsBody>,
    /// What to do when the thread is busy.
    #[serde(default)]
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// What to do when the thread does not exist.
    #[serde(default)]
    pub if_not_exists: Option<IfNotExists>,
    /// What to do when a streaming client disconnects.
    #[serde(default)]
    pub on_disconnect: Option<OnDisconnect>,
    /// Whether a stateless run's thread is deleted after it.
    #[serde(default)]
    pub on_completion: Option<OnCompletion>,
    /// `sync`, `async` or `exit`.
    #[serde(default)]
    pub durability: Option<String>,
}

impl RunCreate {
    /// The stream modes asked for (`values` by default).
    pub fn modes(&self) -> Vec<StreamModeName> {
        self.stream_mode
            .as_ref()
            .map_or_else(|| vec![StreamModeName::Values], OneOrMany::to_vec)
    }
}

/// `POST /threads`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ThreadCreate {
    /// The id (random when absent).
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Its metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// `raise` (409) or `do_nothing` when it exists.
    #[serde(default)]
    pub if_exists: Option<String>,
}

/// `PATCH /threads/{id}`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ThreadPatch {
    /// Merged into the thread's metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// `POST /threads/search` and `/threads/count`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ThreadSearch {
    /// Threads whose metadata has all of these entries.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// Threads whose values have all of these entries.
    #[serde(default)]
    pub values: Option<Map<String, Value>>,
    /// Threads with this status.
    #[serde(default)]
    pub status: Option<String>,
    /// Only these ids.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// At most this many (10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many.
    #[serde(default)]
    pub offset: Option<usize>,
    /// `thread_id`, `status`, `created_at` or `updated_at`.
    #[serde(default)]
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    #[serde(default)]
    pub sort_order: Option<String>,
}

/// `POST /threads/{id}/state`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct StateUpdateBody {
    /// The update.
    #[serde(default)]
    pub values: Option<Box<RawValue>>,
    /// The node it is attributed to.
    #[serde(default)]
    pub as_node: Option<String>,
    /// On top of this checkpoint.
    #[serde(default)]
    pub checkpoint: Option<CheckpointBody>,
    /// On top of this checkpoint id.
    #[serde(default)]
    pub checkpoint_id: Option<String>,
}

/// `POST /threads/{id}/state/checkpoint`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct StateAtBody {
    /// The checkpoint.
    pub checkpoint: CheckpointBody,
}

/// `POST /threads/{id}/history`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct HistoryBody {
    /// At most this many (10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Older than this checkpoint.
    #[serde(default)]
    pub before: Option<Value>,
    /// Checkpoints whose metadata has these entries.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// The namespace.
    #[serde(default)]
    pub checkpoint: Option<CheckpointBody>,
}

/// `POST /assistants/search` and `/assistants/count`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct AssistantSearch {
    /// Only this graph.
    #[serde(default)]
    pub graph_id: Option<String>,
    /// Only assistants whose metadata has these entries.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// At most this many (10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Skip this many.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Whether `value` (an object) holds every entry of `filter`.
pub fn contains_all(value: &Value, filter: &Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| value.get(k) == Some(v))
}

/// An assistant: a served graph, under the uuid5 of its graph id.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Assistant<'a> {
    pub assistant_id: &'a str,
    pub graph_id: &'a str,
    /// Always `{}`: the config is the run's.
    pub config: Map<String, Value>,
    /// Always `{}`.
    pub context: Map<String, Value>,
    /// `{"created_by": "system"}`.
    pub metadata: Map<String, Value>,
    /// The graph id.
    pub name: &'a str,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    /// Always 1: assistants are the graphs the server was started with.
    pub version: u32,
    pub description: Option<&'a str>,
}

/// The JSON Schemas of an assistant's graph.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GraphSchemas<'a> {
    pub graph_id: &'a str,
    /// What a run's `input` may hold: the state's fields, each optional.
    pub input_schema: Value,
    /// What a run returns: the state.
    pub output_schema: Value,
    /// The state.
    pub state_schema: Value,
    /// Always `{}`.
    pub config_schema: Value,
    /// Always `null`.
    pub context_schema: Option<Value>,
}

/// A thread's status.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// The database stores the status as text; the type documents its values.
#[allow(dead_code)]
pub(crate) enum ThreadStatus {
    /// No run is running and none is pending.
    Idle,
    /// A run is running.
    Busy,
    /// The last run stopped at an interrupt or breakpoint.
    Interrupted,
    /// The last run failed.
    Error,
}

/// A thread, as `POST /threads` and `GET /threads/{id}` return it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Thread {
    pub thread_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub state_updated_at: String,
    pub metadata: Map<String, Value>,
    pub status: ThreadStatus,
    pub config: Map<String, Value>,
    /// The state after the last run, `null` before the first.
    pub values: Option<Value>,
    /// The pending interrupts, by the id of the task that raised them.
    pub interrupts: std::collections::BTreeMap<String, Vec<Interrupt>>,
    /// The last run's error.
    pub error: Option<Value>,
}

/// A pending interrupt: the value the node passed to `interrupt`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Interrupt {
    pub value: Value,
    /// Answer it with `command.resume` keyed by this id.
    pub id: String,
}

/// A run's status.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// The database stores the status as text; the type documents its values.
#[allow(dead_code)]
pub(crate) enum RunStatus {
    Pending,
    Running,
    Error,
    Success,
    Timeout,
    Interrupted,
}

/// A run, as `POST /threads/{id}/runs` and `GET .../runs/{run_id}` return it.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Run {
    pub run_id: String,
    pub thread_id: String,
    pub assistant_id: String,
    pub metadata: Map<String, Value>,
    pub status: RunStatus,
    /// The request that created the run.
    pub kwargs: Value,
    pub multitask_strategy: MultitaskStrategy,
    pub created_at: String,
    pub updated_at: String,
}

/// A checkpoint's address.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Checkpoint<'a> {
    pub thread_id: &'a str,
    pub checkpoint_ns: &'a str,
    pub checkpoint_id: Option<&'a str>,
}

/// A task of a thread state: a node to run next, or one that ran.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ThreadTask {
    pub id: String,
    pub name: String,
    /// `["__pregel_pull", node]` or `["__pregel_push", index, false]`.
    pub path: Value,
    pub error: Option<String>,
    pub interrupts: Vec<Interrupt>,
    /// Always `null`.
    pub checkpoint: Option<Value>,
    /// Always `null`.
    pub state: Option<Value>,
    /// The task's writes, when it ran.
    pub result: Option<Value>,
}

/// A thread's state at a checkpoint (`GET /threads/{id}/state`, history).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ThreadState {
    pub values: Value,
    /// The nodes to run next.
    pub next: Vec<String>,
    pub tasks: Vec<ThreadTask>,
    pub metadata: Option<Map<String, Value>>,
    pub created_at: Option<String>,
    pub checkpoint: Option<Checkpoint<'static>>,
    pub parent_checkpoint: Option<Checkpoint<'static>>,
    pub interrupts: Vec<Interrupt>,
    pub checkpoint_id: Option<String>,
    pub parent_checkpoint_id: Option<String>,
}

/// What `POST /threads/{id}/state` answers: the new checkpoint.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StateUpdated<'a> {
    pub checkpoint: Checkpoint<'a>,
    pub configurable: Checkpoint<'a>,
    pub checkpoint_id: Option<&'a str>,
}

/// An error, in LangGraph Server's shape.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong and what to do.
    pub detail: String,
    /// For a body that does not fit the graph's state: where, and what was
    /// expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
}

/// One field of a body that does not fit.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct FieldError {
    /// The path, as `["input", "count"]`.
    pub loc: Vec<String>,
    pub msg: String,
}

/// `GET /info`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Info {
    pub version: &'static str,
    pub flags: Map<String, Value>,
    pub host: Map<String, Value>,
}

/// A store item.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Item {
    pub namespace: Vec<String>,
    pub key: String,
    pub value: Map<String, Value>,
    pub created_at: String,
    pub updated_at: String,
    /// The similarity to a search's `query`, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// `POST /store/items/search`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Items {
    pub items: Vec<Item>,
}

/// `POST /store/namespaces`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Namespaces {
    pub namespaces: Vec<Vec<String>>,
}
