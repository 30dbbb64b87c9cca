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
    assert!(matches!(err, AgentError::Transport(_)), "{err:?}");
    assert!(err.is_retryable());
}
