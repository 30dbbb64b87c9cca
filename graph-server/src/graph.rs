//! A compiled graph behind a JSON interface: what the server needs of any
//! [`CompiledGraph<S, C>`], whatever its state type.
//!
//! The wire is JSON; the graph is typed. [`ServedGraph`] is the one place the
//! two meet: run input and `command.update` are decoded field by field into
//! `S::Update` (a body that does not fit is an [`ApiError`] 422 naming the
//! field), events and snapshots are written out as LangGraph Server writes them.

use crate::error::ApiError;
use crate::wire::{CommandBody, StreamModeName};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use graph_core::checkpoint::{CheckpointConfig, Checkpointer, ListOptions};
use graph_core::graph::DefaultContext;
use graph_core::state::{FieldVisitor, StateUpdate};
use graph_core::stream::{CheckpointEvent, StreamEvent, StreamModes};
use graph_core::{
    Command, CompiledGraph, GraphError, GraphInput, Interrupt, RunConfig, SnapshotTask, State,
    StateSnapshot, StreamMode,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One server-sent event: its name (`values`, `updates|child:<task id>`...)
/// and its JSON data, written once.
#[derive(Debug, Clone)]
pub struct WireEvent {
    /// The SSE `event:` name.
    pub event: Arc<str>,
    /// The SSE `data:` JSON text.
    pub data: Arc<str>,
}

/// What a run is asked to do: its input or command, as the request sent them.
#[derive(Debug, Clone, Default)]
pub struct RunInput<'a> {
    /// `input`: the graph's typed update, as a JSON object (`None` or `null`:
    /// continue the thread).
    pub input: Option<&'a RawValue>,
    /// `command`: resume, update and goto.
    pub command: Option<&'a CommandBody>,
}

/// The events of a run, in order; an error ends it.
pub type EventStream = BoxStream<'static, Result<WireEvent, GraphError>>;

/// A compiled graph the server can run, read and update through JSON.
///
/// Implemented for every [`CompiledGraph<S, C>`] whose state is `Serialize`
/// (the state values go out as JSON) and whose context has a default; use
/// [`Server::assistant`](crate::Server::assistant) rather than this trait.
pub trait ServedGraph: Send + Sync + 'static {
    /// LangGraph's `get_graph(xray=depth).to_json()`: nodes and edges,
    /// subgraphs expanded `xray` levels deep.
    fn graph_json(&self, xray: usize) -> Value;
    /// The JSON Schema of the state: its fields with their types when the
    /// graph was served with
    /// [`Server::assistant_with_schema`](crate::Server::assistant_with_schema),
    /// their names only otherwise.
    fn state_schema(&self) -> Value;
    /// The graph with `saver` as its checkpointer.
    fn with_saver(&self, saver: Arc<dyn Checkpointer>) -> Arc<dyn ServedGraph>;
    /// Checks that `input` decodes into the graph's input (422 if not).
    fn check_input(&self, input: &RunInput<'_>) -> Result<(), ApiError>;
    /// Runs the graph, reporting `modes` (and subgraph events of the same state
    /// type with `subgraphs`).
    fn stream(
        &self,
        input: &RunInput<'_>,
        config: &RunConfig,
        modes: &[StreamModeName],
        subgraphs: bool,
    ) -> Result<EventStream, ApiError>;
    /// The thread state at `config` (its latest checkpoint, or the one named),
    /// in LangGraph Server's `ThreadState` shape.
    fn get_state(&self, config: RunConfig) -> BoxFuture<'_, Result<Value, GraphError>>;
    /// `get_state_history` in the `ThreadState` shape, newest first.
    fn history(
        &self,
        config: RunConfig,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<Vec<Value>, GraphError>>;
    /// `update_state` with `values` decoded into the typed update.
    fn update_state<'a>(
        &'a self,
        config: RunConfig,
        values: Option<&'a RawValue>,
        as_node: Option<&'a str>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, ApiError>>;
}

/// A [`CompiledGraph`] as a [`ServedGraph`].
pub(crate) struct Served<S: State, C: ?Sized> {
    app: CompiledGraph<S, C>,
    /// Node names as `&'static str` for `Command::goto` from JSON: interned
    /// once per node of this graph (bounded by the graph, never by requests).
    names: Arc<Mutex<HashMap<String, &'static str>>>,
    /// The state's JSON Schema, when its type has one.
    schema: Option<Arc<Value>>,
}

impl<S: State, C: ?Sized> Served<S, C> {
    pub(crate) fn new(app: CompiledGraph<S, C>) -> Self {
        Served {
            app,
            names: Arc::default(),
            schema: None,
        }
    }

    /// Serves the JSON Schema of `S` on `/assistants/{id}/schemas`.
    pub(crate) fn with_schema(mut self) -> Self
    where
        S: schemars::JsonSchema,
    {
        self.schema = Some(Arc::new(typed_state_schema::<S>()));
        self
    }
}

/// The schema of the state's channels as LangGraph writes a state schema:
/// the properties of `S`'s JSON Schema that are fields of the graph, none
/// required (a run's input sets any of them; the others keep their values).
fn typed_state_schema<S: State + schemars::JsonSchema>() -> Value {
    let mut schema = schemars::SchemaGenerator::default()
        .into_root_schema_for::<S>()
        .to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("required");
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            properties.retain(|name, _| S::FIELDS.contains(&name.as_str()));
        }
    }
    schema
}

/// Decodes a JSON object into one typed update, field by field.
fn decode_update<S: State>(raw: &RawValue, path: &str) -> Result<S::Update, ApiError> {
    let fields: HashMap<&str, &RawValue> =
        serde_json::from_str(raw.get()).map_err(|e| ApiError::Unprocessable {
            path: path.to_owned(),
            message: format!("expected an object of the state's fields ({e})"),
        })?;
    let mut update = S::Update::default();
    for (name, value) in fields {
        // LangGraph ignores keys that are not channels of the graph's input.
        let Some(index) = S::field_index(name) else {
            continue;
        };
        let mut de = serde_json::Deserializer::from_str(value.get());
        let one =
            S::Update::from_field_write(index, &mut de).map_err(|e| ApiError::Unprocessable {
                path: format!("{path}.{name}"),
                message: e.to_string(),
            })?;
        update.merge(one);
    }
    Ok(update)
}

/// The writes of an update as a JSON object text: `{"field": value, ..}`.
fn update_json<U: StateUpdate>(update: &U) -> String {
    struct Writer(Vec<u8>, bool);
    impl FieldVisitor for Writer {
        fn visit<T: Serialize + ?Sized>(&mut self, _: usize, name: &'static str, value: &T) {
            self.0.push(if self.1 { b',' } else { b'{' });
            self.1 = true;
            let _ = serde_json::to_writer(&mut self.0, name);
            self.0.push(b':');
            if serde_json::to_writer(&mut self.0, value).is_err() {
                self.0.extend_from_slice(b"null");
            }
        }
    }
    let mut w = Writer(Vec::with_capacity(64), false);
    update.visit_writes(&mut w);
    if !w.1 {
        w.0.push(b'{');
    }
    w.0.push(b'}');
    String::from_utf8(w.0).unwrap_or_default()
}

fn updates_json<U: StateUpdate>(updates: &[U]) -> String {
    match updates {
        [one] => update_json(one),
        [] => "null".to_owned(),
        many => {
            let parts: Vec<String> = many.iter().map(update_json).collect();
            format!("[{}]", parts.join(","))
        }
    }
}

/// A task's stored writes as one object, as LangGraph shows a task's
/// `result` (a channel written twice shows its last write); `null` for none.
fn merged_updates<U: StateUpdate>(updates: &[U]) -> Value {
    if updates.is_empty() {
        return Value::Null;
    }
    let mut merged = serde_json::Map::new();
    for update in updates {
        if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&update_json(update)) {
            merged.extend(fields);
        }
    }
    Value::Object(merged)
}

fn to_text<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn checkpoint_json(c: &CheckpointConfig) -> Value {
    json!({
        "checkpoint_id": c.checkpoint_id,
        "thread_id": c.thread_id,
        "checkpoint_ns": c.checkpoint_ns,
    })
}

fn config_json(c: &CheckpointConfig) -> Value {
    json!({"configurable": checkpoint_json(c)})
}

fn task_json<S: State>(task: &SnapshotTask<S>) -> Value {
    let path = match &task.path {
        graph_core::TaskPath::Pull { node } => json!(["__pregel_pull", node]),
        graph_core::TaskPath::Push { index } => json!(["__pregel_push", index, false]),
        _ => Value::Null,
    };
    let result = task.result.as_deref().map(merged_updates);
    json!({
        "id": task.id,
        "name": task.name,
        "path": path,
        "error": task.error,
        "interrupts": task.interrupts,
        "checkpoint": null,
        "state": null,
        "result": result,
    })
}

/// A snapshot in LangGraph Server's `ThreadState` shape.
fn snapshot_json<S: State + Serialize>(snap: &StateSnapshot<S>) -> Value {
    let has_checkpoint = snap.metadata.is_some();
    let checkpoint = has_checkpoint.then(|| checkpoint_json(&snap.config));
    json!({
        "values": serde_json::to_value(&snap.values).unwrap_or(Value::Null),
        "next": snap.next,
        "tasks": snap.tasks.iter().map(task_json).collect::<Vec<_>>(),
        "metadata": snap.metadata,
        "created_at": snap.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": snap.parent_config.as_ref().map(checkpoint_json),
        "interrupts": snap.interrupts,
        "checkpoint_id": has_checkpoint.then(|| snap.config.checkpoint_id.clone()).flatten(),
        "parent_checkpoint_id": snap.parent_config.as_ref().and_then(|p| p.checkpoint_id.clone()),
    })
}

fn checkpoint_event_json<S: State + Serialize>(c: &CheckpointEvent<S>) -> Value {
    json!({
        "config": config_json(&c.config),
        "parent_config": c.parent_config.as_ref().map(config_json),
        "values": serde_json::to_value(&*c.values).unwrap_or(Value::Null),
        "metadata": c.metadata,
        "next": c.next,
        "tasks": c.next.iter().map(|n| json!({"name": n, "interrupts": [], "state": null})).collect::<Vec<_>>(),
    })
}

fn timestamp() -> String {
    crate::db::now()
}

/// The JSON payload of an event in its own mode, and that mode's SSE name.
/// `input` is the JSON of the state a task starting now reads (`null` when
/// not known).
fn event_json<S: State + Serialize>(
    event: &StreamEvent<S>,
    input: &str,
) -> Option<(&'static str, String)> {
    Some(match event {
        StreamEvent::Values(values) => ("values", to_text(&**values)),
        StreamEvent::ValuesAtInterrupt { values, interrupts } => {
            let mut v = serde_json::to_value(&**values).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut v {
                map.insert("__interrupt__".into(), json!(interrupts));
            }
            ("values", v.to_string())
        }
        StreamEvent::Updates { node, updates } => (
            "updates",
            format!("{{{}:{}}}", to_text(&**node), updates_json(updates)),
        ),
        StreamEvent::Call {
            task,
            value,
            cached: false,
        } => ("updates", json!({ &**task: value }).to_string()),
        // LangGraph marks a task result that came from the cache.
        StreamEvent::Call {
            task,
            value,
            cached: true,
        } => (
            "updates",
            json!({ &**task: value, "__metadata__": { "cached": true } }).to_string(),
        ),
        StreamEvent::Interrupt(interrupts) => (
            "updates",
            json!({ "__interrupt__": interrupts }).to_string(),
        ),
        StreamEvent::Custom { value, .. } => ("custom", value.to_string()),
        StreamEvent::TaskStart { id, name, triggers } => {
            // A `Send` task reads its argument, which the event does not carry.
            let input = match triggers.iter().any(|t| t == "__pregel_push") {
                true => "null",
                false => input,
            };
            (
                "tasks",
                format!(
                    r#"{{"id":{},"name":{},"input":{input},"triggers":{}}}"#,
                    to_text(id),
                    to_text(&**name),
                    to_text(triggers)
                ),
            )
        }
        StreamEvent::TaskResult {
            id,
            name,
            error,
            updates,
            interrupts,
        } => (
            "tasks",
            format!(
                r#"{{"id":{},"name":{},"error":{},"result":{},"interrupts":{}}}"#,
                to_text(id),
                to_text(&**name),
                to_text(error),
                updates_json(updates),
                to_text(interrupts)
            ),
        ),
        StreamEvent::Checkpoint(c) => ("checkpoints", checkpoint_event_json(c).to_string()),
        StreamEvent::Message { chunk, metadata } => (
            "messages",
            json!([chunk, {
                "langgraph_node": &*metadata.node,
                "langgraph_step": metadata.step,
                "langgraph_checkpoint_ns": "",
                "task_id": metadata.task_id,
            }])
            .to_string(),
        ),
        StreamEvent::Debug { step, event } => {
            let (kind, payload) = match &**event {
                StreamEvent::Checkpoint(c) => {
                    let mut p = checkpoint_event_json(c);
                    if let Value::Object(map) = &mut p {
                        map.insert("checkpoint".into(), checkpoint_json(&c.config));
                        map.insert(
                            "parent_checkpoint".into(),
                            c.parent_config
                                .as_ref()
                                .map(checkpoint_json)
                                .unwrap_or(Value::Null),
                        );
                    }
                    ("checkpoint", p.to_string())
                }
                StreamEvent::TaskStart { .. } => ("task", event_json(event, input)?.1),
                StreamEvent::TaskResult { .. } => ("task_result", event_json(event, input)?.1),
                _ => return None,
            };
            (
                "debug",
                format!(
                    r#"{{"step":{step},"timestamp":{},"type":"{kind}","payload":{payload}}}"#,
                    to_text(&timestamp())
                ),
            )
        }
        _ => return None,
    })
}

fn wire_event<S: State + Serialize>(event: StreamEvent<S>, input: &str) -> Option<WireEvent> {
    if let StreamEvent::Subgraph { namespace, event } = event {
        // Subgraphs that share the parent's state type are written out; the
        // others' events are typed by a state this graph does not name.
        let inner = event.downcast::<S>().ok()?;
        let (name, data) = event_json(&inner, "null")?;
        return Some(WireEvent {
            event: format!("{name}|{}", namespace.segments().join("|")).into(),
            data: data.into(),
        });
    }
    let (name, data) = event_json(&event, input)?;
    Some(WireEvent {
        event: name.into(),
        data: data.into(),
    })
}

impl<S, C> Served<S, C>
where
    S: State + Serialize,
    C: ?Sized + DefaultContext + 'static,
{
    fn goto_name(&self, name: &str) -> Result<&'static str, ApiError> {
        if name != graph_core::END && !self.app.node_names().any(|n| n == name) {
            return Err(ApiError::Unprocessable {
                path: "command.goto".into(),
                message: format!("the graph has no node `{name}`"),
            });
        }
        let mut names = self.names.lock().map_err(|_| ApiError::Internal {
            message: "the node name table was poisoned".into(),
        })?;
        if let Some(interned) = names.get(name) {
            return Ok(interned);
        }
        let interned: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.insert(name.to_owned(), interned);
        Ok(interned)
    }

    fn decode(&self, input: &RunInput<'_>) -> Result<GraphInput<S>, ApiError> {
        if let Some(cmd) = input.command {
            let mut command: Command<&'static str, S::Update> = match &cmd.resume {
                Some(Value::Object(map))
                    if !map.is_empty() && map.keys().all(|k| is_interrupt_id(k)) =>
                {
                    Command::resume_map(map.iter().map(|(k, v)| (k.clone(), v.clone())))
                }
                Some(value) => Command::resume(value),
                None => Command::default(),
            };
            if let Some(update) = &cmd.update {
                command = command.update(decode_update::<S>(update, "command.update")?);
            }
            for target in cmd.goto.names() {
                command = command.and_goto(self.goto_name(target)?);
            }
            return Ok(command.into());
        }
        match input.input {
            Some(raw) if raw.get() != "null" => {
                Ok(GraphInput::update(decode_update::<S>(raw, "input")?))
            }
            _ => Ok(GraphInput::none()),
        }
    }
}

fn is_interrupt_id(key: &str) -> bool {
    key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit())
}

impl<S, C> ServedGraph for Served<S, C>
where
    S: State + Serialize,
    C: ?Sized + DefaultContext + Send + Sync + 'static,
{
    fn graph_json(&self, xray: usize) -> Value {
        self.app
            .draw_json_with(&graph_core::DrawOptions::new().xray(xray))
    }

    fn state_schema(&self) -> Value {
        if let Some(schema) = &self.schema {
            return Value::clone(schema);
        }
        let properties: serde_json::Map<String, Value> = S::FIELDS
            .iter()
            .map(|f| ((*f).to_owned(), json!({ "title": f })))
            .collect();
        json!({"type": "object", "properties": properties, "title": "state"})
    }

    fn with_saver(&self, saver: Arc<dyn Checkpointer>) -> Arc<dyn ServedGraph> {
        Arc::new(Served {
            // A view that runs and reads with `saver` (the server only uses
            // the root namespace, where a view behaves as the graph).
            app: self.app.subgraph_view(saver),
            names: Arc::clone(&self.names),
            schema: self.schema.clone(),
        })
    }

    fn check_input(&self, input: &RunInput<'_>) -> Result<(), ApiError> {
        self.decode(input).map(drop)
    }

    fn stream(
        &self,
        input: &RunInput<'_>,
        config: &RunConfig,
        modes: &[StreamModeName],
        subgraphs: bool,
    ) -> Result<EventStream, ApiError> {
        let input = self.decode(input)?;
        let mut set = StreamModes::default();
        for mode in modes {
            set = set.with(mode.mode());
        }
        if subgraphs {
            set = set.subgraphs();
        }
        if set == StreamModes::default() {
            // Nothing asked: still drive the run (`values` is the cheapest to skip).
            set = StreamMode::Values.into();
        }
        let wanted: StreamModes = modes
            .iter()
            .fold(StreamModes::default(), |s, m| s.with(m.mode()));
        // A task's start carries the state it reads, as LangGraph's: the
        // values after the last step, kept from the `values` events.
        let inputs = wanted.contains(StreamMode::Tasks) || wanted.contains(StreamMode::Debug);
        if inputs {
            set = set.with(StreamMode::Values);
        }
        let mut state: Arc<str> = Arc::from("null");
        let stream = self
            .app
            .stream(input, config, set)
            .filter_map(move |event| {
                let out = match event {
                    Ok(StreamEvent::Values(values)) if inputs => {
                        state = to_text(&*values).into();
                        wanted.contains(StreamMode::Values).then(|| {
                            Ok(WireEvent {
                                event: "values".into(),
                                data: Arc::clone(&state),
                            })
                        })
                    }
                    Ok(event) if wanted.contains(event.mode()) => wire_event(event, &state).map(Ok),
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                };
                futures::future::ready(out)
            });
        Ok(stream.boxed())
    }

    fn get_state(&self, config: RunConfig) -> BoxFuture<'_, Result<Value, GraphError>> {
        Box::pin(async move {
            let snap = self.app.get_state(&config).await?;
            Ok(snapshot_json(&snap))
        })
    }

    fn history(
        &self,
        config: RunConfig,
        options: ListOptions,
    ) -> BoxFuture<'_, Result<Vec<Value>, GraphError>> {
        Box::pin(async move {
            let snaps = self.app.get_state_history(&config, &options).await?;
            Ok(snaps.iter().map(snapshot_json).collect())
        })
    }

    fn update_state<'a>(
        &'a self,
        config: RunConfig,
        values: Option<&'a RawValue>,
        as_node: Option<&'a str>,
    ) -> BoxFuture<'a, Result<CheckpointConfig, ApiError>> {
        Box::pin(async move {
            let update = match values {
                Some(raw) if raw.get() != "null" => Some(decode_update::<S>(raw, "values")?),
                _ => None,
            };
            Ok(self.app.update_state(&config, update, as_node).await?)
        })
    }
}

/// Interrupts as LangGraph Server lists them on a thread: task id → interrupts.
pub(crate) fn interrupts_of(state: &Value) -> Value {
    let mut map = serde_json::Map::new();
    if let Some(tasks) = state["tasks"].as_array() {
        for task in tasks {
            if task["interrupts"].as_array().is_some_and(|i| !i.is_empty())
                && let Some(id) = task["id"].as_str()
            {
                map.insert(id.to_owned(), task["interrupts"].clone());
            }
        }
    }
    Value::Object(map)
}

/// Interrupts, as `Vec<Interrupt>` from a state's JSON (for `__interrupt__`).
pub(crate) fn pending_interrupts(state: &Value) -> Vec<Interrupt> {
    serde_json::from_value(state["interrupts"].clone()).unwrap_or_default()
}
