//! The server's own logic, through its router (no sockets): runs, streams and
//! their event ids, typed input errors, LangGraph's error shapes, multitask
//! strategies. The Python SDK suite (tests/sdk/) covers the wire against the
//! real clients.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use graph_server::{Running, Server};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use stategraph::prelude::*;
use tower::ServiceExt;

fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct S {
    #[reducer(append)]
    messages: Vec<String>,
    #[reducer(std::ops::Add::add)]
    count: i64,
}

#[node]
fn model(s: &S) -> SUpdate {
    let last = s.messages.last().cloned().unwrap_or_default();
    S::update().messages(vec![format!("echo: {last}")]).count(1)
}

#[node]
fn review(_: &S, ctx: &Context) -> Result<SUpdate, NodeError> {
    let answer: String = ctx.interrupt("ok?")?;
    Ok(S::update().messages(vec![format!("review: {answer}")]))
}

#[node]
async fn gate(_: &S) -> SUpdate {
    // Never finishes on its own: runs on this graph stay running until cancelled.
    std::future::pending::<()>().await;
    S::update()
}

async fn server(dir: &tempfile::TempDir) -> Running {
    graphs(dir).start().await.unwrap()
}

/// The test graphs on a server storing into `dir`.
fn graphs(dir: &tempfile::TempDir) -> Server {
    let agent = StateGraph::<S>::new()
        .add_node(model)
        .add_edge(START, model)
        .compile()
        .unwrap();
    let hitl = StateGraph::<S>::new()
        .add_node(model)
        .add_node(review)
        .add_edge(START, model)
        .add_edge(model, review)
        .compile()
        .unwrap();
    let stuck = StateGraph::<S>::new()
        .add_node(gate)
        .add_edge(START, gate)
        .compile()
        .unwrap();
    Server::new()
        .assistant_with_schema("typed", agent.clone())
        .assistant("agent", agent)
        .assistant("hitl", hitl)
        .assistant("stuck", stuck)
        .database(dir.path().join("server.db"))
}

async fn call(
    running: &Running,
    method: &str,
    uri: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let body = match body {
        Some(b) => Body::from(b.to_string()),
        None => Body::empty(),
    };
    let response = running
        .router()
        .oneshot(
            request
                .header("content-type", "application/json")
                .body(body)
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn json_call(
    running: &Running,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let (status, text) = call(running, method, uri, body, &[]).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn new_thread(running: &Running) -> String {
    let (status, thread) = json_call(running, "POST", "/threads", Some(json!({}))).await;
    assert_eq!(status, StatusCode::OK);
    thread["thread_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_wait_run_returns_the_state_and_leaves_the_thread_idle() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let (status, out) = json_call(
        &running,
        "POST",
        &format!("/threads/{tid}/runs/wait"),
        Some(json!({"assistant_id": "agent", "input": {"messages": ["hi"]}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Python (langgraph dev, the same graph): {"messages": ["hi", "echo: hi"], "count": 1}
    assert_eq!(out, json!({"messages": ["hi", "echo: hi"], "count": 1}));
    let (_, thread) = json_call(&running, "GET", &format!("/threads/{tid}"), None).await;
    assert_eq!(thread["status"], "idle");
    assert_eq!(thread["values"]["count"], 1);
    assert_eq!(thread["metadata"]["graph_id"], "agent");
    running.shutdown().await;
}

#[tokio::test]
async fn a_thread_without_runs_updates_the_state_of_the_graph_its_metadata_names() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let (_, thread) = json_call(
        &running,
        "POST",
        "/threads",
        Some(json!({"metadata": {"graph_id": "hitl"}})),
    )
    .await;
    let tid = thread["thread_id"].as_str().unwrap();
    // `review` is a node of `hitl` only: the first assistant (`agent`) would
    // refuse it.
    let (status, out) = json_call(
        &running,
        "POST",
        &format!("/threads/{tid}/state"),
        Some(json!({"values": {"messages": ["typed"]}, "as_node": "review"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    let (_, state) = json_call(&running, "GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(state["values"]["messages"], json!(["typed"]));
    running.shutdown().await;
}

#[tokio::test]
async fn input_that_does_not_fit_the_state_is_422_with_the_field_path() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let (status, body) = json_call(
        &running,
        "POST",
        &format!("/threads/{tid}/runs/wait"),
        Some(json!({"assistant_id": "agent", "input": {"count": "three"}})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("input.count: invalid type: string"),
        "{detail}"
    );
    assert_eq!(body["errors"][0]["loc"], json!(["input", "count"]));
    // Nothing was queued.
    let (_, runs) = json_call(&running, "GET", &format!("/threads/{tid}/runs"), None).await;
    assert_eq!(runs, json!([]));
    running.shutdown().await;
}

#[tokio::test]
async fn unknown_ids_are_404_in_langgraphs_shape() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let none = "00000000-0000-0000-0000-000000000000";
    let (status, body) = json_call(&running, "GET", &format!("/threads/{none}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // LangGraph Server: {"detail": "Thread with ID ... not found"}
    assert_eq!(
        body,
        json!({"detail": format!("Thread with ID {none} not found")})
    );
    let (status, _) = json_call(&running, "GET", &format!("/assistants/{none}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let tid = new_thread(&running).await;
    let (status, body) = json_call(
        &running,
        "GET",
        &format!("/threads/{tid}/runs/{none}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        json!({"detail": format!("Run with ID {none} not found")})
    );
    running.shutdown().await;
}

/// The `(id, event, data)` of each event of an SSE body.
fn sse_events(text: &str) -> Vec<(String, String, Value)> {
    text.split("\n\n")
        .filter(|block| block.contains("data:"))
        .map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
                    .unwrap_or_default()
            };
            let data = field("data:");
            (
                field("id:"),
                field("event:"),
                serde_json::from_str(&data).unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn streamed_events_carry_ids_and_a_reconnect_replays_what_was_missed() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let (status, text) = call(
        &running,
        "POST",
        &format!("/threads/{tid}/runs/stream"),
        Some(json!({
            "assistant_id": "agent",
            "input": {"messages": ["m"]},
            "stream_mode": ["values", "updates"],
            "stream_resumable": true,
        })),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let events = sse_events(&text);
    let names: Vec<&str> = events.iter().map(|(_, e, _)| e.as_str()).collect();
    // Python (langgraph dev): metadata, values, updates, values
    assert_eq!(names, ["metadata", "values", "updates", "values"]);
    let ids: Vec<&str> = events.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4"]);
    assert_eq!(
        events[2].2,
        json!({"model": {"messages": ["echo: m"], "count": 1}})
    );
    let run_id = events[0].2["run_id"].as_str().unwrap().to_owned();

    // A client that saw event 2 reconnects: it gets 3 and 4.
    let (status, text) = call(
        &running,
        "GET",
        &format!("/threads/{tid}/runs/{run_id}/stream"),
        None,
        &[("last-event-id", "2")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let replay = sse_events(&text);
    assert_eq!(replay.len(), 2);
    assert_eq!(
        (replay[0].0.as_str(), replay[0].1.as_str()),
        ("3", "updates")
    );
    assert_eq!(
        replay[1].2,
        json!({"messages": ["m", "echo: m"], "count": 1})
    );
    running.shutdown().await;
}

#[tokio::test]
async fn an_interrupt_is_answered_by_a_command_resume() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let uri = format!("/threads/{tid}/runs/wait");
    let (_, out) = json_call(
        &running,
        "POST",
        &uri,
        Some(json!({"assistant_id": "hitl", "input": {"messages": ["x"]}})),
    )
    .await;
    // Python: {"messages": ["x", "echo: x"], "count": 1, "__interrupt__": [{"value": "ok?", "id": ..}]}
    assert_eq!(out["messages"], json!(["x", "echo: x"]));
    assert_eq!(out["__interrupt__"][0]["value"], "ok?");
    let (_, thread) = json_call(&running, "GET", &format!("/threads/{tid}"), None).await;
    assert_eq!(thread["status"], "interrupted");
    let (_, out) = json_call(
        &running,
        "POST",
        &uri,
        Some(json!({"assistant_id": "hitl", "command": {"resume": "yes"}})),
    )
    .await;
    assert_eq!(
        out,
        json!({"messages": ["x", "echo: x", "review: yes"], "count": 1})
    );
    running.shutdown().await;
}

#[tokio::test]
async fn a_busy_thread_rejects_queues_or_interrupts_by_the_multitask_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let runs = format!("/threads/{tid}/runs");
    let (status, first) = json_call(
        &running,
        "POST",
        &runs,
        Some(json!({"assistant_id": "stuck", "input": {"messages": ["1"]}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let first_id = first["run_id"].as_str().unwrap().to_owned();
    let (status, body) = json_call(
        &running,
        "POST",
        &runs,
        Some(json!({"assistant_id": "agent", "input": {"messages": ["2"]}, "multitask_strategy": "reject"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // `interrupt`: the stuck run is cancelled, the new one runs after it.
    let (status, out) = json_call(
        &running,
        "POST",
        &format!("{runs}/wait"),
        Some(json!({"assistant_id": "agent", "input": {"messages": ["2"]}, "multitask_strategy": "interrupt"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        out["messages"].as_array().unwrap().last().unwrap(),
        "echo: 2"
    );
    let (_, first) = json_call(&running, "GET", &format!("{runs}/{first_id}"), None).await;
    assert_eq!(first["status"], "interrupted");
    running.shutdown().await;
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_run_with_on_disconnect_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let body = json!({
        "assistant_id": "stuck",
        "input": {"messages": ["1"]},
        "on_disconnect": "cancel",
    });
    let response = running
        .router()
        .oneshot(
            Request::builder()
                .method("POST")
                .uri(format!("/threads/{tid}/runs/stream"))
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
        .unwrap();
    let mut body = response.into_body();
    // The first event (metadata) names the run; then the client goes away.
    let frame = body.frame().await.unwrap().unwrap();
    let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
    let run_id = sse_events(&text)[0].2["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    drop(body);
    let (status, out) = json_call(
        &running,
        "GET",
        &format!("/threads/{tid}/runs/{run_id}/join"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{out}");
    let (_, run) = json_call(
        &running,
        "GET",
        &format!("/threads/{tid}/runs/{run_id}"),
        None,
    )
    .await;
    assert_eq!(run["status"], "interrupted");
    running.shutdown().await;
}

/// Every operation of the OpenAPI document, as `(method, path)`.
fn operations(doc: &Value) -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, methods) in doc["paths"].as_object().unwrap() {
        for method in methods.as_object().unwrap().keys() {
            ops.push((method.to_uppercase(), path.clone()));
        }
    }
    ops.sort();
    ops
}

/// The properties a component schema names.
fn properties(doc: &Value, name: &str) -> Vec<String> {
    let schema = &doc["components"]["schemas"][name];
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no schema {name}: {schema}"))
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

fn keys(value: &Value) -> Vec<String> {
    let mut names: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    names.sort();
    names
}

#[tokio::test]
async fn openapi_json_lists_every_route_and_types_what_they_read_and_write() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let (status, doc) = json_call(&running, "GET", "/openapi.json", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let ops = operations(&doc);
    let mut expected: Vec<(String, String)> = [
        "GET /ok",
        "GET /info",
        "GET /openapi.json",
        "POST /assistants/search",
        "POST /assistants/count",
        "GET /assistants/{assistant_id}",
        "GET /assistants/{assistant_id}/graph",
        "GET /assistants/{assistant_id}/schemas",
        "GET /assistants/{assistant_id}/subgraphs",
        "POST /assistants/{assistant_id}/versions",
        "POST /threads",
        "POST /threads/search",
        "POST /threads/count",
        "GET /threads/{thread_id}",
        "PATCH /threads/{thread_id}",
        "DELETE /threads/{thread_id}",
        "POST /threads/{thread_id}/copy",
        "GET /threads/{thread_id}/state",
        "POST /threads/{thread_id}/state",
        "POST /threads/{thread_id}/state/checkpoint",
        "GET /threads/{thread_id}/state/{checkpoint_id}",
        "GET /threads/{thread_id}/history",
        "POST /threads/{thread_id}/history",
        "GET /threads/{thread_id}/runs",
        "POST /threads/{thread_id}/runs",
        "POST /threads/{thread_id}/runs/wait",
        "POST /threads/{thread_id}/runs/stream",
        "GET /threads/{thread_id}/runs/{run_id}",
        "DELETE /threads/{thread_id}/runs/{run_id}",
        "POST /threads/{thread_id}/runs/{run_id}/cancel",
        "GET /threads/{thread_id}/runs/{run_id}/join",
        "GET /threads/{thread_id}/runs/{run_id}/stream",
        "POST /runs",
        "POST /runs/wait",
        "POST /runs/stream",
        "GET /store/items",
        "PUT /store/items",
        "DELETE /store/items",
        "POST /store/items/search",
        "POST /store/namespaces",
    ]
    .iter()
    .map(|op| {
        let (method, path) = op.split_once(' ').unwrap();
        (method.to_owned(), path.to_owned())
    })
    .collect();
    expected.sort();
    assert_eq!(ops, expected);

    // Each listed operation is routed: an unknown id is the handler's 404
    // (with a `detail`), never the router's empty 404 or a 405.
    let none = "00000000-0000-0000-0000-000000000000";
    for (method, path) in &ops {
        let uri = path
            .replace("{assistant_id}", "agent")
            .replace("{thread_id}", none)
            .replace("{run_id}", none)
            .replace("{checkpoint_id}", none);
        let (status, text) = call(&running, method, &uri, None, &[]).await;
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        assert!(
            status != StatusCode::NOT_FOUND || text.contains("detail"),
            "{method} {path} is not routed"
        );
    }

    // Bodies and answers are typed by the wire types.
    let run_create = &doc["paths"]["/threads/{thread_id}/runs"]["post"]["requestBody"];
    assert_eq!(
        run_create["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/RunCreate"
    );
    assert_eq!(
        doc["components"]["schemas"]["RunCreate"]["required"],
        json!(["assistant_id"])
    );
    let strategies: Vec<&Value> = doc["components"]["schemas"]["MultitaskStrategy"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| &variant["const"])
        .collect();
    assert_eq!(
        strategies,
        [
            &json!("reject"),
            &json!("interrupt"),
            &json!("rollback"),
            &json!("enqueue")
        ]
    );
    let thread_ref = &doc["paths"]["/threads/{thread_id}"]["get"]["responses"]["200"]["content"]
        ["application/json"]["schema"]["$ref"];
    assert_eq!(thread_ref, "#/components/schemas/Thread");

    // The answer types name exactly the fields the handlers write.
    let tid = new_thread(&running).await;
    let (_, thread) = json_call(&running, "GET", &format!("/threads/{tid}"), None).await;
    assert_eq!(properties(&doc, "Thread"), keys(&thread));
    let (_, run) = json_call(
        &running,
        "POST",
        &format!("/threads/{tid}/runs/wait"),
        Some(json!({"assistant_id": "hitl", "input": {"messages": ["hi"]}})),
    )
    .await;
    assert!(run.is_object());
    let (_, runs) = json_call(&running, "GET", &format!("/threads/{tid}/runs"), None).await;
    assert_eq!(properties(&doc, "Run"), keys(&runs[0]));
    let (_, state) = json_call(&running, "GET", &format!("/threads/{tid}/state"), None).await;
    assert_eq!(properties(&doc, "ThreadState"), keys(&state));
    assert_eq!(properties(&doc, "ThreadTask"), keys(&state["tasks"][0]));
    assert_eq!(properties(&doc, "Interrupt"), keys(&state["interrupts"][0]));
    let (_, assistant) = json_call(&running, "GET", "/assistants/agent", None).await;
    assert_eq!(properties(&doc, "Assistant"), keys(&assistant));
    let (_, schemas) = json_call(&running, "GET", "/assistants/agent/schemas", None).await;
    assert_eq!(properties(&doc, "GraphSchemas"), keys(&schemas));
    running.shutdown().await;
}

#[tokio::test]
async fn schemas_type_the_state_fields_of_a_graph_served_with_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let (status, schemas) = json_call(&running, "GET", "/assistants/typed/schemas", None).await;
    assert_eq!(status, StatusCode::OK);
    // LangGraph Server, for `class S(TypedDict): messages: Annotated[list,
    // operator.add]; count: Annotated[int, operator.add]`, answers
    // {"properties": {"messages": {"default": null, "items": {}, "title":
    // "Messages", "type": "array"}, "count": {"default": null, "title":
    // "Count", "type": "integer"}}, "title": "agent_state", "type": "object"}
    // (no `required`: an input may set any field).
    let state = &schemas["state_schema"];
    assert_eq!(state["type"], "object");
    assert_eq!(state["properties"]["count"]["type"], "integer");
    assert_eq!(state["properties"]["messages"]["type"], "array");
    assert_eq!(state["properties"]["messages"]["items"]["type"], "string");
    assert!(state.get("required").is_none(), "{state}");
    assert_eq!(schemas["input_schema"], *state);
    assert_eq!(schemas["output_schema"], *state);
    // Served without its schema: the fields, untyped.
    let (_, schemas) = json_call(&running, "GET", "/assistants/agent/schemas", None).await;
    let state = &schemas["state_schema"];
    assert_eq!(keys(&state["properties"]), ["count", "messages"]);
    assert!(state["properties"]["count"].get("type").is_none());
    running.shutdown().await;
}

#[tokio::test]
async fn a_bad_xray_is_422() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    // LangGraph Server: 422 {"detail": "Invalid xray value"}.
    let (status, body) = json_call(&running, "GET", "/assistants/agent/graph?xray=abc", None).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["errors"][0]["loc"], json!(["xray"]));
    let (status, _) = json_call(&running, "GET", "/assistants/agent/graph?xray=1", None).await;
    assert_eq!(status, StatusCode::OK);
    running.shutdown().await;
}

/// Starts a streamed run on a new thread of `stuck` (it never ends) and
/// answers the response, its events unread: the stream stays open while it
/// is held.
async fn open_stream(running: &Running, tid: &str) -> axum::response::Response {
    let body = json!({"assistant_id": "stuck", "input": {}, "stream_mode": "values"});
    running
        .router()
        .oneshot(
            Request::builder()
                .method("POST")
                .uri(format!("/threads/{tid}/runs/stream"))
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn a_client_past_its_stream_limit_is_429_and_starts_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let running = graphs(&dir).stream_limit(2).start().await.unwrap();
    let (a, b, c) = (
        new_thread(&running).await,
        new_thread(&running).await,
        new_thread(&running).await,
    );
    let first = open_stream(&running, &a).await;
    assert_eq!(first.status(), StatusCode::OK);
    let second = open_stream(&running, &b).await;
    assert_eq!(second.status(), StatusCode::OK);
    let refused = open_stream(&running, &c).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let bytes = refused.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("has reached this server's limit of 2 open streams per client"),
        "{detail}"
    );
    let (_, runs) = json_call(&running, "GET", &format!("/threads/{c}/runs"), None).await;
    assert_eq!(runs, json!([]), "a refused stream started a run");
    // Joining a run's stream counts too.
    let (_, listed) = json_call(&running, "GET", &format!("/threads/{a}/runs"), None).await;
    let run_id = listed[0]["run_id"].as_str().unwrap();
    let (status, _) = call(
        &running,
        "GET",
        &format!("/threads/{a}/runs/{run_id}/stream"),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // A closed stream frees its place.
    drop(first);
    let third = open_stream(&running, &c).await;
    assert_eq!(third.status(), StatusCode::OK);
    drop((second, third));
    running.shutdown().await;
}

#[tokio::test]
async fn history_shows_answered_interrupts_and_each_tasks_writes_as_one_object() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let wait = format!("/threads/{tid}/runs/wait");
    json_call(
        &running,
        "POST",
        &wait,
        Some(json!({"assistant_id": "hitl", "input": {"messages": ["hi"]}})),
    )
    .await;
    json_call(
        &running,
        "POST",
        &wait,
        Some(json!({"assistant_id": "hitl", "command": {"resume": "yes"}})),
    )
    .await;
    let (status, history) = json_call(
        &running,
        "POST",
        &format!("/threads/{tid}/history"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // LangGraph Server (langgraph-api 0.16.7) on the same graph:
    // next [] interrupts [] tasks []
    // next ['review'] interrupts [{id, value: "ok?"}] tasks [review, [{id, value}], {"messages": ["review: yes"]}]
    // next ['model'] interrupts [] tasks [model, [], {"messages": ["echo: hi"], "count": 1}]
    // next ['__start__'] interrupts [] tasks [__start__, [], {"messages": ["hi"]}]
    let next: Vec<&Value> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["next"])
        .collect();
    assert_eq!(
        next,
        [
            &json!([]),
            &json!(["review"]),
            &json!(["model"]),
            &json!(["__start__"])
        ]
    );
    let paused = &history[1];
    assert_eq!(paused["interrupts"][0]["value"], "ok?");
    assert_eq!(paused["tasks"][0]["interrupts"], paused["interrupts"]);
    assert_eq!(
        paused["tasks"][0]["result"],
        json!({"messages": ["review: yes"]})
    );
    assert_eq!(
        history[2]["tasks"][0]["result"],
        json!({"messages": ["echo: hi"], "count": 1})
    );
    assert_eq!(history[2]["interrupts"], json!([]));
    running.shutdown().await;
}

#[tokio::test]
async fn tasks_events_carry_the_state_each_task_reads() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let tid = new_thread(&running).await;
    let (_, text) = call(
        &running,
        "POST",
        &format!("/threads/{tid}/runs/stream"),
        Some(
            json!({"assistant_id": "hitl", "input": {"messages": ["hi"]}, "stream_mode": "tasks"}),
        ),
        &[],
    )
    .await;
    let events = sse_events(&text);
    // LangGraph Server on the same graph: {"id": .., "name": "model", "input":
    // {"messages": ["hi"], "count": 0}, "triggers": ["branch:to:model"], ..},
    // then model's result, then review's start with the state model left.
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(_, event, data)| event == "tasks" && data.get("triggers").is_some())
        .map(|(_, _, data)| data)
        .collect();
    assert_eq!(starts[0]["name"], "model");
    assert_eq!(starts[0]["input"], json!({"messages": ["hi"], "count": 0}));
    assert_eq!(starts[1]["name"], "review");
    assert_eq!(
        starts[1]["input"],
        json!({"messages": ["hi", "echo: hi"], "count": 1})
    );
    // Only the modes asked for are sent.
    assert!(
        events
            .iter()
            .all(|(_, e, _)| e == "tasks" || e == "metadata"),
        "{events:?}"
    );
    // A resumed run: the paused task reads the state it paused on.
    let (_, text) = call(
        &running,
        "POST",
        &format!("/threads/{tid}/runs/stream"),
        Some(json!({"assistant_id": "hitl", "command": {"resume": "yes"}, "stream_mode": "tasks"})),
        &[],
    )
    .await;
    let events = sse_events(&text);
    let review = events
        .iter()
        .find(|(_, event, data)| {
            event == "tasks" && data["name"] == "review" && data.get("triggers").is_some()
        })
        .map(|(_, _, data)| data)
        .unwrap();
    assert_eq!(
        review["input"],
        json!({"messages": ["hi", "echo: hi"], "count": 1})
    );
    running.shutdown().await;
}
