//! [`AnthropicChat`]: a client for Anthropic's Messages API (feature
//! `anthropic`): text, tool use, system prompts, SSE streaming token by token,
//! usage, structured output through a forced tool, and retries of rate-limited
//! (429) and overloaded (529) calls that honour `retry-after`.
//!
//! ```no_run
//! use graph_agents::model::anthropic::AnthropicChat;
//! use graph_agents::create_react_agent;
//!
//! let model = AnthropicChat::new("claude-sonnet-4-5")
//!     .api_key(std::env::var("ANTHROPIC_API_KEY").unwrap_or_default())
//!     .max_tokens(1024);
//! let agent = create_react_agent(model, ()).compile();
//! # let _ = agent;
//! ```

use super::http::{json_body, send, transport, truncate};
use super::{AiMessageChunk, ChatModel, ChatRequest, ChunkAggregator, ToolCallChunk};
use crate::error::AgentError;
use crate::message::{AiMessage, Message, ToolStatus, Usage};
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sse_stream::{Sse, SseByteStream};
use std::sync::Arc;
use std::time::Duration;

#[doc(no_inline)]
pub use reqwest;

/// The API's address unless [`base_url`](AnthropicChat::base_url) changes it.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent.
pub const API_VERSION: &str = "2023-06-01";

/// A chat model on Anthropic's Messages API (`POST {base_url}/v1/messages`).
///
/// Rate limits (429), overloaded servers (529) and other server errors (5xx)
/// are retried here, up to [`max_retries`](Self::max_retries) times, after the
/// server's `retry-after` or an exponential backoff; what still fails is a typed
/// [`AgentError`] ([`RateLimited`](AgentError::RateLimited),
/// [`Server`](AgentError::Server), ...) that [`is_retryable`](AgentError::is_retryable)
/// classifies for the node's retry policy.
#[derive(Debug, Clone)]
pub struct AnthropicChat {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    max_tokens: u32,
    temperature: Option<f64>,
    max_retries: u32,
    backoff: Duration,
}

impl AnthropicChat {
    /// A client for `model` on Anthropic's API, with a 600 s timeout per request,
    /// `max_tokens` 1024 and 2 retries.
    pub fn new(model: impl Into<String>) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap_or_default();
        AnthropicChat {
            client,
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: model.into(),
            api_key: None,
            max_tokens: 1024,
            temperature: None,
            max_retries: 2,
            backoff: Duration::from_millis(500),
        }
    }

    /// Sends requests to `base_url` (the part before `/v1/messages`).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Sends `key` as `x-api-key`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Caps the reply's length in tokens (the API requires a cap).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// How many times a rate-limited, overloaded or failed call is sent again
    /// (default 2; 0 leaves retrying to the node's retry policy).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The first wait between retries when the server sends no `retry-after`
    /// (default 500 ms; doubled each time, at most 8 s).
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// Uses `client` (proxies, timeouts, TLS settings of your own).
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    /// The request body for `request`: serialize it to see the JSON sent.
    pub fn body<'a>(&'a self, request: &ChatRequest<'a>, stream: bool) -> MessagesRequest<'a> {
        let mut system: Vec<&str> = request.system.into_iter().collect();
        let mut messages: Vec<Turn<'a>> = Vec::with_capacity(request.messages.len());
        for m in request.messages {
            let (role, blocks) = match m {
                Message::System(s) => {
                    system.push(&s.content);
                    continue;
                }
                Message::Human(h) => (Role::User, vec![Block::Text { text: &h.content }]),
                Message::Ai(ai) => {
                    let mut blocks = Vec::new();
                    if !ai.content.is_empty() {
                        blocks.push(Block::Text { text: &ai.content });
                    }
                    blocks.extend(ai.tool_calls.iter().map(|call| Block::ToolUse {
                        id: Some(&call.id),
                        input: Some(&call.args),
                        name: Some(&call.name),
                    }));
                    // Arguments that were not JSON go back as an empty input.
                    blocks.extend(ai.invalid_tool_calls.iter().map(|call| Block::ToolUse {
                        id: call.id.as_deref(),
                        input: None,
                        name: call.name.as_deref(),
                    }));
                    (Role::Assistant, blocks)
                }
                Message::Tool(t) => (
                    Role::User,
                    vec![Block::ToolResult {
                        content: &t.content,
                        is_error: t.status == ToolStatus::Error,
                        tool_use_id: &t.tool_call_id,
                    }],
                ),
                _ => continue,
            };
            if blocks.is_empty() {
                continue;
            }
            // Turns alternate: tool results and a question after them are one
            // user turn.
            match messages.last_mut() {
                Some(last) if last.role == role => last.content.extend(blocks),
                _ => messages.push(Turn {
                    content: blocks,
                    role,
                }),
            }
        }
        let mut tools: Vec<RequestTool<'a>> = request
            .tools
            .iter()
            .map(|t| RequestTool {
                description: &t.description,
                input_schema: &t.parameters,
                name: &t.name,
            })
            .collect();
        // Structured output: a tool whose input is the value, which the model
        // must call (Anthropic's way to a JSON-schema reply).
        let tool_choice = request.response_format.map(|format| {
            tools.push(RequestTool {
                description: "Answer with a value of this schema.",
                input_schema: &format.schema,
                name: &format.name,
            });
            ToolChoice::Tool { name: &format.name }
        });
        MessagesRequest {
            max_tokens: self.max_tokens,
            messages,
            model: &self.model,
            stream,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            temperature: self.temperature,
            tool_choice,
            tools,
        }
    }

    /// Sends `body`, retrying 429, 529 and other 5xx answers (not failed
    /// connections: the node's retry policy sees those).
    async fn send(&self, body: &MessagesRequest<'_>) -> Result<reqwest::Response, AgentError> {
        let body = json_body(body)?;
        let mut attempt = 0;
        loop {
            let mut http = self
                .client
                .post(format!("{}/v1/messages", self.base_url))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header("anthropic-version", API_VERSION)
                .body(body.clone());
            if let Some(key) = &self.api_key {
                http = http.header("x-api-key", key);
            }
            let error = match send(http).await {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let wait = match &error {
                AgentError::RateLimited { retry_after, .. } => *retry_after,
                AgentError::Server { .. } => None,
                _ => return Err(error),
            };
            if attempt >= self.max_retries {
                return Err(error);
            }
            let backoff = self.backoff.saturating_mul(1 << attempt.min(4));
            let pause = wait.unwrap_or(backoff).min(Duration::from_secs(60));
            tracing::debug!(%error, ?pause, "retrying the Anthropic request");
            tokio::time::sleep(pause).await;
            attempt += 1;
        }
    }
}

/// The body of a Messages API request, from [`AnthropicChat::body`]. It is
/// [`Serialize`]: `serde_json::to_value(&body)` shows the JSON that is sent.
#[derive(Debug, Clone, Serialize)]
pub struct MessagesRequest<'a> {
    max_tokens: u32,
    messages: Vec<Turn<'a>>,
    model: &'a str,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<RequestTool<'a>>,
}

/// One turn of the conversation: the user's, or the assistant's.
#[derive(Debug, Clone, Serialize)]
struct Turn<'a> {
    content: Vec<Block<'a>>,
    role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// A content block of a turn.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: Option<&'a str>,
        /// The call's arguments; `{}` for a call whose arguments were not JSON.
        #[serde(serialize_with = "input_or_empty")]
        input: Option<&'a Value>,
        name: Option<&'a str>,
    },
    ToolResult {
        content: &'a str,
        is_error: bool,
        tool_use_id: &'a str,
    },
}

fn input_or_empty<S: serde::Serializer>(
    input: &Option<&Value>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match input {
        Some(value) => value.serialize(serializer),
        None => serializer.serialize_map(Some(0))?.end(),
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, Serialize)]
struct RequestTool<'a> {
    description: &'a str,
    input_schema: &'a Value,
    name: &'a str,
}

/// Which tool the model must call (structured output).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ToolChoice<'a> {
    Tool { name: &'a str },
}

/// The id of a reply (the server's `msg_..` id is kept in
/// `response_metadata["id"]`).
fn reply_id() -> String {
    format!("run-{}", crate::message::new_id())
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<WireBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

fn metadata(chunk: &mut AiMessageChunk, key: &str, value: Option<String>) {
    if let Some(v) = value {
        chunk
            .response_metadata
            .insert(key.to_owned(), Value::String(v));
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
    }
}

impl WireMessage {
    fn into_chunk(self) -> AiMessageChunk {
        let mut chunk = AiMessageChunk {
            usage_metadata: self.usage.map(|u| usage(u.input_tokens, u.output_tokens)),
            ..Default::default()
        };
        metadata(&mut chunk, "id", self.id);
        metadata(&mut chunk, "model_name", self.model);
        metadata(&mut chunk, "stop_reason", self.stop_reason);
        for (index, block) in self.content.into_iter().enumerate() {
            match block {
                WireBlock::Text { text } => chunk.content.push_str(&text),
                WireBlock::ToolUse { id, name, input } => {
                    chunk.tool_call_chunks.push(ToolCallChunk {
                        index,
                        id: Some(id),
                        name: Some(name),
                        args: input.to_string(),
                    })
                }
                WireBlock::Other => {}
            }
        }
        chunk
    }
}

/// One server-sent event of a streamed reply.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: WireDelta,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireStop,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct WireStop {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

impl WireError {
    fn into_error(self) -> AgentError {
        let body = format!("{}: {}", self.kind, self.message);
        match self.kind.as_str() {
            "overloaded_error" => AgentError::Server { status: 529, body },
            "rate_limit_error" => AgentError::RateLimited {
                retry_after: None,
                body,
            },
            "api_error" => AgentError::Server { status: 500, body },
            _ => AgentError::InvalidResponse(format!("the server sent an error: {body}")),
        }
    }
}

/// What a streamed reply has delivered so far.
struct StreamState {
    events: BoxStream<'static, Result<Sse, sse_stream::Error>>,
    id: String,
    input_tokens: u64,
    finished: bool,
    done: bool,
}

impl StreamState {
    /// The next chunk; `None` at the end.
    async fn next_chunk(&mut self) -> Option<Result<AiMessageChunk, AgentError>> {
        loop {
            let event = match self.events.next().await {
                Some(Ok(event)) => event,
                Some(Err(sse_stream::Error::Body(e))) => {
                    return Some(Err(AgentError::StreamEnded(e.to_string())))
                }
                Some(Err(e)) => {
                    return Some(Err(AgentError::InvalidResponse(format!(
                        "the event stream could not be read: {e}"
                    ))))
                }
                None if self.finished => return None,
                None => {
                    return Some(Err(AgentError::StreamEnded(
                        "the connection closed before the model finished its reply".to_owned(),
                    )))
                }
            };
            let Some(data) = event.data else { continue };
            let event: WireEvent = match serde_json::from_str(&data) {
                Ok(e) => e,
                Err(e) => {
                    return Some(Err(AgentError::InvalidResponse(format!(
                        "{e}; the event was: {}",
                        truncate(data, 300)
                    ))))
                }
            };
            let mut chunk = AiMessageChunk {
                id: Some(self.id.clone()),
                ..Default::default()
            };
            match event {
                WireEvent::MessageStart { message } => {
                    self.input_tokens = message.usage.map_or(0, |u| u.input_tokens);
                    metadata(&mut chunk, "id", message.id);
                    metadata(&mut chunk, "model_name", message.model);
                }
                WireEvent::ContentBlockStart {
                    index,
                    content_block: WireBlock::ToolUse { id, name, .. },
                } => chunk.tool_call_chunks.push(ToolCallChunk {
                    index,
                    id: Some(id),
                    name: Some(name),
                    args: String::new(),
                }),
                WireEvent::ContentBlockStart {
                    content_block: WireBlock::Text { text },
                    ..
                } if !text.is_empty() => chunk.content = text,
                WireEvent::ContentBlockDelta { index, delta } => match delta {
                    WireDelta::TextDelta { text } => chunk.content = text,
                    WireDelta::InputJsonDelta { partial_json } => {
                        chunk.tool_call_chunks.push(ToolCallChunk {
                            index,
                            args: partial_json,
                            ..Default::default()
                        })
                    }
                    WireDelta::Other => continue,
                },
                WireEvent::MessageDelta { delta, usage: u } => {
                    metadata(&mut chunk, "stop_reason", delta.stop_reason);
                    let output = u.map_or(0, |u| u.output_tokens);
                    chunk.usage_metadata = Some(usage(self.input_tokens, output));
                }
                WireEvent::MessageStop => {
                    self.finished = true;
                    continue;
                }
                WireEvent::Error { error } => return Some(Err(error.into_error())),
                WireEvent::ContentBlockStart { .. } | WireEvent::Other => continue,
            }
            return Some(Ok(chunk));
        }
    }
}

impl ChatModel for AnthropicChat {
    fn generate<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<Arc<AiMessage>, AgentError>> {
        let body = self.body(&request, false);
        Box::pin(async move {
            let response = self.send(&body).await?;
            let text = response.text().await.map_err(transport)?;
            let message: WireMessage = serde_json::from_str(&text).map_err(|e| {
                AgentError::InvalidResponse(format!("{e}; the body was: {}", truncate(text, 300)))
            })?;
            let mut chunk = message.into_chunk();
            chunk.id = Some(reply_id());
            let mut agg = ChunkAggregator::default();
            agg.push(chunk);
            Ok(Arc::new(agg.finish()))
        })
    }

    fn stream<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxStream<'a, Result<AiMessageChunk, AgentError>> {
        let body = self.body(&request, true);
        let start = async move {
            let response = self.send(&body).await?;
            Ok::<_, AgentError>(StreamState {
                events: SseByteStream::new(response.bytes_stream()).boxed(),
                id: reply_id(),
                input_tokens: 0,
                finished: false,
                done: false,
            })
        };
        futures::stream::once(start)
            .flat_map(|started| match started {
                Err(e) => futures::stream::once(std::future::ready(Err(e))).boxed(),
                Ok(state) => futures::stream::unfold(state, |mut state| async move {
                    if state.done {
                        return None;
                    }
                    let item = state.next_chunk().await?;
                    if item.is_err() {
                        state.done = true;
                    }
                    Some((item, state))
                })
                .boxed(),
            })
            .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::model::ResponseFormat;
    use crate::tool::ToolSpec;
    use serde_json::json;

    #[test]
    fn the_history_is_sent_in_anthropic_form() {
        let model = AnthropicChat::new("claude-test").max_tokens(64);
        let history = vec![
            Message::system("be kind"),
            Message::human("weather?"),
            AiMessage::new("Let me look.")
                .with_tool_call(ToolCall::new("t1", "weather", json!({"city": "Paris"})))
                .with_tool_call(ToolCall::new("t2", "weather", json!({"city": "Oslo"})))
                .into(),
            Message::tool("sunny", "t1"),
            crate::message::ToolMessage {
                content: "no data".into(),
                id: None,
                name: None,
                tool_call_id: "t2".into(),
                status: ToolStatus::Error,
            }
            .into(),
            Message::human("and tomorrow?"),
        ];
        let tools = [ToolSpec {
            name: "weather".into(),
            description: "Weather in a city.".into(),
            parameters: json!({"type": "object"}),
        }];
        let request = ChatRequest::new(&history).system("be brief").tools(&tools);
        let body = serde_json::to_value(model.body(&request, false)).unwrap();
        assert_eq!(body["system"], "be brief\n\nbe kind");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert_eq!(messages[0]["role"], "user");
        assert_eq!(
            messages[1]["content"][0],
            json!({"type": "text", "text": "Let me look."})
        );
        assert_eq!(messages[1]["content"][2]["input"], json!({"city": "Oslo"}));
        let results = messages[2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 3, "two results and the question, one turn");
        assert_eq!(results[1]["is_error"], true);
        assert_eq!(results[2], json!({"type": "text", "text": "and tomorrow?"}));
        assert!(body.get("tool_choice").is_none());

        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Verdict {
            ok: bool,
        }
        let format = ResponseFormat::of::<Verdict>();
        let body = model.body(
            &ChatRequest::new(&history[1..2]).response_format(&format),
            false,
        );
        let body = serde_json::to_value(body).unwrap();
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "Verdict"})
        );
        assert_eq!(body["tools"][0]["name"], "Verdict");
        assert_eq!(body["tools"][0]["input_schema"]["required"], json!(["ok"]));
    }

    #[test]
    fn a_call_whose_arguments_were_not_json_goes_back_with_an_empty_input() {
        let model = AnthropicChat::new("claude-test");
        let ai = AiMessage {
            invalid_tool_calls: vec![crate::message::InvalidToolCall {
                id: Some("bad".into()),
                name: Some("weather".into()),
                args: Some("{\"city\": ".into()),
                error: None,
            }],
            ..AiMessage::new("")
        };
        let history = [Message::human("weather?"), ai.into()];
        let body = serde_json::to_value(model.body(&ChatRequest::new(&history), true)).unwrap();
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "bad", "name": "weather", "input": {}}])
        );
        assert_eq!(body["stream"], true);
        assert!(body.get("system").is_none() && body.get("tools").is_none());
    }
}
