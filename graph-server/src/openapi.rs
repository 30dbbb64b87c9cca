//! `GET /openapi.json`: the API as an OpenAPI 3.1 document, its schemas
//! generated from the wire types the handlers read and write (`wire.rs`, the
//! handlers' query types) with schemars.
//!
//! One table, [`OPERATIONS`], lists every route of the router with its query,
//! body and answer types; the router's test checks each listed route answers.

use crate::routes::{CancelQuery, GraphQuery, HistoryQuery, JoinStreamQuery, ListQuery};
use crate::store_routes::{DeleteBody, GetQuery, NamespacesBody, PutBody, SearchBody};
use crate::wire::{
    Assistant, AssistantSearch, ErrorBody, GraphSchemas, Info, Item, Items, Namespaces, Run,
    RunCreate, StateAtBody, StateUpdateBody, StateUpdated, Thread, ThreadCreate, ThreadPatch,
    ThreadSearch, ThreadState,
};
use schemars::generate::{Contract, SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{json, Map, Value};

/// A schema of `T` from `generator` (a `$ref` to `#/components/schemas/..`
/// for a named type).
type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn of<T: ?Sized + JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// What an operation answers.
enum Reply {
    /// 200 with a JSON body.
    Json(SchemaFn),
    /// 200 with server-sent events.
    Events,
    /// 204, no body.
    NoContent,
    /// 202, no body.
    Accepted,
}

/// One route and method of the API.
struct Operation {
    method: &'static str,
    /// In OpenAPI's template syntax, parameters named as LangGraph names them.
    path: &'static str,
    summary: &'static str,
    query: Option<SchemaFn>,
    body: Option<SchemaFn>,
    reply: Reply,
}

const fn op(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    reply: Reply,
) -> Operation {
    Operation {
        method,
        path,
        summary,
        query: None,
        body: None,
        reply,
    }
}

impl Operation {
    const fn body(mut self, body: SchemaFn) -> Self {
        self.body = Some(body);
        self
    }

    const fn query(mut self, query: SchemaFn) -> Self {
        self.query = Some(query);
        self
    }
}

const STREAM: &str = "Server-sent events: `metadata` first, then one event per \
     chunk of each `stream_mode` asked for (`values`, `updates`, `messages`, `custom`, \
     `debug`, `checkpoints`, `tasks`; `<mode>|<namespace>` for subgraph events), \
     `error` if the run failed, `end` last. Each event has an id: reconnect with \
     `Last-Event-ID` to get what was missed.";

/// Every route the server answers, but the Studio's pages.
const OPERATIONS: &[Operation] = &[
    op("get", "/ok", "Liveness", Reply::Json(of::<Value>)),
    op(
        "get",
        "/info",
        "Server version and flags",
        Reply::Json(of::<Info>),
    ),
    op(
        "get",
        "/openapi.json",
        "This document",
        Reply::Json(of::<Value>),
    ),
    op(
        "post",
        "/assistants/search",
        "Search assistants",
        Reply::Json(of::<Vec<Assistant<'static>>>),
    )
    .body(of::<AssistantSearch>),
    op(
        "post",
        "/assistants/count",
        "Count assistants",
        Reply::Json(of::<usize>),
    )
    .body(of::<AssistantSearch>),
    op(
        "get",
        "/assistants/{assistant_id}",
        "Get an assistant (by id or graph id)",
        Reply::Json(of::<Assistant<'static>>),
    ),
    op(
        "get",
        "/assistants/{assistant_id}/graph",
        "The graph's nodes and edges",
        Reply::Json(of::<Value>),
    )
    .query(of::<GraphQuery>),
    op(
        "get",
        "/assistants/{assistant_id}/schemas",
        "The JSON Schemas of the graph's state, input and output",
        Reply::Json(of::<GraphSchemas<'static>>),
    ),
    op(
        "get",
        "/assistants/{assistant_id}/subgraphs",
        "The graph's subgraphs",
        Reply::Json(of::<Map<String, Value>>),
    ),
    op(
        "post",
        "/assistants/{assistant_id}/versions",
        "The assistant's versions (one)",
        Reply::Json(of::<Vec<Assistant<'static>>>),
    ),
    op(
        "post",
        "/threads",
        "Create a thread",
        Reply::Json(of::<Thread>),
    )
    .body(of::<ThreadCreate>),
    op(
        "post",
        "/threads/search",
        "Search threads",
        Reply::Json(of::<Vec<Thread>>),
    )
    .body(of::<ThreadSearch>),
    op(
        "post",
        "/threads/count",
        "Count threads",
        Reply::Json(of::<usize>),
    )
    .body(of::<ThreadSearch>),
    op(
        "get",
        "/threads/{thread_id}",
        "Get a thread",
        Reply::Json(of::<Thread>),
    ),
    op(
        "patch",
        "/threads/{thread_id}",
        "Merge into a thread's metadata",
        Reply::Json(of::<Thread>),
    )
    .body(of::<ThreadPatch>),
    op(
        "delete",
        "/threads/{thread_id}",
        "Delete a thread, its runs and checkpoints",
        Reply::NoContent,
    ),
    op(
        "post",
        "/threads/{thread_id}/copy",
        "Copy a thread with its checkpoints",
        Reply::Json(of::<Thread>),
    ),
    op(
        "get",
        "/threads/{thread_id}/state",
        "The thread's latest state",
        Reply::Json(of::<ThreadState>),
    ),
    op(
        "post",
        "/threads/{thread_id}/state",
        "Update the thread's state",
        Reply::Json(of::<StateUpdated<'static>>),
    )
    .body(of::<StateUpdateBody>),
    op(
        "post",
        "/threads/{thread_id}/state/checkpoint",
        "The state at a checkpoint",
        Reply::Json(of::<ThreadState>),
    )
    .body(of::<StateAtBody>),
    op(
        "get",
        "/threads/{thread_id}/state/{checkpoint_id}",
        "The state at a checkpoint",
        Reply::Json(of::<ThreadState>),
    ),
    op(
        "post",
        "/threads/{thread_id}/history",
        "The thread's states, newest first",
        Reply::Json(of::<Vec<ThreadState>>),
    )
    .body(of::<crate::wire::HistoryBody>),
    op(
        "get",
        "/threads/{thread_id}/history",
        "The thread's states, newest first",
        Reply::Json(of::<Vec<ThreadState>>),
    )
    .query(of::<HistoryQuery>),
    op(
        "post",
        "/threads/{thread_id}/runs",
        "Start a run in the background",
        Reply::Json(of::<Run>),
    )
    .body(of::<RunCreate>),
    op(
        "get",
        "/threads/{thread_id}/runs",
        "List the thread's runs",
        Reply::Json(of::<Vec<Run>>),
    )
    .query(of::<ListQuery>),
    op(
        "post",
        "/threads/{thread_id}/runs/wait",
        "Run and answer the final state",
        Reply::Json(of::<Value>),
    )
    .body(of::<RunCreate>),
    op(
        "post",
        "/threads/{thread_id}/runs/stream",
        "Run and stream its events",
        Reply::Events,
    )
    .body(of::<RunCreate>),
    op(
        "get",
        "/threads/{thread_id}/runs/{run_id}",
        "Get a run",
        Reply::Json(of::<Run>),
    ),
    op(
        "delete",
        "/threads/{thread_id}/runs/{run_id}",
        "Delete a run (cancelling it)",
        Reply::NoContent,
    ),
    op(
        "post",
        "/threads/{thread_id}/runs/{run_id}/cancel",
        "Cancel a run",
        Reply::Accepted,
    )
    .query(of::<CancelQuery>),
    op(
        "get",
        "/threads/{thread_id}/runs/{run_id}/join",
        "Wait for a run; answer the thread's state",
        Reply::Json(of::<Value>),
    ),
    op(
        "get",
        "/threads/{thread_id}/runs/{run_id}/stream",
        "Join a run's event stream",
        Reply::Events,
    )
    .query(of::<JoinStreamQuery>),
    op(
        "post",
        "/runs",
        "Start a run on a new thread",
        Reply::Json(of::<Run>),
    )
    .body(of::<RunCreate>),
    op(
        "post",
        "/runs/wait",
        "Run on a new thread; answer the final state",
        Reply::Json(of::<Value>),
    )
    .body(of::<RunCreate>),
    op(
        "post",
        "/runs/stream",
        "Run on a new thread and stream its events",
        Reply::Events,
    )
    .body(of::<RunCreate>),
    op(
        "get",
        "/store/items",
        "Get a store item (`null` if absent)",
        Reply::Json(of::<Option<Item>>),
    )
    .query(of::<GetQuery>),
    op("put", "/store/items", "Put a store item", Reply::NoContent).body(of::<PutBody>),
    op(
        "delete",
        "/store/items",
        "Delete a store item",
        Reply::NoContent,
    )
    .body(of::<DeleteBody>),
    op(
        "post",
        "/store/items/search",
        "Search store items",
        Reply::Json(of::<Items>),
    )
    .body(of::<SearchBody>),
    op(
        "post",
        "/store/namespaces",
        "List store namespaces",
        Reply::Json(of::<Namespaces>),
    )
    .body(of::<NamespacesBody>),
];

/// The parameters of a query type: one per property of its schema.
fn query_parameters(query: SchemaFn) -> Vec<Value> {
    let mut inline = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = query(&mut inline);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, schema)| {
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": schema,
            });
            if let Some(description) = schema.get("description") {
                parameter["description"] = description.clone();
            }
            parameter
        })
        .collect()
}

fn path_parameters(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect()
}

fn json_content(schema: Schema) -> Value {
    json!({"application/json": {"schema": schema}})
}

/// The OpenAPI document.
pub(crate) fn document() -> Value {
    let settings = |contract: Contract| {
        SchemaSettings::draft2020_12().with(|s| {
            s.definitions_path = "/components/schemas".into();
            s.meta_schema = None;
            s.contract = contract;
        })
    };
    // Bodies are read (serde's deserialize view: defaults are optional),
    // answers are written (every field is there).
    let mut requests = settings(Contract::Deserialize).into_generator();
    let mut responses = settings(Contract::Serialize).into_generator();
    let error = json_content(responses.subschema_for::<ErrorBody>());
    let mut paths = Map::new();
    for operation in OPERATIONS {
        let mut parameters = path_parameters(operation.path);
        if let Some(query) = operation.query {
            parameters.extend(query_parameters(query));
        }
        let (status, answer) = match &operation.reply {
            Reply::Json(schema) => (
                "200",
                json!({"description": "OK", "content": json_content(schema(&mut responses))}),
            ),
            Reply::Events => (
                "200",
                json!({"description": STREAM, "content": {"text/event-stream": {"schema": {"type": "string"}}}}),
            ),
            Reply::NoContent => ("204", json!({"description": "Done"})),
            Reply::Accepted => ("202", json!({"description": "Accepted"})),
        };
        let mut entry = json!({
            "summary": operation.summary,
            "operationId": operation_id(operation),
            "responses": {
                status: answer,
                "4XX": {
                    "description": "404 for an unknown assistant, thread or run; 409 for a busy \
                                    thread or a thread that exists; 422 for a body that does not fit; \
                                    429 for a stream past the client's limit",
                    "content": error,
                },
            },
        });
        if !parameters.is_empty() {
            entry["parameters"] = Value::Array(parameters);
        }
        if let Some(body) = operation.body {
            entry["requestBody"] =
                json!({"required": true, "content": json_content(body(&mut requests))});
        }
        if let Value::Object(methods) = paths
            .entry(operation.path)
            .or_insert_with(|| Value::Object(Map::new()))
        {
            methods.insert(operation.method.to_owned(), entry);
        }
    }
    let mut schemas = requests.take_definitions(true);
    schemas.extend(responses.take_definitions(true));
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "stategraph server",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "LangGraph Server's API, serving stategraph graphs.",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// `get_threads_thread_id_state`: unique per method and path.
fn operation_id(operation: &Operation) -> String {
    let mut id = operation.method.to_owned();
    for part in operation.path.split(|c: char| !c.is_ascii_alphanumeric()) {
        if !part.is_empty() {
            id.push('_');
            id.push_str(part);
        }
    }
    id
}
