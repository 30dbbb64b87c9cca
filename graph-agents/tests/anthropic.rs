//! The Anthropic Messages client against a mock server on loopback, with the
//! response and event shapes of Anthropic's API documentation: tool use, system
//! prompts, streaming token by token, usage, retries of 429 / 529 honouring
//! `retry-after`, typed errors, structured output through a forced tool.
#![cfg(feature = "anthropic")]

use futures::StreamExt;
use graph_agents::model::anthropic::AnthropicChat;
use graph_agents::model::{ChatModel, ChatRequest};
use graph_agents::{
    create_react_agent, AgentError, AiMessageChunk, Message, MessagesState, Tool, ToolStatus,
};
use graph_core::{RunConfig, StreamMode};
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
        "get_weather".into()
    }

    fn description(&self) -> Cow<'static, str> {
        "Get the current weather in a given location".into()
    }

    async fn call(&self, args: CityArgs) -> Result<String, Self::Error> {
        Ok(format!("15 degrees in {}", args.city))
    }
}

/// A non-streamed reply, as the API documents it.
fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 472, "output_tokens": 91},
    })
}

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

/// An SSE body of `(event, data)` pairs.
fn sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let mut body = String::new();
    for (event, data) in events {
        body.push_str(&format!("event: {event}\ndata: {data}\n\n"));
    }
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn client(server: &MockServer) -> AnthropicChat {
    AnthropicChat::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .api_key("sk-ant-test")
        .retry_backoff(Duration::ZERO)
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.map_or(0, |r| r.len())
}

#[tokio::test]
async fn tool_use_and_system_go_out_and_come_back_as_anthropic_documents() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .and(body_partial_json(json!({
            "model": "claude-sonnet-4-5",
            "system": "You are a weather bot.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object", "required": ["city"]}}],
            "stream": false,
        })))
        .respond_with(ok(message(
            json!([
                {"type": "text", "text": "I'll check the weather."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                 "input": {"city": "Paris"}},
            ]),
            "tool_use",
        )))
        .mount(&server)
        .await;
    let history = [Message::human("Weather in Paris?")];
    let tools = [graph_agents::BoxedTool::new(Weather).spec().clone()];
    let reply = client(&server)
        .generate(
            ChatRequest::new(&history)
                .system("You are a weather bot.")
                .tools(&tools),
        )
        .await
        .unwrap();
    assert_eq!(reply.content, "I'll check the weather.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(reply.tool_calls[0].args, json!({"city": "Paris"}));
    let usage = reply.usage_metadata.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (472, 91, 563)
    );
    assert_eq!(reply.response_metadata["id"], "msg_01Aq9w938a90dw8q");
    assert_eq!(reply.response_metadata["stop_reason"], "tool_use");
}

fn streamed_tool_use() -> ResponseTemplate {
    sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_014p7", "type": "message",
            "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
            "usage": {"input_tokens": 472, "output_tokens": 2}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Let me "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "check."}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_01T1x", "name": "get_weather", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Pa"}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "ris\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 89}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

#[tokio::test]
async fn the_agent_streams_tokens_and_tool_input_as_they_arrive() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(streamed_tool_use())
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(&[
            ("message_start", json!({"type": "message_start", "message": {"id": "msg_2", "model": "claude-sonnet-4-5",
                "content": [], "usage": {"input_tokens": 600, "output_tokens": 1}}})),
            ("content_block_start", json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}})),
            ("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "15 degrees."}})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 5}})),
            ("message_stop", json!({"type": "message_stop"})),
        ]))
        .mount(&server)
        .await;
    let agent = create_react_agent(client(&server), Weather)
        .compile()
        .unwrap();
    let input = MessagesState::update().messages(vec![Message::human("Weather in Paris?")]);
    let mut stream = agent.stream(
        input,
        &RunConfig::new(),
        [StreamMode::Messages, StreamMode::Values],
    );
    let mut texts = Vec::new();
    let mut arg_pieces = Vec::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        if let Some((chunk, _)) = AiMessageChunk::from_event(&event) {
            if !chunk.content.is_empty() {
                texts.push(chunk.content.clone());
            }
            arg_pieces.extend(chunk.tool_call_chunks.iter().map(|c| c.args.clone()));
        } else if let graph_core::StreamEvent::Values(s) = event {
            last = Some(s);
        }
    }
    assert_eq!(texts, ["Let me ", "check.", "15 degrees."]);
    assert_eq!(arg_pieces, ["", "", "{\"city\": \"Pa", "ris\"}"]);
    let state = last.unwrap();
    let ai = state.messages[1].as_ai().unwrap();
    assert_eq!(ai.content, "Let me check.");
    assert_eq!(ai.tool_calls[0].args, json!({"city": "Paris"}));
    assert_eq!(
        ai.usage_metadata.map(|u| (u.input_tokens, u.output_tokens)),
        Some((472, 89))
    );
    assert_eq!(
        state.messages[2].as_tool().unwrap().status,
        ToolStatus::Success
    );
    assert_eq!(state.messages[3].text(), "15 degrees.");

    // The second request carried the tool result in Anthropic's form.
    let sent = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&sent[1].body).unwrap();
    assert_eq!(body["messages"][1]["content"][1]["type"], "tool_use");
    assert_eq!(
        body["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01T1x"
    );
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        "15 degrees in Paris"
    );
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_after_retry_after() {
    let server = MockServer::start().await;
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let limited =
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    for response in [
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_json(&limited),
        ResponseTemplate::new(529)
            .insert_header("retry-after", "0")
            .set_body_json(&overloaded),
        ok(message(
            json!([{"type": "text", "text": "Hello!"}]),
            "end_turn",
        )),
    ] {
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(response)
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let history = [Message::human("hi")];
    let reply = client(&server)
        .generate(ChatRequest::new(&history))
        .await
        .unwrap();
    assert_eq!(reply.content, "Hello!");
    assert_eq!(requests(&server).await, 3);
}

#[tokio::test]
async fn errors_that_outlast_the_retries_or_are_not_retryable_are_typed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_string("{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}"),
        )
        .mount(&server)
        .await;
    let history = [Message::human("hi")];
    let err = client(&server)
        .max_retries(1)
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::RateLimited { retry_after: Some(d), body } if d.is_zero() && body.contains("rate_limit_error")),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(requests(&server).await, 2, "the call and one retry");

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(400).set_body_string(
            "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"max_tokens: Field required\"}}",
        ))
        .mount(&server)
        .await;
    let err = client(&server)
        .generate(ChatRequest::new(&history))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::Rejected { status: 400, body } if body.contains("max_tokens")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(
        requests(&server).await,
        1,
        "a rejected request is not sent again"
    );
}

#[tokio::test]
async fn a_stream_cut_short_or_an_error_event_is_a_retryable_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "m", "content": [],
                "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Hel"}}),
            ),
        ]))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(&[(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )]))
        .mount(&server)
        .await;
    let model = client(&server);
    let history = [Message::human("hi")];
    let chunks: Vec<_> = model.stream(ChatRequest::new(&history)).collect().await;
    let err = chunks.last().unwrap().as_ref().unwrap_err();
    assert!(matches!(err, AgentError::StreamEnded(_)), "{err:?}");
    assert!(err.is_retryable());
    let chunks: Vec<_> = model.stream(ChatRequest::new(&history)).collect().await;
    let err = chunks.last().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(err, AgentError::Server { status: 529, .. }),
        "{err:?}"
    );
}

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    city: String,
    celsius: i32,
}

#[tokio::test]
async fn structured_output_forces_a_tool_and_reads_its_input() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_partial_json(json!({
            "tool_choice": {"type": "tool", "name": "Forecast"},
            "tools": [{"name": "Forecast", "input_schema": {"required": ["city", "celsius"]}}],
        })))
        .respond_with(ok(message(
            json!([{"type": "tool_use", "id": "toolu_1", "name": "Forecast",
                    "input": {"city": "Oslo", "celsius": -3}}]),
            "tool_use",
        )))
        .mount(&server)
        .await;
    let forecast = client(&server)
        .with_structured_output::<Forecast>()
        .invoke(&[Message::human("Oslo?")])
        .await
        .unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Oslo".into(),
            celsius: -3
        }
    );
}
