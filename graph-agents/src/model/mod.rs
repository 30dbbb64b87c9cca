//! Chat models: the [`ChatModel`] trait, streamed [`AiMessageChunk`]s and how they
//! add up to an [`AiMessage`], and [`call_model`], which streams tokens to the
//! `messages` stream mode when the caller listens.

#[cfg(feature = "anthropic")]
pub mod anthropic;
mod fake;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod http;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "openai")]
mod openai_embeddings;
mod structured;

pub use fake::FakeChatModel;
pub use structured::{parse_structured, ResponseFormat, StructuredModel};

use crate::error::AgentError;
use crate::message::{new_id, AiMessage, InvalidToolCall, Message, ToolCall, Usage};
use crate::tool::ToolSpec;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use graph_core::{Context, NodeError, RetryPolicy};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// What a model is asked: an optional system prompt, the history, the tools it
/// may call. Borrowed, so a call copies no message.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    /// Instructions put before the history.
    pub system: Option<&'a str>,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolSpec],
    /// The JSON schema the reply must fit (OpenAI's `response_format`), for
    /// structured output ([`ChatModel::with_structured_output`]).
    pub response_format: Option<&'a ResponseFormat>,
}

impl<'a> ChatRequest<'a> {
    /// A request with the history only.
    pub fn new(messages: &'a [Message]) -> Self {
        ChatRequest {
            system: None,
            messages,
            tools: &[],
            response_format: None,
        }
    }

    /// Adds a system prompt.
    pub fn system(mut self, system: &'a str) -> Self {
        self.system = Some(system);
        self
    }

    /// Adds the tools the model may call.
    pub fn tools(mut self, tools: &'a [ToolSpec]) -> Self {
        self.tools = tools;
        self
    }

    /// Asks for a reply that fits `format`'s JSON schema.
    pub fn response_format(mut self, format: &'a ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }
}

/// A chat model: takes a history, replies with an AI message (text and tool
/// calls), whole or streamed as chunks.
///
/// Implementations: [`FakeChatModel`] (scripted, for tests and benchmarks) and,
/// with feature `openai`, `openai::OpenAiChat` for any OpenAI-compatible server.
pub trait ChatModel: Send + Sync + 'static {
    /// The whole reply, shared: it goes into the history as it is (a
    /// [`Message::Ai`] holds an `Arc<AiMessage>`), so a model that keeps its
    /// replies (a cache, a script) hands them over without copying them.
    fn generate<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<Arc<AiMessage>, AgentError>>;

    /// The reply as it is produced: text deltas and tool-call pieces. The default
    /// yields the whole reply of [`generate`](ChatModel::generate) as one chunk.
    fn stream<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxStream<'a, Result<AiMessageChunk, AgentError>> {
        futures::stream::once(async move {
            self.generate(request)
                .await
                .map(|reply| AiMessageChunk::from(Arc::unwrap_or_clone(reply)))
        })
        .boxed()
    }

    /// This model answering with a `T`: each request carries `T`'s JSON schema
    /// ([`ResponseFormat`]; OpenAI's `response_format: json_schema`) and the reply
    /// is parsed into a `T`, or fails with
    /// [`AgentError::StructuredOutput`] and the raw reply.
    fn with_structured_output<T>(self) -> StructuredModel<T>
    where
        Self: Sized,
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        StructuredModel::new(Arc::new(self))
    }
}

impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn generate<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<Arc<AiMessage>, AgentError>> {
        (**self).generate(request)
    }

    fn stream<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxStream<'a, Result<AiMessageChunk, AgentError>> {
        (**self).stream(request)
    }
}

/// A piece of a tool call being streamed: chunks with the same `index` add up.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCallChunk {
    /// Which call of the reply this piece belongs to.
    pub index: usize,
    /// The call's id (usually on the first piece only).
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's name (usually on the first piece only).
    #[serde(default)]
    pub name: Option<String>,
    /// A piece of the JSON arguments text.
    #[serde(default)]
    pub args: String,
}

/// A piece of a streamed AI reply (LangChain's `AIMessageChunk`); the payload of
/// `messages`-mode events emitted by [`call_model`].
///
/// Serialised with `"type": "AIMessageChunk"` and LangChain's field names.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename = "AIMessageChunk")]
pub struct AiMessageChunk {
    /// A text delta.
    #[serde(default)]
    pub content: String,
    /// The reply's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool-call pieces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_call_chunks: Vec<ToolCallChunk>,
    /// Token counts (usually on the last chunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<Usage>,
    /// Provider details (finish reason, model name).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub response_metadata: Map<String, Value>,
}

impl AiMessageChunk {
    /// A text delta.
    pub fn text(content: impl Into<String>) -> Self {
        AiMessageChunk {
            content: content.into(),
            ..Default::default()
        }
    }

    /// The chunk of a `messages`-mode stream event, with the event's metadata
    /// (`None` for other events, and for whole messages: see [`StreamedMessage`]).
    pub fn from_event<S: graph_core::State>(
        event: &graph_core::StreamEvent<S>,
    ) -> Option<(AiMessageChunk, &graph_core::MessageMetadata)> {
        match event {
            graph_core::StreamEvent::Message { chunk, metadata }
                if chunk.get("type").and_then(Value::as_str) == Some("AIMessageChunk") =>
            {
                let chunk = AiMessageChunk::deserialize(chunk).ok()?;
                Some((chunk, metadata))
            }
            _ => None,
        }
    }
}

/// What a `messages`-mode event carries: a piece of a model's reply as it is
/// generated ([`call_model`]), or a whole message a node produced (the tool
/// results of [`ToolNode`](crate::ToolNode) and the ReAct agent's tool node).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamedMessage {
    /// A piece of a reply being generated.
    Chunk(AiMessageChunk),
    /// A whole message.
    Message(Message),
}

impl StreamedMessage {
    /// The message of a `messages`-mode event, with the event's metadata; `None`
    /// for events of other modes and payloads that are not messages.
    ///
    /// ```
    /// use graph_agents::model::StreamedMessage;
    /// use graph_agents::{Message, MessagesState};
    /// use graph_core::StreamEvent;
    ///
    /// let event = StreamEvent::<MessagesState>::Values(Default::default());
    /// assert!(StreamedMessage::from_event(&event).is_none());
    /// # let _ = Message::human("");
    /// ```
    pub fn from_event<S: graph_core::State>(
        event: &graph_core::StreamEvent<S>,
    ) -> Option<(StreamedMessage, &graph_core::MessageMetadata)> {
        let graph_core::StreamEvent::Message { chunk, metadata } = event else {
            return None;
        };
        let message = if chunk.get("type").and_then(Value::as_str) == Some("AIMessageChunk") {
            StreamedMessage::Chunk(AiMessageChunk::deserialize(chunk).ok()?)
        } else {
            StreamedMessage::Message(Message::deserialize(chunk).ok()?)
        };
        Some((message, metadata))
    }
}

/// A whole reply as one chunk (tool calls with their full arguments).
impl From<AiMessage> for AiMessageChunk {
    fn from(m: AiMessage) -> Self {
        let valid = m.tool_calls.into_iter().map(|c| ToolCallChunk {
            index: 0,
            id: Some(c.id),
            name: Some(c.name),
            args: c.args.to_string(),
        });
        let invalid = m.invalid_tool_calls.into_iter().map(|c| ToolCallChunk {
            index: 0,
            id: c.id,
            name: c.name,
            args: c.args.unwrap_or_default(),
        });
        let tool_call_chunks = valid
            .chain(invalid)
            .enumerate()
            .map(|(index, c)| ToolCallChunk { index, ..c })
            .collect();
        AiMessageChunk {
            content: m.content,
            id: m.id,
            tool_call_chunks,
            usage_metadata: m.usage_metadata,
            response_metadata: m.response_metadata,
        }
    }
}

/// Adds streamed chunks up into the whole reply.
///
/// Tool-call pieces are joined by index; at the end each call's arguments are
/// parsed: JSON that does not parse (or is not an object) makes an
/// [`InvalidToolCall`], a call without an id gets one, so the reply is always a
/// well-formed message.
///
/// ```
/// use graph_agents::model::{AiMessageChunk, ChunkAggregator, ToolCallChunk};
///
/// let mut agg = ChunkAggregator::default();
/// agg.push(AiMessageChunk::text("Hel"));
/// agg.push(AiMessageChunk { tool_call_chunks: vec![ToolCallChunk { index: 0, id: Some("c1".into()), name: Some("add".into()), args: "{\"a\":".into() }], ..AiMessageChunk::text("lo") });
/// agg.push(AiMessageChunk { tool_call_chunks: vec![ToolCallChunk { index: 0, args: " 1}".into(), ..Default::default() }], ..Default::default() });
/// let reply = agg.finish();
/// assert_eq!(reply.content, "Hello");
/// assert_eq!(reply.tool_calls[0].args, serde_json::json!({"a": 1}));
/// ```
#[derive(Debug, Default)]
pub struct ChunkAggregator {
    message: AiMessage,
    calls: Vec<ToolCallChunk>,
}

impl ChunkAggregator {
    /// Adds one chunk.
    pub fn push(&mut self, chunk: AiMessageChunk) {
        let m = &mut self.message;
        m.content.push_str(&chunk.content);
        if m.id.is_none() {
            m.id = chunk.id;
        }
        if chunk.usage_metadata.is_some() {
            m.usage_metadata = chunk.usage_metadata;
        }
        m.response_metadata.extend(chunk.response_metadata);
        for piece in chunk.tool_call_chunks {
            match self.calls.iter_mut().find(|c| c.index == piece.index) {
                Some(call) => {
                    call.args.push_str(&piece.args);
                    if call.id.is_none() {
                        call.id = piece.id;
                    }
                    if call.name.is_none() {
                        call.name = piece.name;
                    }
                }
                None => self.calls.push(piece),
            }
        }
    }

    /// The whole reply.
    pub fn finish(mut self) -> AiMessage {
        self.calls.sort_by_key(|c| c.index);
        for call in self.calls {
            let id = call.id.unwrap_or_else(|| format!("call_{}", new_id()));
            let text = call.args.trim();
            let parsed = if text.is_empty() {
                Ok(Value::Object(Map::new()))
            } else {
                serde_json::from_str::<Value>(text)
            };
            match (call.name, parsed) {
                (Some(name), Ok(args @ Value::Object(_))) => {
                    self.message.tool_calls.push(ToolCall::new(id, name, args));
                }
                (name, result) => {
                    let error = match (&name, result) {
                        (None, _) => "the tool call has no tool name".to_owned(),
                        (_, Err(e)) => e.to_string(),
                        (_, Ok(_)) => "the arguments are not a JSON object".to_owned(),
                    };
                    self.message.invalid_tool_calls.push(InvalidToolCall {
                        id: Some(id),
                        name,
                        args: Some(call.args),
                        error: Some(error),
                    });
                }
            }
        }
        self.message
    }
}

/// Calls `model` for a node: streams the reply's chunks to the `messages` stream
/// mode (with the node's metadata) when the caller listens, else asks for the
/// whole reply. Either way returns the whole reply.
pub async fn call_model<M: ChatModel + ?Sized, C: ?Sized>(
    model: &M,
    request: ChatRequest<'_>,
    ctx: &Context<C>,
) -> Result<Arc<AiMessage>, AgentError> {
    if !ctx.is_streaming_messages() {
        return model.generate(request).await;
    }
    let mut stream = model.stream(request);
    let mut agg = ChunkAggregator::default();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        ctx.write_message_chunk(&chunk);
        agg.push(chunk);
    }
    Ok(Arc::new(agg.finish()))
}

/// A [`RetryPolicy`] for nodes that call a model: retries the errors
/// [`AgentError::is_retryable`] accepts (rate limits, 5xx, transport failures,
/// dropped streams) even when a plain `?` converted them, and every transient
/// error ([`NodeError::is_transient`]); 3 attempts with LangGraph's default backoff.
pub fn model_retry_policy() -> RetryPolicy {
    RetryPolicy::new().retry_on(is_retryable)
}

/// Whether a node error is a model error worth retrying, or another transient
/// error (see [`model_retry_policy`]).
pub fn is_retryable(error: &NodeError) -> bool {
    error.is_transient()
        || error
            .downcast_ref::<AgentError>()
            .is_some_and(AgentError::is_retryable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn piece(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> AiMessageChunk {
        AiMessageChunk {
            tool_call_chunks: vec![ToolCallChunk {
                index,
                id: id.map(Into::into),
                name: name.map(Into::into),
                args: args.into(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn interleaved_pieces_add_up_by_index() {
        let mut agg = ChunkAggregator::default();
        agg.push(piece(1, Some("b"), Some("g"), "{\"y\""));
        agg.push(piece(0, Some("a"), Some("f"), "{"));
        agg.push(piece(1, None, None, ": 2}"));
        agg.push(piece(0, None, None, "}"));
        let m = agg.finish();
        assert_eq!(
            m.tool_calls,
            [
                ToolCall::new("a", "f", json!({})),
                ToolCall::new("b", "g", json!({"y": 2}))
            ]
        );
    }

    #[test]
    fn malformed_or_nameless_calls_become_invalid_calls_with_ids() {
        let mut agg = ChunkAggregator::default();
        agg.push(piece(0, Some("a"), Some("f"), "{\"x\": "));
        agg.push(piece(1, None, Some("g"), "[1]"));
        agg.push(piece(2, Some("c"), None, "{}"));
        agg.push(piece(3, None, Some("h"), ""));
        let m = agg.finish();
        assert_eq!(m.invalid_tool_calls.len(), 3);
        assert!(m.invalid_tool_calls.iter().all(|c| c.id.is_some()));
        assert_eq!(m.invalid_tool_calls[0].args.as_deref(), Some("{\"x\": "));
        assert!(m.invalid_tool_calls[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("EOF")));
        assert_eq!(m.tool_calls.len(), 1, "empty arguments are an empty object");
        assert!(m.tool_calls[0].id.starts_with("call_"));
    }

    #[test]
    fn a_whole_reply_round_trips_through_one_chunk() {
        let reply = AiMessage::new("hi")
            .with_id("r1")
            .with_tool_call(ToolCall::new("c1", "f", json!({"a": [1, 2]})));
        let mut agg = ChunkAggregator::default();
        agg.push(reply.clone().into());
        assert_eq!(agg.finish(), reply);
    }

    #[test]
    fn chunks_serialise_like_langchain() {
        let v = serde_json::to_value(piece(0, Some("a"), Some("f"), "{")).unwrap();
        assert_eq!(v["type"], "AIMessageChunk");
        assert_eq!(v["tool_call_chunks"][0]["args"], "{");
    }
}
