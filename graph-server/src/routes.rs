//! The HTTP handlers: LangGraph Server's paths, bodies and responses.

use crate::auth::Caller;
use crate::db::{is_final, new_id, RunRow};
use crate::error::ApiError;
use crate::runs::{rewrite_thread, CancelAction, LiveRun, Shared};
use crate::streams::StreamPermit;
use crate::wire::{
    contains_all, AssistantSearch, Checkpoint, GraphSchemas, HistoryBody, Info, RunCreate,
    StateAtBody, StateUpdateBody, StateUpdated, ThreadCreate, ThreadPatch, ThreadSearch,
};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use graph_core::checkpoint::ListOptions;
use graph_core::RunConfig;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;

type AppState = State<Arc<Shared>>;
type ApiResult<T> = Result<T, ApiError>;

/// Every route of the API.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .merge(crate::studio::router())
        .route("/ok", get(|| async { Json(json!({"ok": true})) }))
        .route("/info", get(info))
        .route("/openapi.json", get(openapi))
        .route("/assistants/search", post(search_assistants))
        .route("/assistants/count", post(count_assistants))
        .route("/assistants/{id}", get(get_assistant))
        .route("/assistants/{id}/graph", get(assistant_graph))
        .route("/assistants/{id}/schemas", get(assistant_schemas))
        .route("/assistants/{id}/subgraphs", get(assistant_subgraphs))
        .route("/assistants/{id}/versions", post(assistant_versions))
        .route("/threads", post(create_thread))
        .route("/threads/search", post(search_threads))
        .route("/threads/count", post(count_threads))
        .route(
            "/threads/{id}",
            get(get_thread).patch(patch_thread).delete(delete_thread),
        )
        .route("/threads/{id}/copy", post(copy_thread))
        .route("/threads/{id}/state", get(get_state).post(update_state))
        .route("/threads/{id}/state/checkpoint", post(state_at_body))
        .route("/threads/{id}/state/{checkpoint_id}", get(state_at))
        .route("/threads/{id}/history", post(history).get(history_get))
        .route("/threads/{id}/runs", post(create_run).get(list_runs))
        .route("/threads/{id}/runs/wait", post(wait_run))
        .route("/threads/{id}/runs/stream", post(stream_run))
        .route(
            "/threads/{id}/runs/{run_id}",
            get(get_run).delete(delete_run),
        )
        .route("/threads/{id}/runs/{run_id}/cancel", post(cancel_run))
        .route("/threads/{id}/runs/{run_id}/join", get(join_run))
        .route("/threads/{id}/runs/{run_id}/stream", get(join_stream))
        .route(
            "/store/items",
            get(crate::store_routes::get_item)
                .put(crate::store_routes::put_item)
                .delete(crate::store_routes::delete_item),
        )
        .route(
            "/store/items/search",
            post(crate::store_routes::search_items),
        )
        .route(
            "/store/namespaces",
            post(crate::store_routes::list_namespaces),
        )
        .route("/runs", post(create_stateless))
        .route("/runs/wait", post(wait_stateless))
        .route("/runs/stream", post(stream_stateless))
        .with_state(shared)
}

/// A JSON body, parsed into `T` (an empty body is `T::default()`); a body
/// that does not fit is a 422 in LangGraph's `{"detail": ..}` shape.
fn body<T: DeserializeOwned + Default>(bytes: &Bytes) -> ApiResult<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::BadBody(e.to_string()))
}

fn run_body(bytes: &Bytes) -> ApiResult<RunCreate> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::BadBody(e.to_string()))
}

async fn info() -> Json<Info> {
    let object = |v: Value| v.as_object().cloned().unwrap_or_default();
    Json(Info {
        version: env!("CARGO_PKG_VERSION"),
        flags: object(json!({"assistants": true, "crons": false, "langsmith": false})),
        host: object(json!({"kind": "stategraph"})),
    })
}

/// The OpenAPI document, written once.
async fn openapi() -> Response {
    static DOCUMENT: std::sync::OnceLock<Bytes> = std::sync::OnceLock::new();
    let text = DOCUMENT.get_or_init(|| Bytes::from(crate::openapi::document().to_string()));
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        text.clone(),
    )
        .into_response()
}

fn filtered_assistants(shared: &Shared, search: &AssistantSearch) -> Vec<Value> {
    shared
        .assistants
        .iter()
        .filter(|a| search.graph_id.as_ref().is_none_or(|g| *g == a.graph_id))
        .map(|a| a.to_json())
        .filter(|a| {
            search
                .metadata
                .as_ref()
                .is_none_or(|m| contains_all(&a["metadata"], m))
        })
        .collect()
}

async fn search_assistants(State(shared): AppState, bytes: Bytes) -> ApiResult<Json<Value>> {
    let search: AssistantSearch = body(&bytes)?;
    let all = filtered_assistants(&shared, &search);
    let page: Vec<Value> = all
        .into_iter()
        .skip(search.offset.unwrap_or(0))
        .take(search.limit.unwrap_or(10))
        .collect();
    Ok(Json(Value::Array(page)))
}

async fn count_assistants(State(shared): AppState, bytes: Bytes) -> ApiResult<Json<Value>> {
    let search: AssistantSearch = body(&bytes)?;
    Ok(Json(json!(filtered_assistants(&shared, &search).len())))
}

async fn get_assistant(State(shared): AppState, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    Ok(Json(shared.assistant(&id)?.to_json()))
}

async fn assistant_versions(
    State(shared): AppState,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(json!([shared.assistant(&id)?.to_json()])))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GraphQuery {
    xray: Option<String>,
}

async fn assistant_graph(
    State(shared): AppState,
    Path(id): Path<String>,
    Query(q): Query<GraphQuery>,
) -> ApiResult<Json<Value>> {
    // LangGraph's `xray`: `true` expands every level, a number that many.
    let xray = match q.xray.as_deref() {
        None | Some("false") | Some("0") => 0,
        Some("true") => usize::MAX,
        Some(n) => n.parse().map_err(|_| ApiError::Unprocessable {
            path: "xray".into(),
            message: format!("expected true, false or a number of levels, not `{n}`"),
        })?,
    };
    Ok(Json(shared.assistant(&id)?.graph.graph_json(xray)))
}

async fn assistant_schemas(
    State(shared): AppState,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let a = shared.assistant(&id)?;
    let state = a.graph.state_schema();
    Ok(Json(json!(GraphSchemas {
        graph_id: &a.graph_id,
        input_schema: state.clone(),
        output_schema: state.clone(),
        state_schema: state,
        config_schema: json!({}),
        context_schema: None,
    })))
}

async fn assistant_subgraphs(
    State(shared): AppState,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    shared.assistant(&id)?;
    Ok(Json(json!({})))
}

/// The thread, if it exists and the caller owns it (404 otherwise, so that
/// other callers cannot tell it exists).
async fn thread_for(shared: &Shared, caller: &Caller, id: &str) -> ApiResult<Value> {
    match shared.db.thread(id).await? {
        Some(thread) if caller.owns(&thread) => Ok(thread),
        _ => Err(ApiError::thread(id)),
    }
}

async fn create_thread(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let create: ThreadCreate = body(&bytes)?;
    let id = create.thread_id.unwrap_or_else(new_id);
    let mut metadata = create.metadata.unwrap_or_default();
    caller.stamp(&mut metadata);
    if !shared.db.insert_thread(&id, &metadata).await?
        && create.if_exists.as_deref() != Some("do_nothing")
    {
        return Err(ApiError::ThreadExists(id));
    }
    Ok(Json(thread_for(&shared, &caller, &id).await?))
}

async fn get_thread(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(thread_for(&shared, &caller, &id).await?))
}

async fn patch_thread(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let patch: ThreadPatch = body(&bytes)?;
    thread_for(&shared, &caller, &id).await?;
    let mut metadata = patch.metadata.unwrap_or_default();
    caller.guard_patch(&mut metadata);
    if !shared.db.patch_thread(&id, &metadata).await? {
        return Err(ApiError::thread(&id));
    }
    Ok(Json(thread_for(&shared, &caller, &id).await?))
}

async fn delete_thread(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    thread_for(&shared, &caller, &id).await?;
    if !shared.delete_thread(&id).await? {
        return Err(ApiError::thread(&id));
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn matching_threads(
    shared: &Shared,
    caller: &Caller,
    search: &ThreadSearch,
) -> ApiResult<Vec<Value>> {
    let mut threads: Vec<Value> = shared
        .db
        .threads()
        .await?
        .into_iter()
        .filter(|t| {
            caller.owns(t)
                && search
                    .metadata
                    .as_ref()
                    .is_none_or(|m| contains_all(&t["metadata"], m))
                && search
                    .values
                    .as_ref()
                    .is_none_or(|v| contains_all(&t["values"], v))
                && search.status.as_ref().is_none_or(|s| t["status"] == **s)
                && search
                    .ids
                    .as_ref()
                    .is_none_or(|ids| ids.iter().any(|id| t["thread_id"] == **id))
        })
        .collect();
    let key = search
        .sort_by
        .clone()
        .unwrap_or_else(|| "created_at".into());
    threads.sort_by(|a, b| {
        let (a, b) = (a[&key].to_string(), b[&key].to_string());
        a.cmp(&b)
    });
    if search.sort_order.as_deref() != Some("asc") {
        threads.reverse();
    }
    Ok(threads)
}

async fn search_threads(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let search: ThreadSearch = body(&bytes)?;
    let page: Vec<Value> = matching_threads(&shared, &caller, &search)
        .await?
        .into_iter()
        .skip(search.offset.unwrap_or(0))
        .take(search.limit.unwrap_or(10))
        .collect();
    Ok(Json(Value::Array(page)))
}

async fn count_threads(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let search: ThreadSearch = body(&bytes)?;
    Ok(Json(json!(matching_threads(&shared, &caller, &search)
        .await?
        .len())))
}

async fn copy_thread(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let thread = thread_for(&shared, &caller, &id).await?;
    let copy = new_id();
    let metadata = thread["metadata"].as_object().cloned().unwrap_or_default();
    shared.db.insert_thread(&copy, &metadata).await?;
    rewrite_thread(&*shared.saver, &id, &copy, None).await?;
    let status = thread["status"].as_str().unwrap_or("idle");
    let status = if status == "busy" { "idle" } else { status };
    shared
        .db
        .set_thread_state(
            &copy,
            status,
            Some(&thread["values"]),
            &thread["interrupts"],
            None,
        )
        .await?;
    Ok(Json(thread_for(&shared, &caller, &copy).await?))
}

#[derive(Deserialize, Default)]
struct SubgraphsQuery {
    #[serde(default)]
    #[allow(dead_code)]
    subgraphs: Option<bool>,
}

async fn get_state(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    Query(_q): Query<SubgraphsQuery>,
) -> ApiResult<Json<Value>> {
    let thread = thread_for(&shared, &caller, &id).await?;
    let a = shared.thread_graph(&thread)?;
    Ok(Json(a.graph.get_state(RunConfig::thread(&id)).await?))
}

async fn state_at(
    State(shared): AppState,
    caller: Caller,
    Path((id, checkpoint_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let thread = thread_for(&shared, &caller, &id).await?;
    let a = shared.thread_graph(&thread)?;
    let config = RunConfig::thread(&id).with_checkpoint_id(checkpoint_id);
    Ok(Json(a.graph.get_state(config).await?))
}

async fn state_at_body(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let at: StateAtBody = body(&bytes)?;
    let thread = thread_for(&shared, &caller, &id).await?;
    let a = shared.thread_graph(&thread)?;
    let mut config = RunConfig::thread(&id);
    if let Some(cp) = at.checkpoint.checkpoint_id {
        config = config.with_checkpoint_id(cp);
    }
    Ok(Json(a.graph.get_state(config).await?))
}

async fn update_state(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    let update: StateUpdateBody = body(&bytes)?;
    let thread = thread_for(&shared, &caller, &id).await?;
    let a = shared.thread_graph(&thread)?;
    let mut config = RunConfig::thread(&id);
    let at = update
        .checkpoint_id
        .or_else(|| update.checkpoint.and_then(|c| c.checkpoint_id));
    if let Some(cp) = at {
        config = config.with_checkpoint_id(cp);
    }
    let stored = a
        .graph
        .update_state(config, update.values.as_deref(), update.as_node.as_deref())
        .await?;
    let state = a.graph.get_state(RunConfig::thread(&id)).await?;
    let status = if state["next"].as_array().is_some_and(|n| !n.is_empty()) {
        "interrupted"
    } else {
        "idle"
    };
    shared
        .db
        .set_thread_state(
            &id,
            status,
            Some(&state["values"]),
            &crate::graph::interrupts_of(&state),
            None,
        )
        .await?;
    let checkpoint = || Checkpoint {
        thread_id: &stored.thread_id,
        checkpoint_ns: &stored.checkpoint_ns,
        checkpoint_id: stored.checkpoint_id.as_deref(),
    };
    Ok(Json(json!(StateUpdated {
        checkpoint: checkpoint(),
        configurable: checkpoint(),
        checkpoint_id: stored.checkpoint_id.as_deref(),
    })))
}

async fn history_of(
    shared: &Shared,
    caller: &Caller,
    id: &str,
    h: HistoryBody,
) -> ApiResult<Json<Value>> {
    let thread = thread_for(shared, caller, id).await?;
    let a = shared.thread_graph(&thread)?;
    let before = match &h.before {
        Some(Value::String(id)) => Some(id.clone()),
        Some(v) => v["checkpoint_id"]
            .as_str()
            .or_else(|| v["configurable"]["checkpoint_id"].as_str())
            .map(str::to_owned),
        None => None,
    };
    let options = ListOptions {
        filter: h.metadata.unwrap_or_default(),
        before,
        limit: Some(h.limit.unwrap_or(10)),
    };
    let mut config = RunConfig::thread(id);
    if let Some(ns) = h.checkpoint.and_then(|c| c.checkpoint_ns) {
        config = config.with_checkpoint_ns(ns);
    }
    Ok(Json(Value::Array(a.graph.history(config, options).await?)))
}

async fn history(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    history_of(&shared, &caller, &id, body(&bytes)?).await
}

#[derive(Deserialize, Default, JsonSchema)]
pub(crate) struct HistoryQuery {
    limit: Option<usize>,
    before: Option<String>,
}

async fn history_get(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> ApiResult<Json<Value>> {
    let h = HistoryBody {
        limit: q.limit,
        before: q.before.map(Value::String),
        ..HistoryBody::default()
    };
    history_of(&shared, &caller, &id, h).await
}

async fn create_run(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let run = shared
        .create_run(&caller, Some(&id), run_body(&bytes)?, false)
        .await?;
    Ok(with_location(
        Json(run.to_json()).into_response(),
        &run.thread_id,
        &run.run_id,
        false,
    ))
}

async fn create_stateless(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> ApiResult<Response> {
    let run = shared
        .create_run(&caller, None, run_body(&bytes)?, false)
        .await?;
    Ok(Json(run.to_json()).into_response())
}

async fn wait_run(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let run = shared
        .create_run(&caller, Some(&id), run_body(&bytes)?, true)
        .await?;
    let out = shared.outcome(&run.run_id).await?;
    Ok(with_location(
        Json(out).into_response(),
        &run.thread_id,
        &run.run_id,
        false,
    ))
}

async fn wait_stateless(
    State(shared): AppState,
    caller: Caller,
    bytes: Bytes,
) -> ApiResult<Response> {
    let run = shared
        .create_run(&caller, None, run_body(&bytes)?, true)
        .await?;
    Ok(Json(shared.outcome(&run.run_id).await?).into_response())
}

fn with_location(mut response: Response, thread: &str, run: &str, stream: bool) -> Response {
    let path = format!(
        "/threads/{thread}/runs/{run}{}",
        if stream { "/stream" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&format!("/threads/{thread}/runs/{run}")) {
        response
            .headers_mut()
            .insert(header::CONTENT_LOCATION, value);
    }
    if stream && let Ok(value) = HeaderValue::from_str(&path) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// Cancels a streamed run when its client goes away (`on_disconnect=cancel`).
struct DisconnectGuard(Option<Arc<LiveRun>>);

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if let Some(live) = self.0.take()
            && !live.is_done()
        {
            live.cancel(CancelAction::Interrupt);
        }
    }
}

/// The SSE response of a run's events after the `after`-th — live here, or,
/// for a run another process executes, as that process stores them —
/// counted against its client's streams until it ends.
fn sse(
    shared: &Arc<Shared>,
    run: &RunRow,
    after: usize,
    cancel_on_disconnect: bool,
    permit: StreamPermit,
) -> Response {
    let live = shared.live(&run.run_id);
    let guard = DisconnectGuard(
        live.as_ref()
            .filter(|_| cancel_on_disconnect)
            .map(Arc::clone),
    );
    let source = match &live {
        Some(live) => live.subscribe(after).boxed(),
        #[cfg(feature = "postgres")]
        None if shared.db.keeps_outcomes() => shared.stored_events(&run.run_id, after).boxed(),
        None => futures::stream::empty().boxed(),
    };
    let events = source.map(move |(id, e)| {
        let _keep = (&guard, &permit);
        Ok::<_, Infallible>(
            Event::default()
                .event(&*e.event)
                .data(&*e.data)
                .id(id.to_string()),
        )
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn stream_run(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    permit: StreamPermit,
    bytes: Bytes,
) -> ApiResult<Response> {
    let body = run_body(&bytes)?;
    let cancel = body.on_disconnect == Some(crate::wire::OnDisconnect::Cancel);
    let run = shared.create_run(&caller, Some(&id), body, true).await?;
    Ok(with_location(
        sse(&shared, &run, 0, cancel, permit),
        &run.thread_id,
        &run.run_id,
        true,
    ))
}

async fn stream_stateless(
    State(shared): AppState,
    caller: Caller,
    permit: StreamPermit,
    bytes: Bytes,
) -> ApiResult<Response> {
    let body = run_body(&bytes)?;
    let cancel = body.on_disconnect == Some(crate::wire::OnDisconnect::Cancel);
    let run = shared.create_run(&caller, None, body, true).await?;
    Ok(sse(&shared, &run, 0, cancel, permit))
}

#[derive(Deserialize, Default, JsonSchema)]
pub(crate) struct ListQuery {
    limit: Option<usize>,
    offset: Option<usize>,
    status: Option<String>,
}

async fn list_runs(
    State(shared): AppState,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Value>> {
    thread_for(&shared, &caller, &id).await?;
    let runs = shared
        .db
        .runs(
            &id,
            q.status.as_deref(),
            q.limit.unwrap_or(10),
            q.offset.unwrap_or(0),
        )
        .await?;
    Ok(Json(Value::Array(
        runs.iter().map(|r| r.to_json()).collect(),
    )))
}

async fn get_run(
    State(shared): AppState,
    caller: Caller,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    thread_for(&shared, &caller, &id).await?;
    let run = shared
        .db
        .run(&id, &run_id)
        .await?
        .ok_or_else(|| ApiError::run(&run_id))?;
    Ok(Json(run.to_json()))
}

async fn delete_run(
    State(shared): AppState,
    caller: Caller,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    thread_for(&shared, &caller, &id).await?;
    let run = shared
        .db
        .run(&id, &run_id)
        .await?
        .ok_or_else(|| ApiError::run(&run_id))?;
    if run.status == "running" || run.status == "pending" {
        shared.cancel(&id, &run_id, CancelAction::Interrupt).await?;
    }
    shared.db.delete_run(&run_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, Default, JsonSchema)]
pub(crate) struct CancelQuery {
    /// `true`, `1`...
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    action: Option<String>,
}

async fn cancel_run(
    State(shared): AppState,
    caller: Caller,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<CancelQuery>,
) -> ApiResult<StatusCode> {
    let action = match q.action.as_deref() {
        Some("rollback") => CancelAction::Rollback,
        _ => CancelAction::Interrupt,
    };
    thread_for(&shared, &caller, &id).await?;
    shared
        .db
        .run(&id, &run_id)
        .await?
        .ok_or_else(|| ApiError::run(&run_id))?;
    if q.wait.as_deref().is_some_and(|w| w == "1" || w == "true") {
        shared.cancel(&id, &run_id, action).await?;
    } else {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            if let Err(e) = shared.cancel(&id, &run_id, action).await {
                tracing::warn!(error = %e, "cancelling a run failed");
            }
        });
    }
    Ok(StatusCode::ACCEPTED)
}

async fn join_run(
    State(shared): AppState,
    caller: Caller,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    thread_for(&shared, &caller, &id).await?;
    let run = shared
        .db
        .run(&id, &run_id)
        .await?
        .ok_or_else(|| ApiError::run(&run_id))?;
    if shared.live(&run_id).is_some() || !is_final(&run.status) || shared.db.keeps_outcomes() {
        // Here, or in whichever process runs it.
        return Ok(Json(shared.outcome(&run_id).await?));
    }
    // Over: the thread's values, as LangGraph Server answers.
    let thread = thread_for(&shared, &caller, &id).await?;
    let mut values = thread["values"].clone();
    if let (Value::Object(map), Some(i)) = (&mut values, thread["interrupts"].as_object()) {
        let pending: Vec<&Value> = i.values().filter_map(Value::as_array).flatten().collect();
        if !pending.is_empty() {
            map.insert("__interrupt__".into(), json!(pending));
        }
    }
    Ok(Json(values))
}

#[derive(Deserialize, Default, JsonSchema)]
pub(crate) struct JoinStreamQuery {
    #[serde(default)]
    cancel_on_disconnect: Option<bool>,
}

async fn join_stream(
    State(shared): AppState,
    caller: Caller,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<JoinStreamQuery>,
    headers: HeaderMap,
    permit: StreamPermit,
) -> ApiResult<Response> {
    thread_for(&shared, &caller, &id).await?;
    let run = shared
        .db
        .run(&id, &run_id)
        .await?
        .ok_or_else(|| ApiError::run(&run_id))?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let cancel = q.cancel_on_disconnect.unwrap_or(false);
    Ok(sse(&shared, &run, after, cancel, permit))
}
