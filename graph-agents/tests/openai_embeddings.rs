//! The OpenAI-compatible embeddings client against a mock server on loopback:
//! batches, order, and every way the server can fail — and a store on top of
//! it writing nothing when the embeddings fail.
#![cfg(feature = "openai")]

use graph_agents::model::openai::OpenAiEmbeddings;
use graph_agents::AgentError;
use graph_core::store::{
    EmbeddingError, Embeddings, InMemoryStore, IndexConfig, Namespace, SearchOp, Store,
    StoreConfig, StoreError,
};
use serde_json::{json, Value};
use std::time::Duration;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// Answers each request with one vector per input: `[len(text), index, 1]`,
/// listed in reverse order (the client must sort by `index`).
fn echo(request: &Request) -> ResponseTemplate {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let inputs = body["input"].as_array().cloned().unwrap_or_default();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let len = t.as_str().map_or(0, str::len);
            json!({"object": "embedding", "index": i, "embedding": [len as f64, i as f64, 1.0]})
        })
        .collect();
    data.reverse();
    ResponseTemplate::new(200)
        .set_body_json(json!({"object": "list", "data": data, "model": "mock"}))
}

#[tokio::test]
async fn embeds_in_batches_in_order() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_partial_json(
            json!({"model": "mock-embed", "dimensions": 3, "encoding_format": "float"}),
        ))
        .respond_with(echo)
        // Two batches, then the query.
        .expect(3)
        .mount(&server)
        .await;
    let client = OpenAiEmbeddings::new(format!("{}/v1/", server.uri()), "mock-embed")
        .api_key("sk-test")
        .dimensions(3)
        .batch_size(2);
    let vectors = client.embed_documents(&["a", "bb", "ccc"]).await.unwrap();
    // Batches ["a", "bb"] and ["ccc"]: the index restarts in the second.
    let vectors: Vec<&[f32]> = vectors.iter().map(|v| &v[..]).collect();
    assert_eq!(vectors, [[1.0, 0.0, 1.0], [2.0, 1.0, 1.0], [3.0, 0.0, 1.0]]);
    let query = client.embed_query("dddd").await.unwrap();
    assert_eq!(query[..], [4.0, 0.0, 1.0]);
}

#[tokio::test]
async fn server_errors_are_failures_with_the_status() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("overloaded"))
        .mount(&server)
        .await;
    let client = OpenAiEmbeddings::new(server.uri(), "m");
    let err = client.embed_documents(&["x"]).await.unwrap_err();
    let EmbeddingError::Failed(source) = &err else {
        panic!("{err:?}")
    };
    let agent = source.downcast_ref::<AgentError>().expect("an AgentError");
    assert!(
        matches!(agent, AgentError::Server { status: 503, body } if body == "overloaded"),
        "{agent:?}"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"data": [{"index": 0, "embedding": [1.0]}]}))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let client = OpenAiEmbeddings::new(server.uri(), "m").timeout(Duration::from_millis(100));
    let err = client.embed_documents(&["x"]).await.unwrap_err();
    assert!(
        matches!(err, EmbeddingError::Timeout { after } if after == Duration::from_millis(100)),
        "{err:?}"
    );
}

#[tokio::test]
async fn bad_answers_are_typed_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/garbage/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/short/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": []})))
        .mount(&server)
        .await;
    let garbage = OpenAiEmbeddings::new(format!("{}/garbage", server.uri()), "m");
    let err = garbage.embed_documents(&["x"]).await.unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::Failed(s) if matches!(s.downcast_ref::<AgentError>(), Some(AgentError::InvalidResponse(_)))),
        "{err:?}"
    );
    let short = OpenAiEmbeddings::new(format!("{}/short", server.uri()), "m");
    let err = short.embed_documents(&["x"]).await.unwrap_err();
    assert!(
        matches!(
            err,
            EmbeddingError::WrongCount {
                expected: 1,
                got: 0
            }
        ),
        "{err:?}"
    );
    // Nothing listens on port 9 of loopback: a connection failure.
    let nowhere = OpenAiEmbeddings::new("http://127.0.0.1:9", "m");
    let err = nowhere.embed_documents(&["x"]).await.unwrap_err();
    assert!(
        matches!(&err, EmbeddingError::Failed(s) if matches!(s.downcast_ref::<AgentError>(), Some(AgentError::Transport { .. }))),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_store_on_the_client_searches_and_writes_nothing_when_it_fails() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"input": ["boom"]})))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(echo)
        .mount(&server)
        .await;
    let index = IndexConfig::new(3, OpenAiEmbeddings::new(server.uri(), "m"))
        .fields(["text"])
        .unwrap();
    let store = InMemoryStore::with_config(StoreConfig::new().index(index));
    let ns = Namespace::new(["docs"]).unwrap();
    store
        .put(&ns, "short", json!({"text": "ab"}))
        .await
        .unwrap();
    store
        .put(&ns, "long", json!({"text": "abcdefgh"}))
        .await
        .unwrap();
    // Query vector [7, 0, 1] is closer to [8, 0, 1] than to [2, 0, 1].
    let found = store
        .search(SearchOp::new(ns.clone()).query("abcdefg"))
        .await
        .unwrap();
    assert_eq!(found[0].key, "long");
    let err = store
        .put(&ns, "short", json!({"text": "boom"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Embedding(EmbeddingError::Failed(_))),
        "{err}"
    );
    let kept = store.get(&ns, "short").await.unwrap().unwrap();
    assert_eq!(
        kept.value["text"], "ab",
        "a failed embedding wrote the item"
    );
}
