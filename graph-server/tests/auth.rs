//! Authentication and tenancy: 401 without a key; another caller's thread
//! and runs are 404 on every endpoint and never in a search; bodies over the
//! limit are 413; streams past the limit of a caller are 429.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use graph_server::{ApiKeys, Running, Server};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use stategraph::prelude::*;
use tower::ServiceExt;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    #[reducer(std::ops::Add::add)]
    count: i64,
}

#[node]
fn step(_: &S) -> SUpdate {
    S::update().count(1)
}

async fn server(dir: &tempfile::TempDir) -> Running {
    builder(dir).start().await.unwrap()
}

fn builder(dir: &tempfile::TempDir) -> Server {
    let app = StateGraph::<S>::new()
        .add_node(step)
        .add_edge(START, step)
        .compile()
        .unwrap();
    Server::new()
        .assistant("agent", app)
        .database(dir.path().join("server.db"))
        .authenticator(ApiKeys::new().key("k-alice", "alice").key("k-bob", "bob"))
        .body_limit(4096)
}

async fn call(
    running: &Running,
    key: Option<&str>,
    method: &str,
    uri: &str,
    body: Option<String>,
) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let body = body.map_or_else(Body::empty, Body::from);
    let response = running
        .router()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn requests_without_a_valid_key_are_401_but_ok_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let (status, body) = call(&running, None, "POST", "/threads", Some("{}".into())).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["detail"].as_str().unwrap().contains("API key"),
        "{body}"
    );
    let (status, _) = call(
        &running,
        Some("wrong"),
        "POST",
        "/threads",
        Some("{}".into()),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = call(&running, None, "GET", "/ok", None).await;
    assert_eq!(status, StatusCode::OK);
    running.shutdown().await;
}

#[tokio::test]
async fn the_studio_page_loads_without_a_key_but_its_api_calls_need_one() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    for page in ["/studio/", "/studio/app.js"] {
        let response = running
            .router()
            .oneshot(Request::get(page).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{page}");
    }
    // A path under /studio that is not an asset is still a 404, not data.
    let response = running
        .router()
        .oneshot(Request::get("/studio/nope.js").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let search = Some(r#"{"limit": 10}"#.to_owned());
    let (status, _) = call(&running, None, "POST", "/threads/search", search.clone()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = call(&running, Some("k-alice"), "POST", "/threads/search", search).await;
    assert_eq!(status, StatusCode::OK);
    running.shutdown().await;
}

#[tokio::test]
async fn another_callers_thread_is_404_everywhere_and_absent_from_searches() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let alice = Some("k-alice");
    let bob = Some("k-bob");
    let (_, thread) = call(
        &running,
        alice,
        "POST",
        "/threads",
        Some(r#"{"metadata": {"owner": "bob"}}"#.into()),
    )
    .await;
    let tid = thread["thread_id"].as_str().unwrap().to_owned();
    // The owner is the caller, whatever the body says.
    assert_eq!(thread["metadata"]["owner"], "alice");
    let run_body = json!({"assistant_id": "agent", "input": {"count": 1}}).to_string();
    let (status, out) = call(
        &running,
        alice,
        "POST",
        &format!("/threads/{tid}/runs/wait"),
        Some(run_body.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(out, json!({"count": 2}));
    let (_, runs) = call(
        &running,
        alice,
        "GET",
        &format!("/threads/{tid}/runs"),
        None,
    )
    .await;
    let run_id = runs[0]["run_id"].as_str().unwrap().to_owned();

    for (method, uri, body) in [
        ("GET", format!("/threads/{tid}"), None),
        (
            "PATCH",
            format!("/threads/{tid}"),
            Some(r#"{"metadata": {"owner": "bob"}}"#.to_owned()),
        ),
        ("GET", format!("/threads/{tid}/state"), None),
        (
            "POST",
            format!("/threads/{tid}/state"),
            Some(r#"{"values": {"count": 5}}"#.to_owned()),
        ),
        (
            "POST",
            format!("/threads/{tid}/history"),
            Some("{}".to_owned()),
        ),
        ("POST", format!("/threads/{tid}/copy"), None),
        (
            "POST",
            format!("/threads/{tid}/runs/wait"),
            Some(run_body.clone()),
        ),
        (
            "POST",
            format!("/threads/{tid}/runs/stream"),
            Some(run_body.clone()),
        ),
        ("GET", format!("/threads/{tid}/runs"), None),
        ("GET", format!("/threads/{tid}/runs/{run_id}"), None),
        ("GET", format!("/threads/{tid}/runs/{run_id}/join"), None),
        ("GET", format!("/threads/{tid}/runs/{run_id}/stream"), None),
        ("POST", format!("/threads/{tid}/runs/{run_id}/cancel"), None),
        ("DELETE", format!("/threads/{tid}/runs/{run_id}"), None),
        ("DELETE", format!("/threads/{tid}"), None),
    ] {
        let (status, body) = call(&running, bob, method, &uri, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {body}");
        assert_eq!(
            body,
            json!({"detail": format!("Thread with ID {tid} not found")})
        );
    }
    let (_, found) = call(&running, bob, "POST", "/threads/search", Some("{}".into())).await;
    assert_eq!(found, json!([]));
    let (_, count) = call(&running, bob, "POST", "/threads/count", Some("{}".into())).await;
    assert_eq!(count, json!(0));
    // Alice's thread is as she left it.
    let (status, state) = call(
        &running,
        alice,
        "GET",
        &format!("/threads/{tid}/state"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(state["values"], json!({"count": 2}));
    let (_, found) = call(
        &running,
        alice,
        "POST",
        "/threads/search",
        Some("{}".into()),
    )
    .await;
    assert_eq!(found.as_array().unwrap().len(), 1);
    running.shutdown().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let huge = json!({"metadata": {"blob": "x".repeat(10_000)}}).to_string();
    let (status, _) = call(&running, Some("k-alice"), "POST", "/threads", Some(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    running.shutdown().await;
}

#[tokio::test]
async fn store_items_live_under_their_callers_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let running = server(&dir).await;
    let put = json!({"namespace": ["alice", "notes"], "key": "n1", "value": {"text": "private"}});
    let (status, _) = call(
        &running,
        Some("k-alice"),
        "PUT",
        "/store/items",
        Some(put.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let get = "/store/items?namespace=alice.notes&key=n1";
    let (status, item) = call(&running, Some("k-alice"), "GET", get, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(item["value"], json!({"text": "private"}));
    assert_eq!(item["namespace"], json!(["alice", "notes"]));
    // Bob: the item reads as missing (LangGraph answers a missing item with
    // 200 and null), a write there is 403, his searches find nothing of it.
    let (status, item) = call(&running, Some("k-bob"), "GET", get, None).await;
    assert_eq!((status, item), (StatusCode::OK, Value::Null));
    let (status, _) = call(
        &running,
        Some("k-bob"),
        "PUT",
        "/store/items",
        Some(put.to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (_, found) = call(
        &running,
        Some("k-bob"),
        "POST",
        "/store/items/search",
        Some("{}".into()),
    )
    .await;
    assert_eq!(found, json!({"items": []}));
    let (_, spaces) = call(
        &running,
        Some("k-bob"),
        "POST",
        "/store/namespaces",
        Some("{}".into()),
    )
    .await;
    assert_eq!(spaces, json!({"namespaces": []}));
    let (_, spaces) = call(
        &running,
        Some("k-alice"),
        "POST",
        "/store/namespaces",
        Some("{}".into()),
    )
    .await;
    assert_eq!(spaces, json!({"namespaces": [["alice", "notes"]]}));
    running.shutdown().await;
}

#[tokio::test]
async fn the_stream_limit_counts_each_callers_streams() {
    let dir = tempfile::tempdir().unwrap();
    let running = builder(&dir).stream_limit(1).start().await.unwrap();
    let stream = |key: &'static str| {
        let request = Request::builder()
            .method("POST")
            .uri("/runs/stream")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {key}"))
            .body(Body::from(r#"{"assistant_id": "agent", "input": {}}"#))
            .unwrap();
        running.router().oneshot(request)
    };
    // Held unread, alice's stream stays open.
    let open = stream("k-alice").await.unwrap();
    assert_eq!(open.status(), StatusCode::OK);
    let refused = stream("k-alice").await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let bytes = refused.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("`alice` has reached this server's limit of 1 open streams"),
        "{body}"
    );
    // Bob's streams are his own.
    let bobs = stream("k-bob").await.unwrap();
    assert_eq!(bobs.status(), StatusCode::OK);
    // Read to its end, alice's stream closes and frees her place.
    open.into_body().collect().await.unwrap();
    let again = stream("k-alice").await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    drop((bobs, again));
    running.shutdown().await;
}
