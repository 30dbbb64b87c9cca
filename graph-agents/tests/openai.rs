//! The OpenAI-compatible client against a mock server on loopback: completions,
//! SSE streaming, tool calls, and every way the server can misbehave.
#![cfg(feature = "openai")]

use futures::StreamExt;
use graph_agents::model::openai::OpenAiChat;
use graph_agents::model::{ChatModel, ChatRequest};
use graph_agents::{
    create_react_agent, validate_chat_history, AgentError, AiMessageChunk, Message, MessagesState,
    Tool, ToolStatus,
};
use graph_core::{GraphError, RetryPolicy, RunConfig, StreamMode};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::time::Duration;
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CityArgs {
    city: String,
}

struct Weather;

impl Tool for Weather {
    type Args = CityArgs;
    type Output = String;
    type Error = std::convert::Infallible;

    fn name(&self) -> Cow<'static, str> {
        "weather".into()
    }

    fn description(&self) -> Cow<'static, str> {
        "Today's weather in a city.".into()
    }

    async fn call(&self, args: CityArgs) -> Result<String, Self::Error> {
        Ok(format!("sunny in {}", args.city))
    }
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "mock-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })
}

fn tool_call_message(id: &str, name: &str, arguments: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    ]})
}

fn json_response(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

/// An SSE body: one `data:` event per piece, then `[DONE]` when `done`.
fn sse(pieces: &[Value], done: bool) -> ResponseTemplate {
    let mut body = String::new();
    for p in pieces {
        body.push_str(&format!("data: {p}\n\n"));
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-2", "object": "chat.completion.chunk", "model": "mock-model",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// Mounts `responses` to be served in order, one request each.
async fn serve_in_order(server: &MockServer, responses: Vec<ResponseTemplate>) {
    for response in responses {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(response)
            .up_to_n_times(1)
            .mount(server)
            .await;
    }
}

fn client(server: &MockServer) -> OpenAiChat {
    OpenAiChat::new(format!("{}/v1", server.uri()), "mock-model")
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy::new()
        .initial_interval(Duration::ZERO)
        .jitter(false)
        .retry_on(graph_agents::is_retryable)
}

fn input(text: &str) -> graph_agents::MessagesStateUpdate {
    MessagesState::update().messages(vec![Message::human(text)])
}

fn agent_error(err: &GraphError) -> &AgentError {
    let GraphError::NodeFailed { source, .. } = err else {
        panic!("not a node failure: {err}");
    };
    source
        .downcast_ref::<AgentError>()
        .unwrap_or_else(|| panic!("not an AgentError: {source}"))
}

#[tokio::test]
async fn a_completion_with_a_tool_call_sends_the_request_openai_expects() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .and(body_partial_json(json!({
            "model": "mock-model",
            "stream": false,
            "messages": [{"role": "system", "content": "be brief"},
                         {"role": "user", "content": "weather in Paris?"}],
            "tools": [{"type": "function", "function": {"name": "weather"}}],
        })))
        .respond_with(json_response(completion(
            tool_call_message("call_1", "weather", "{\"city\": \"Paris\"}"),
            "tool_calls",
        )))
        .mount(&server)
        .await;
    let model = client(&server).api_key("sk-test");
    let history = [Message::human("weather in Paris?")];
    let tools = [graph_agents::BoxedTool::new(Weather).spec().clone()];
    let reply = model
        .generate(ChatRequest::new(&history).system("be brief").tools(&tools))
        .await
        .unwrap();
    assert!(reply.id.as_deref().is_some_and(|id| id.starts_with("run-")));
    assert_eq!(reply.response_metadata["id"], "chatcmpl-1");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "call_1");
    assert_eq!(reply.tool_calls[0].args, json!({"city": "Paris"}));
    assert_eq!(reply.usage_metadata.map(|u| u.total_tokens), Some(15));
    assert_eq!(reply.response_metadata["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn the_agent_streams_tokens_and_tool_calls_over_sse() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        vec![
            sse(
                &[
                    delta(json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
                        "type": "function", "function": {"name": "weather", "arguments": ""}}]}), None),
                    delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}), None),
                    delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"Oslo\"}"}}]}), None),
                    delta(json!({}), Some("tool_calls")),
                ],
                true,
            ),
            sse(
                &[
                    delta(json!({"role": "assistant", "content": "It is "}), None),
                    delta(json!({"content": "sunny."}), None),
                    delta(json!({}), Some("stop")),
                ],
                true,
            ),
        ],
    )
    .await;
    let agent = create_react_agent(client(&server), Weather)
        .compile()
        .unwrap();
    let mut stream = agent.stream(
        input("weather in Oslo?"),
        &RunConfig::new(),
        [StreamMode::Messages, StreamMode::Values],
    );
    let mut tokens = Vec::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        if let Some((chunk, meta)) = AiMessageChunk::from_event(&event) {
            assert_eq!(&*meta.node, "agent");
            tokens.push(chunk);
        } else if let graph_core::StreamEvent::Values(s) = event {
            last = Some(s);
        }
    }
    let text: String = tokens.iter().map(|c| c.content.as_str()).collect();
    assert_eq!(text, "It is sunny.");
    let args: String = tokens
        .iter()
        .flat_map(|c| &c.tool_call_chunks)
        .map(|t| t.args.as_str())
        .collect();
    assert_eq!(args, "{\"city\": \"Oslo\"}");
    let state = last.unwrap();
    let texts: Vec<&str> = state.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        ["weather in Oslo?", "", "sunny in Oslo", "It is sunny."]
    );
    validate_chat_history(&state.messages).unwrap();
    // The second request carried the tool call and its answer back to the model.
    let requests = server.received_requests().await.unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(second["stream"], true);
    assert_eq!(second["messages"][1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        second["messages"][2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"})
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_typed_and_retried_by_the_node_policy() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        vec![
            ResponseTemplate::new(429)
                .insert_header("retry-after", "7")
                .set_body_string("slow down"),
            ResponseTemplate::new(500).set_body_string("oops"),
            json_response(completion(
                json!({"role": "assistant", "content": "hello"}),
                "stop",
            )),
        ],
    )
    .await;
    let model = client(&server);
    let history = [Message::human("hi")];
    let err = model
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::RateLimited { retry_after: Some(d), body } if *d == Duration::from_secs(7) && body == "slow down"),
        "{err:?}"
    );
    assert!(err.is_retryable());
    let err = model
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::Server { status: 500, .. }),
        "{err:?}"
    );
    // Converted for a node of yours, 429 and 5xx are transient: the default
    // retry policy retries them.
    assert!(err.into_node_error().is_transient());
    let rejected = AgentError::Rejected {
        status: 400,
        body: String::new(),
    };
    assert!(!rejected.into_node_error().is_transient());

    // The same failures inside the agent: the node's retry policy absorbs them.
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        vec![
            ResponseTemplate::new(429),
            ResponseTemplate::new(503),
            json_response(completion(
                json!({"role": "assistant", "content": "hello"}),
                "stop",
            )),
        ],
    )
    .await;
    let agent = create_react_agent(client(&server), Weather)
        .retry_policy(Some(fast_retries().max_attempts(3)))
        .compile()
        .unwrap();
    let out = agent.invoke(input("hi"), &RunConfig::new()).await.unwrap();
    assert_eq!(out.messages.last().unwrap().text(), "hello");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn errors_that_outlast_the_retries_or_are_not_retryable_fail_the_run_typed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(502).set_body_string("bad gateway"))
        .mount(&server)
        .await;
    let agent = create_react_agent(client(&server), Weather)
        .retry_policy(Some(fast_retries().max_attempts(2)))
        .compile()
        .unwrap();
    let err = agent
        .invoke(input("hi"), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(
        agent_error(&err),
        AgentError::Server { status: 502, .. }
    ));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string("bad model"))
        .mount(&server)
        .await;
    let agent = create_react_agent(client(&server), Weather)
        .retry_policy(Some(fast_retries()))
        .compile()
        .unwrap();
    let err = agent
        .invoke(input("hi"), &RunConfig::new())
        .await
        .unwrap_err();
    assert!(matches!(
        agent_error(&err),
        AgentError::Rejected { status: 400, .. }
    ));
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "4xx is not retried"
    );
}

#[tokio::test]
async fn garbage_from_the_server_is_an_invalid_response() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        vec![
            ResponseTemplate::new(200).set_body_string("<html>not json</html>"),
            json_response(json!({"id": "x", "object": "chat.completion"})),
            sse(&[json!({"error": {"message": "overloaded"}})], true),
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string("data: {\"choices\": [\n\n"),
        ],
    )
    .await;
    let model = client(&server);
    let history = [Message::human("hi")];
    let err = model
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::InvalidResponse(m) if m.contains("not json")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    let err = model
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::InvalidResponse(m) if m.contains("choices")),
        "{err:?}"
    );
    let items: Vec<_> = model.stream(ChatRequest::new(&history)).collect().await;
    assert!(
        matches!(&items[..], [Err(AgentError::InvalidResponse(m))] if m.contains("overloaded"))
    );
    let items: Vec<_> = model.stream(ChatRequest::new(&history)).collect().await;
    assert!(
        matches!(&items[..], [Err(AgentError::InvalidResponse(_))]),
        "{items:?}"
    );
}

#[tokio::test]
async fn a_stream_cut_before_the_model_finished_is_a_retryable_error() {
    let server = MockServer::start().await;
    let cut = sse(
        &[delta(
            json!({"role": "assistant", "content": "It is"}),
            None,
        )],
        false,
    );
    let whole = sse(
        &[
            delta(
                json!({"role": "assistant", "content": "It is sunny."}),
                None,
            ),
            delta(json!({}), Some("stop")),
        ],
        false, // a finish reason without [DONE] is a complete reply
    );
    serve_in_order(&server, vec![cut.clone(), cut, whole]).await;
    let model = client(&server);
    let history = [Message::human("hi")];
    let items: Vec<_> = model.stream(ChatRequest::new(&history)).collect().await;
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].as_ref().unwrap().content, "It is");
    assert!(matches!(&items[1], Err(e @ AgentError::StreamEnded(_)) if e.is_retryable()));

    // In the agent, streaming (messages mode) retries the cut call and goes on.
    let agent = create_react_agent(client(&server), Weather)
        .retry_policy(Some(fast_retries()))
        .compile()
        .unwrap();
    let mut stream = agent.stream(
        input("hi"),
        &RunConfig::new(),
        [StreamMode::Values, StreamMode::Messages],
    );
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let graph_core::StreamEvent::Values(s) = event.unwrap() {
            last = Some(s);
        }
    }
    let state = last.unwrap();
    assert_eq!(state.messages.len(), 2);
    assert_eq!(state.messages[1].text(), "It is sunny.");
}

#[tokio::test]
async fn malformed_tool_arguments_and_unknown_tools_are_answered_and_the_history_stays_valid() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        vec![
            json_response(completion(
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Par"}},
                    {"id": "c2", "type": "function", "function": {"name": "stocks", "arguments": "{}"}},
                    {"id": "c3", "type": "function", "function": {"name": "weather", "arguments": "{\"town\": 1}"}},
                ]}),
                "tool_calls",
            )),
            json_response(completion(json!({"role": "assistant", "content": "sorry"}), "stop")),
        ],
    )
    .await;
    let agent = create_react_agent(client(&server), Weather)
        .compile()
        .unwrap();
    let out = agent
        .invoke(input("weather?"), &RunConfig::new())
        .await
        .unwrap();
    validate_chat_history(&out.messages).unwrap();
    let ai = out.messages[1].as_ai().unwrap();
    assert_eq!(ai.invalid_tool_calls.len(), 1);
    assert_eq!(ai.tool_calls.len(), 2);
    let answers: Vec<(&str, ToolStatus)> = out
        .messages
        .iter()
        .filter_map(Message::as_tool)
        .map(|t| (t.tool_call_id.as_str(), t.status))
        .collect();
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|(_, s)| *s == ToolStatus::Error));
    let mut ids: Vec<&str> = answers.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    // The second request is one the server accepts: every call has its answer.
    let requests = server.received_requests().await.unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let sent = second["messages"].as_array().unwrap();
    assert_eq!(sent[1]["tool_calls"].as_array().unwrap().len(), 3);
    assert_eq!(sent.iter().filter(|m| m["role"] == "tool").count(), 3);
    assert_eq!(out.messages.last().unwrap().text(), "sorry");
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    // Bind a port, then free it: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = OpenAiChat::new(format!("http://127.0.0.1:{port}/v1"), "m");
    let history = [Message::human("hi")];
    let err = model
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::Transport { .. }), "{err:?}");
    assert!(err.is_retryable());
    // The refused connection is a `std::io::Error` in the chain under
    // reqwest's error: a plain `?` already makes it a transient node error,
    // which the default retry policy retries.
    let mut chain = Vec::new();
    let mut link: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = link {
        chain.push(format!("{e:?}"));
        link = e.source();
    }
    let node_error = graph_core::NodeError::from(
        model
            .generate(ChatRequest::new(&history))
            .await
            .unwrap_err(),
    );
    assert!(node_error.is_transient(), "{chain:#?}");
    // The message says what to do; the HTTP client's error is the source, whole,
    // and no message in the chain repeats the one below it.
    let message = err.to_string();
    assert!(
        message.starts_with(&format!(
            "could not connect to the model server at http://127.0.0.1:{port}/v1/chat/completions: \
             check the base URL"
        )),
        "{message}"
    );
    let source = std::error::Error::source(&err).expect("a source");
    assert!(
        source.is::<graph_agents::model::openai::reqwest::Error>(),
        "{source:?}"
    );
    let mut outer: &dyn std::error::Error = &err;
    while let Some(inner) = outer.source() {
        assert!(
            !outer.to_string().contains(&inner.to_string()),
            "{outer} repeats {inner}"
        );
        outer = inner;
    }
}

#[tokio::test]
async fn the_request_body_is_the_json_openai_expects() {
    let server = MockServer::start().await;
    serve_in_order(
        &server,
        vec![json_response(completion(
            json!({"role": "assistant", "content": "ok"}),
            "stop",
        ))],
    )
    .await;
    let model = client(&server).temperature(0.5).max_tokens(64);
    let mut answered = graph_agents::AiMessage::new("let me look").with_tool_call(
        graph_agents::ToolCall::new("c1", "weather", json!({"city": "Oslo"})),
    );
    answered
        .invalid_tool_calls
        .push(graph_agents::InvalidToolCall {
            id: Some("c2".into()),
            name: Some("weather".into()),
            args: Some("{\"city\": \"Os".into()),
            error: Some("EOF".into()),
        });
    let history = [
        graph_agents::SystemMessage {
            content: "an old instruction".into(),
            ..Default::default()
        }
        .into(),
        graph_agents::HumanMessage {
            content: "weather in Oslo?".into(),
            name: Some("ada".into()),
            ..Default::default()
        }
        .into(),
        answered.into(),
        Message::tool("sunny in Oslo", "c1"),
        Message::tool("bad arguments", "c2"),
        graph_agents::AiMessage::new("")
            .with_tool_call(graph_agents::ToolCall::new("c3", "weather", json!({})))
            .into(),
        Message::tool("where?", "c3"),
        Message::remove("some-id"),
    ];
    let tools = [graph_agents::BoxedTool::new(Weather).spec().clone()];
    model
        .generate(ChatRequest::new(&history).system("be brief").tools(&tools))
        .await
        .unwrap();
    // Keys in alphabetical order, as the body has always been written: the
    // bytes on the wire are compared, not only the JSON they mean.
    let expected = json!({
        "max_tokens": 64,
        "messages": [
            {"content": "be brief", "role": "system"},
            {"content": "an old instruction", "role": "system"},
            {"content": "weather in Oslo?", "name": "ada", "role": "user"},
            {"content": "let me look", "role": "assistant", "tool_calls": [
                {"function": {"arguments": "{\"city\":\"Oslo\"}", "name": "weather"},
                 "id": "c1", "type": "function"},
                {"function": {"arguments": "{\"city\": \"Os", "name": "weather"},
                 "id": "c2", "type": "function"},
            ]},
            {"content": "sunny in Oslo", "role": "tool", "tool_call_id": "c1"},
            {"content": "bad arguments", "role": "tool", "tool_call_id": "c2"},
            {"content": null, "role": "assistant", "tool_calls": [
                {"function": {"arguments": "{}", "name": "weather"}, "id": "c3", "type": "function"},
            ]},
            {"content": "where?", "role": "tool", "tool_call_id": "c3"},
        ],
        "model": "mock-model",
        "stream": false,
        "temperature": 0.5,
        "tools": [{"function": {
            "description": "Today's weather in a city.",
            "name": "weather",
            "parameters": tools[0].parameters,
        }, "type": "function"}],
    });
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let sent = std::str::from_utf8(&requests[0].body).unwrap();
    assert_eq!(serde_json::from_str::<Value>(sent).unwrap(), expected);
    assert_eq!(sent, expected.to_string());
}

/// One step of what [`serve_sse_in_pieces`] sends.
enum Piece {
    /// Bytes sent as one chunk of a chunked body, flushed before the next step.
    Bytes(Vec<u8>),
    /// Waits until the test says go on (or forever).
    Wait(std::sync::Arc<tokio::sync::Notify>),
}

fn piece(text: &str) -> Piece {
    Piece::Bytes(text.as_bytes().to_vec())
}

/// Every byte of `body` as a chunk of its own: splits inside `data:`, between a
/// CR and its LF, inside a multi-byte character...
fn one_byte_each(body: &str) -> Vec<Piece> {
    body.bytes().map(|b| Piece::Bytes(vec![b])).collect()
}

/// A server on loopback for one request that answers with an SSE body sent in
/// exactly `pieces`, one HTTP chunk each (wiremock sends a body whole; these
/// tests choose where it splits, and the client reads each chunk as it comes).
/// Returns the base URL.
async fn serve_sse_in_pieces(pieces: Vec<Piece>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        // The request: its head, then as many body bytes as it says.
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        let head_end = loop {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed before its request was complete");
            request.extend_from_slice(&buf[..n]);
            if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while request.len() < head_end + length {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed before its request was complete");
            request.extend_from_slice(&buf[..n]);
        }
        let response = async {
            socket
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                      transfer-encoding: chunked\r\nconnection: close\r\n\r\n",
                )
                .await?;
            for piece in pieces {
                match piece {
                    Piece::Bytes(bytes) => {
                        assert!(!bytes.is_empty(), "an empty chunk ends a chunked body");
                        socket
                            .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
                            .await?;
                        socket.write_all(&bytes).await?;
                        socket.write_all(b"\r\n").await?;
                        socket.flush().await?;
                    }
                    Piece::Wait(go_on) => go_on.notified().await,
                }
            }
            socket.write_all(b"0\r\n\r\n").await?;
            socket.shutdown().await
        };
        // The client may hang up early (it stops reading at `[DONE]`).
        let _ = response.await;
    });
    url
}

/// The client's stream for a one-message history, collected; a stream that does
/// not end within `secs` fails the test.
async fn collect_stream(url: &str, secs: u64) -> Vec<Result<AiMessageChunk, AgentError>> {
    let model = OpenAiChat::new(url, "mock-model");
    let history = [Message::human("hi")];
    tokio::time::timeout(
        Duration::from_secs(secs),
        model.stream(ChatRequest::new(&history)).collect::<Vec<_>>(),
    )
    .await
    .expect("the stream did not end")
}

fn contents(items: &[Result<AiMessageChunk, AgentError>]) -> Vec<&str> {
    items
        .iter()
        .map(|item| match item {
            Ok(chunk) => chunk.content.as_str(),
            Err(e) => panic!("an error in the stream: {e:?}"),
        })
        .collect()
}

fn finish_reason(items: &[Result<AiMessageChunk, AgentError>]) -> Option<&Value> {
    items
        .last()?
        .as_ref()
        .ok()?
        .response_metadata
        .get("finish_reason")
}

#[tokio::test]
async fn sse_split_at_every_byte_gives_every_token_with_lf_crlf_or_cr_line_ends() {
    for eol in ["\n", "\r\n", "\r"] {
        // No `[DONE]`: the last event, ended by a blank line just before the
        // connection closes, finishes the reply.
        let body: String = [
            delta(json!({"role": "assistant", "content": "Grüße, "}), None),
            delta(json!({"content": "🌍!"}), None),
            delta(json!({}), Some("stop")),
        ]
        .iter()
        .map(|d| format!("data: {d}{eol}{eol}"))
        .collect();
        let url = serve_sse_in_pieces(one_byte_each(&body)).await;
        let items = collect_stream(&url, 30).await;
        assert_eq!(contents(&items), ["Grüße, ", "🌍!", ""], "{eol:?}");
        assert_eq!(finish_reason(&items), Some(&json!("stop")), "{eol:?}");
    }
}

#[tokio::test]
async fn an_event_ended_by_cr_is_delivered_without_waiting_for_the_next_byte() {
    // A CR may be followed by an LF that makes it one CRLF line end; the event
    // is complete at the CR all the same, and is not held back until the next
    // chunk shows whether an LF follows.
    let go_on = std::sync::Arc::new(tokio::sync::Notify::new());
    let first = delta(json!({"role": "assistant", "content": "It is"}), None);
    let last = delta(json!({"content": " sunny."}), Some("stop"));
    let url = serve_sse_in_pieces(vec![
        piece(&format!("data: {first}\r\r")),
        Piece::Wait(go_on.clone()),
        piece(&format!("data: {last}\r\r")),
    ])
    .await;
    let model = OpenAiChat::new(url, "mock-model");
    let history = [Message::human("hi")];
    let mut stream = model.stream(ChatRequest::new(&history));
    let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the first event was held back")
        .unwrap()
        .unwrap();
    assert_eq!(chunk.content, "It is");
    go_on.notify_one();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
        .await
        .expect("the stream did not end");
    assert_eq!(contents(&rest), [" sunny."]);
}

#[tokio::test]
async fn a_data_field_loses_one_leading_space_not_more() {
    let no_space = delta(json!({"role": "assistant", "content": "a"}), None);
    let two_spaces = delta(json!({"content": "b"}), None);
    let body = format!("data:{no_space}\n\ndata:  {two_spaces}\n\ndata:  {{\"choices\": [\n\n");
    let url = serve_sse_in_pieces(vec![piece(&body)]).await;
    let items = collect_stream(&url, 30).await;
    assert_eq!(contents(&items[..2]), ["a", "b"]);
    // The broken event's data, quoted in the error, kept its second space.
    assert!(
        matches!(&items[2..], [Err(AgentError::InvalidResponse(m))]
            if m.ends_with("; the body was:  {\"choices\": [")),
        "{:?}",
        &items[2..]
    );
}

#[tokio::test]
async fn the_data_lines_of_one_event_are_joined_by_newlines() {
    // One completion chunk written over three `data:` lines (JSON allows the
    // newlines the parser puts between them).
    let body = "data: {\"id\": \"chatcmpl-2\", \"model\": \"mock-model\",\n\
                data: \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"multi\"},\n\
                data:   \"finish_reason\": \"stop\"}]}\n\n";
    let url = serve_sse_in_pieces(vec![piece(body)]).await;
    let items = collect_stream(&url, 30).await;
    assert_eq!(contents(&items), ["multi"]);
    assert_eq!(finish_reason(&items), Some(&json!("stop")));
}

#[tokio::test]
async fn comments_and_event_id_retry_and_unknown_fields_are_ignored() {
    let first = delta(json!({"role": "assistant", "content": "It is"}), None);
    let last = delta(json!({"content": " sunny."}), Some("stop"));
    let body = format!(
        ": keep-alive\n\n\
         event: message\nid: 1\n: a comment inside an event\ndata: {first}\nretry: 3000\n\n\
         id: 2\n\n\
         event: ping\n\n\
         retry: 10\n\n\
         data\n\n\
         :data: {{\"not\": \"an event\"}}\n\n\
         DATA: {{\"not\": \"an event\"}}\n\
         data : {{\"not\": \"an event\"}}\n\n\
         data: {last}\n\n"
    );
    let url = serve_sse_in_pieces(vec![piece(&body)]).await;
    let items = collect_stream(&url, 30).await;
    assert_eq!(contents(&items), ["It is", " sunny."]);
    assert_eq!(finish_reason(&items), Some(&json!("stop")));
}

#[tokio::test]
async fn done_ends_the_stream_without_waiting_for_the_connection_to_close() {
    // After `[DONE]` the server keeps the connection open and would send more:
    // the stream ends at `[DONE]` and reads nothing after it.
    let never = std::sync::Arc::new(tokio::sync::Notify::new());
    let token = delta(json!({"role": "assistant", "content": "done"}), None);
    let url = serve_sse_in_pieces(vec![
        piece(&format!("data: {token}\n\ndata: [DONE]\n\n")),
        Piece::Wait(never),
        piece("data: not json\n\n"),
    ])
    .await;
    let items = collect_stream(&url, 10).await;
    assert_eq!(contents(&items), ["done"]);
}

#[tokio::test]
async fn a_long_event_in_many_small_chunks_is_parsed_in_linear_time() {
    // 4 MiB of content in 1 KiB chunks: a parser that scans its whole buffer
    // again for each chunk does ~8 GB of work here (a minute in a debug build)
    // and misses the deadline; one that keeps its place takes well under a second.
    let content = "x".repeat(4 << 20);
    let body = format!(
        "data: {}\n\n",
        delta(
            json!({"role": "assistant", "content": content}),
            Some("stop")
        )
    );
    let pieces = body
        .as_bytes()
        .chunks(1024)
        .map(|c| Piece::Bytes(c.to_vec()))
        .collect();
    let url = serve_sse_in_pieces(pieces).await;
    let items = collect_stream(&url, 15).await;
    assert_eq!(contents(&items), [content.as_str()]);
}

#[tokio::test]
async fn a_server_that_does_not_answer_in_time_is_a_transport_error_that_says_so() {
    // The kernel completes the connection; nothing ever reads or answers it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let http = graph_agents::model::openai::reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let model = OpenAiChat::new(url, "m").with_client(http);
    let history = [Message::human("hi")];
    let err = model
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::Transport { context, .. }
            if context.contains("did not answer in time") && context.contains("with_client")),
        "{err:?}"
    );
    assert!(err.is_retryable());
    drop(listener);
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    city: String,
    celsius: i32,
}

#[tokio::test]
async fn structured_output_sends_a_json_schema_response_format_and_parses_the_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "Forecast",
                "schema": {"type": "object", "required": ["city", "celsius"]},
            }},
        })))
        .respond_with(json_response(completion(
            json!({"role": "assistant", "content": "{\"city\": \"Oslo\", \"celsius\": -3}"}),
            "stop",
        )))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(json_response(completion(
            json!({"role": "assistant", "content": "Cold, I would say."}),
            "stop",
        )))
        .mount(&server)
        .await;
    let model = client(&server).with_structured_output::<Forecast>();
    let history = [Message::human("Oslo?")];
    let forecast = model.invoke(&history).await.unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Oslo".into(),
            celsius: -3
        }
    );
    // `strict` is sent only when asked for.
    let requests = server.received_requests().await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(body["response_format"]["json_schema"]
        .get("strict")
        .is_none());

    // A reply that is not a Forecast: a typed error with the raw text.
    let err = model.invoke(&history).await.unwrap_err();
    assert!(
        matches!(&err, AgentError::StructuredOutput { raw, .. } if raw == "Cold, I would say."),
        "{err:?}"
    );
}
