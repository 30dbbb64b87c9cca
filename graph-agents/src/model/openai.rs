//! [`OpenAiChat`]: a [`ChatModel`] for any server speaking OpenAI's chat completions
//! API (OpenAI, vLLM, Ollama, llama.cpp's server...), with SSE streaming and tool
//! calls. Feature `openai`.
//!
//! Streamed replies are read as the server-sent events format defines them:
//! lines may end in LF, CRLF or a lone CR, the `data:` lines of one event are
//! joined with newlines, a field loses one leading space and no more, comments
//! and the `event:`, `id:` and `retry:` fields are skipped, and `data: [DONE]`
//! ends the reply. Chunks may split the stream anywhere.
//!
//! Failures are typed [`AgentError`]s: HTTP 429 is
//! [`RateLimited`](AgentError::RateLimited), 5xx is [`Server`](AgentError::Server),
//! a connection failure is [`Transport`](AgentError::Transport), a stream cut
//! before the model finished is [`StreamEnded`](AgentError::StreamEnded) — all
//! retried by [`model_retry_policy`](crate::model_retry_policy) — and a body that
//! is not a chat completion is [`InvalidResponse`](AgentError::InvalidResponse).
//! Tool-call arguments that are not valid JSON become
//! [`InvalidToolCall`](crate::InvalidToolCall)s, answered with an error by the tool
//! node, so the history stays valid.
//!
//! [`OpenAiEmbeddings`] is the embeddings client for the same servers, the
//! model of a store's semantic search.

/// The HTTP client crate, for [`OpenAiChat::with_client`]: build the `reqwest::Client`
/// with this version.
#[doc(no_inline)]
pub use reqwest;

pub use super::openai_embeddings::OpenAiEmbeddings;

use super::http::{json_body, send, transport, truncate};
use super::{AiMessageChunk, ChatModel, ChatRequest, ChunkAggregator, ToolCallChunk};
use crate::error::AgentError;
use crate::message::{AiMessage, Message, Usage};
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sse_stream::{Sse, SseByteStream};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// A client for an OpenAI-compatible chat completions server.
///
/// ```no_run
/// use graph_agents::model::openai::OpenAiChat;
/// use graph_agents::model::{ChatModel, ChatRequest};
/// use graph_agents::Message;
///
/// # async fn demo() -> Result<(), graph_agents::AgentError> {
/// // A local Ollama server; for OpenAI: "https://api.openai.com/v1" and an api_key.
/// let model = OpenAiChat::new("http://localhost:11434/v1", "llama3.2");
/// let history = [Message::human("Say hi")];
/// let reply = model.generate(ChatRequest::new(&history)).await?;
/// println!("{}", reply.content);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    client: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
}

impl OpenAiChat {
    /// A client for `model` at `base_url` (the part before `/chat/completions`,
    /// e.g. `https://api.openai.com/v1`), with a 120 s timeout per request.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap_or_default();
        OpenAiChat {
            client,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            temperature: None,
            max_tokens: None,
        }
    }

    /// Sends `key` as a bearer token.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Caps the reply's length in tokens.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Uses `client` (proxies, timeouts, TLS settings of your own).
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    /// The request body for `request`: serialize it to see the JSON sent.
    pub fn body<'a>(
        &'a self,
        request: &ChatRequest<'a>,
        stream: bool,
    ) -> ChatCompletionRequest<'a> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = request.system {
            messages.push(RequestMessage::System {
                content: system,
                role: Role::System,
            });
        }
        messages.extend(request.messages.iter().filter_map(RequestMessage::of));
        ChatCompletionRequest {
            max_tokens: self.max_tokens,
            messages,
            model: &self.model,
            response_format: request.response_format.map(|f| RequestFormat {
                json_schema: RequestJsonSchema {
                    name: &f.name,
                    schema: &f.schema,
                    strict: f.strict.then_some(true),
                },
                kind: JsonSchemaKind::JsonSchema,
            }),
            stream,
            temperature: self.temperature,
            tools: request
                .tools
                .iter()
                .map(|t| RequestTool {
                    function: RequestFunction {
                        description: &t.description,
                        name: &t.name,
                        parameters: &t.parameters,
                    },
                    kind: FunctionKind::Function,
                })
                .collect(),
        }
    }

    async fn send(
        &self,
        body: &ChatCompletionRequest<'_>,
    ) -> Result<reqwest::Response, AgentError> {
        let mut http = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(json_body(body)?);
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        send(http).await
    }
}

/// A fresh id for a reply. Servers' completion ids are not used as message ids
/// (some reuse them, and `add_messages` would then replace an earlier reply);
/// they are kept in `response_metadata["id"]`.
fn reply_id() -> String {
    format!("run-{}", crate::message::new_id())
}

/// The body of a chat completions request, from [`OpenAiChat::body`]. It is
/// [`Serialize`]: `serde_json::to_value(&body)` shows the JSON that is sent.
//
// Every struct here declares its fields in alphabetical order, the order in which
// the `serde_json::Value` tree that this replaced wrote them: the bytes sent are
// the same.
#[derive(Debug, Clone, Serialize)]
pub struct ChatCompletionRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    messages: Vec<RequestMessage<'a>>,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<RequestFormat<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<RequestTool<'a>>,
}

/// Who wrote a message, in OpenAI's words.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One history message in OpenAI's form.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum RequestMessage<'a> {
    System {
        content: &'a str,
        role: Role,
    },
    User {
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
        role: Role,
    },
    Assistant {
        /// `null` when the reply is only tool calls.
        content: Option<&'a str>,
        role: Role,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<RequestToolCall<'a>>,
    },
    Tool {
        content: &'a str,
        role: Role,
        tool_call_id: &'a str,
    },
}

impl<'a> RequestMessage<'a> {
    /// `m` in OpenAI's form (remove markers are not sent).
    fn of(m: &'a Message) -> Option<Self> {
        Some(match m {
            Message::System(s) => RequestMessage::System {
                content: &s.content,
                role: Role::System,
            },
            Message::Human(h) => RequestMessage::User {
                content: &h.content,
                name: h.name.as_deref(),
                role: Role::User,
            },
            Message::Ai(ai) => {
                let mut tool_calls: Vec<RequestToolCall<'a>> = ai
                    .tool_calls
                    .iter()
                    .map(|c| RequestToolCall {
                        function: RequestFunctionCall {
                            arguments: Cow::Owned(c.args.to_string()),
                            name: &c.name,
                        },
                        id: Some(&c.id),
                        kind: FunctionKind::Function,
                    })
                    .collect();
                // Invalid calls are sent as the model made them: their answers follow.
                tool_calls.extend(ai.invalid_tool_calls.iter().map(|c| RequestToolCall {
                    function: RequestFunctionCall {
                        arguments: Cow::Borrowed(c.args.as_deref().unwrap_or_default()),
                        name: c.name.as_deref().unwrap_or_default(),
                    },
                    id: c.id.as_deref(),
                    kind: FunctionKind::Function,
                }));
                let content = if ai.content.is_empty() && !tool_calls.is_empty() {
                    None
                } else {
                    Some(ai.content.as_str())
                };
                RequestMessage::Assistant {
                    content,
                    role: Role::Assistant,
                    tool_calls,
                }
            }
            Message::Tool(t) => RequestMessage::Tool {
                content: &t.content,
                role: Role::Tool,
                tool_call_id: &t.tool_call_id,
            },
            Message::Remove(_) => return None,
        })
    }
}

/// The `type` of a tool and of a tool call: OpenAI knows functions only.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
enum FunctionKind {
    Function,
}

/// A tool call of an earlier reply.
#[derive(Debug, Clone, Serialize)]
struct RequestToolCall<'a> {
    function: RequestFunctionCall<'a>,
    /// `null` for an invalid call that came without an id.
    id: Option<&'a str>,
    #[serde(rename = "type")]
    kind: FunctionKind,
}

#[derive(Debug, Clone, Serialize)]
struct RequestFunctionCall<'a> {
    /// The arguments as a JSON string, as OpenAI sends them.
    arguments: Cow<'a, str>,
    name: &'a str,
}

/// `response_format`: the JSON schema the reply must fit.
#[derive(Debug, Clone, Serialize)]
struct RequestFormat<'a> {
    json_schema: RequestJsonSchema<'a>,
    #[serde(rename = "type")]
    kind: JsonSchemaKind,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum JsonSchemaKind {
    JsonSchema,
}

#[derive(Debug, Clone, Serialize)]
struct RequestJsonSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

/// A tool the model may call.
#[derive(Debug, Clone, Serialize)]
struct RequestTool<'a> {
    function: RequestFunction<'a>,
    #[serde(rename = "type")]
    kind: FunctionKind,
}

#[derive(Debug, Clone, Serialize)]
struct RequestFunction<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default, alias = "delta")]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

#[derive(Deserialize)]
struct WireCompletion {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

impl WireCompletion {
    /// The completion (or a streamed piece of one) as a chunk; `finished` says
    /// whether it carried a finish reason.
    fn into_chunk(self) -> Result<(AiMessageChunk, bool), AgentError> {
        if let Some(error) = self.error {
            return Err(AgentError::InvalidResponse(format!(
                "the server sent an error: {error}"
            )));
        }
        let mut chunk = AiMessageChunk {
            usage_metadata: self.usage.map(|u| Usage {
                input_tokens: u.prompt_tokens,
                output_tokens: u.completion_tokens,
                total_tokens: u.total_tokens,
            }),
            ..Default::default()
        };
        if let Some(id) = self.id {
            chunk
                .response_metadata
                .insert("id".to_owned(), Value::String(id));
        }
        if let Some(model) = self.model {
            chunk
                .response_metadata
                .insert("model_name".to_owned(), Value::String(model));
        }
        let Some(choices) = self.choices else {
            return Err(AgentError::InvalidResponse(
                "no `choices` in the completion".to_owned(),
            ));
        };
        let mut finished = false;
        // Only the first choice is used (`n` is never asked for).
        if let Some(choice) = choices.into_iter().next() {
            if let Some(reason) = choice.finish_reason {
                finished = true;
                chunk
                    .response_metadata
                    .insert("finish_reason".to_owned(), Value::String(reason));
            }
            let message = choice.message.unwrap_or_default();
            chunk.content = message.content.unwrap_or_default();
            for (i, call) in message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                let function = call.function.unwrap_or(WireFunction {
                    name: None,
                    arguments: None,
                });
                let args = match function.arguments {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s,
                    // Some servers send the arguments as an object, not a string.
                    Some(other) => other.to_string(),
                };
                chunk.tool_call_chunks.push(ToolCallChunk {
                    index: call.index.unwrap_or(i),
                    id: call.id,
                    name: function.name,
                    args,
                });
            }
        }
        Ok((chunk, finished))
    }
}

fn parse_completion(text: &str) -> Result<WireCompletion, AgentError> {
    serde_json::from_str(text).map_err(|e| {
        AgentError::InvalidResponse(format!(
            "{e}; the body was: {}",
            truncate(text.to_owned(), 300)
        ))
    })
}

/// What an SSE stream has delivered so far.
struct SseState {
    /// The body's events, parsed as they come: the parser keeps its place
    /// between chunks, so no byte is scanned twice.
    events: BoxStream<'static, Result<Sse, sse_stream::Error>>,
    finished: bool,
    done: bool,
    /// The id of the reply, on every chunk.
    id: String,
}

impl SseState {
    /// The next event's data, `None` at `[DONE]` or at the end of the body.
    async fn next_data(&mut self) -> Option<Result<String, AgentError>> {
        loop {
            match self.events.next().await {
                Some(Ok(event)) => {
                    // Blocks of only `event:`, `id:` or `retry:` fields carry no
                    // completion (comments never reach here).
                    let Some(data) = event.data else { continue };
                    let trimmed = data.trim();
                    if trimmed == "[DONE]" {
                        self.done = true;
                        return None;
                    }
                    if trimmed.is_empty() {
                        continue;
                    }
                    return Some(Ok(data));
                }
                Some(Err(sse_stream::Error::Body(e))) => {
                    self.done = true;
                    return Some(Err(AgentError::StreamEnded(e.to_string())));
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(AgentError::InvalidResponse(format!(
                        "the event stream could not be read: {e}"
                    ))));
                }
                None => {
                    self.done = true;
                    if self.finished {
                        return None;
                    }
                    return Some(Err(AgentError::StreamEnded(
                        "the connection closed before the model finished its reply".to_owned(),
                    )));
                }
            }
        }
    }
}

impl ChatModel for OpenAiChat {
    fn generate<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<Arc<AiMessage>, AgentError>> {
        let body = self.body(&request, false);
        Box::pin(async move {
            let response = self.send(&body).await?;
            let text = response.text().await.map_err(transport)?;
            let (mut chunk, _) = parse_completion(&text)?.into_chunk()?;
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
        let id = reply_id();
        let start = async move {
            match self.send(&body).await {
                Ok(response) => Ok(SseState {
                    events: SseByteStream::new(response.bytes_stream()).boxed(),
                    finished: false,
                    done: false,
                    id,
                }),
                Err(e) => Err(e),
            }
        };
        futures::stream::once(start)
            .flat_map(|started| match started {
                Err(e) => futures::stream::once(std::future::ready(Err(e))).boxed(),
                Ok(state) => futures::stream::unfold(state, |mut state| async move {
                    if state.done {
                        return None;
                    }
                    let item = match state.next_data().await? {
                        Err(e) => Err(e),
                        Ok(data) => parse_completion(&data)
                            .and_then(WireCompletion::into_chunk)
                            .map(|(mut chunk, finished)| {
                                state.finished |= finished;
                                chunk.id = Some(state.id.clone());
                                chunk
                            }),
                    };
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
    use crate::message::{AiMessage, ToolCall};
    use crate::tool::ToolSpec;
    use serde_json::json;

    #[test]
    fn the_history_is_sent_in_openai_form() {
        let model = OpenAiChat::new("http://x/v1/", "m").temperature(0.0);
        let history = vec![
            Message::human("hi"),
            AiMessage::new("")
                .with_tool_call(ToolCall::new("c1", "f", json!({"a": 1})))
                .into(),
            Message::tool("out", "c1"),
            Message::remove("zzz"),
        ];
        let tools = [ToolSpec {
            name: "f".into(),
            description: "does f".into(),
            parameters: json!({"type": "object"}),
        }];
        let request = ChatRequest::new(&history).system("be brief").tools(&tools);
        let body = serde_json::to_value(model.body(&request, true)).unwrap();
        assert_eq!(model.base_url, "http://x/v1");
        assert_eq!(body["stream"], true);
        assert_eq!(body["temperature"], 0.0);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(messages[1], json!({"role": "user", "content": "hi"}));
        assert_eq!(messages[2]["content"], Value::Null);
        assert_eq!(
            messages[2]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(
            messages[3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "out"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "f");
    }
}
