//! Chat messages: [`Message`] and its kinds, with LangChain's JSON shape.
//!
//! A message serialises as LangChain's `message.model_dump()` does (a `type` of
//! `system`, `human`, `ai`, `tool` or `remove`, the `content` string, the `id`,
//! and the kind's own fields), so LangGraph's Python savers can read a thread
//! written here. Deserialisation also takes the OpenAI form (`role` instead of
//! `type`, `user` / `assistant` roles, `function` tool calls with JSON-string
//! arguments) and content given as a list of text blocks.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::sync::Arc;

/// A fresh random id in UUID v4 form (what LangChain assigns to messages).
pub fn new_id() -> String {
    let hi = fastrand::u64(..);
    let lo = fastrand::u64(..);
    // Version 4, variant 10xx.
    let hi = (hi & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let lo = (lo & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    // Written without `format!`: one id per message without an id, so it showed
    // in the agent loop's profile.
    graph_core::__private::format_uuid(&(u128::from(hi) << 64 | u128::from(lo)).to_be_bytes())
}

/// The id of the [`RemoveMessage`] that clears the whole history.
pub const REMOVE_ALL_MESSAGES: &str = "__remove_all__";

/// One chat message.
///
/// Each kind is behind an `Arc`: a message is written once and then shared, so
/// copying a history (a state snapshot, a checkpoint, a model request) copies no
/// text. Match on the variants as usual (`Message::Ai(ai) => ai.tool_calls`); build
/// messages with the constructors or `From` (`Message::from(AiMessage::new(".."))`);
/// change one in place with `Arc::make_mut`.
///
/// ```
/// use graph_agents::{Message, ToolCall};
///
/// let question = Message::human("What is 2 + 2?");
/// let call = Message::ai_with_tool_calls("", vec![ToolCall::new("call_1", "add", serde_json::json!({"a": 2, "b": 2}))]);
/// let result = Message::tool("4", "call_1");
///
/// let json = serde_json::to_value(&call).unwrap();
/// assert_eq!(json["type"], "ai");
/// assert_eq!(json["tool_calls"][0]["name"], "add");
/// assert_eq!(result.text(), "4");
/// assert!(question.id().is_none(), "ids are assigned by add_messages");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Message {
    /// Instructions for the model.
    System(Arc<SystemMessage>),
    /// What the user said.
    Human(Arc<HumanMessage>),
    /// What the model said, possibly with tool calls.
    Ai(Arc<AiMessage>),
    /// The result of one tool call.
    Tool(Arc<ToolMessage>),
    /// A marker that deletes the message with its id when merged by
    /// [`add_messages`](crate::add_messages).
    Remove(Arc<RemoveMessage>),
}

/// A system message: instructions for the model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemMessage {
    /// The text.
    pub content: String,
    /// The message id (assigned by `add_messages` when missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// An optional name of the author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A human (user) message.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HumanMessage {
    /// The text.
    pub content: String,
    /// The message id (assigned by `add_messages` when missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// An optional name of the author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A model's reply: text and the tools it wants called.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AiMessage {
    /// The text (empty when the model only calls tools).
    pub content: String,
    /// The message id (models usually provide one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// An optional name of the author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tool calls, with parsed arguments.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls whose arguments were not valid JSON (kept so that each still gets
    /// a tool result: [`ToolNode`](crate::ToolNode) answers them with an error).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_tool_calls: Vec<InvalidToolCall>,
    /// Token counts, when the model reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<Usage>,
    /// Provider details (model name, finish reason...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub response_metadata: Map<String, Value>,
}

/// How a tool call ended, as reported to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// The tool ran and returned its output.
    #[default]
    Success,
    /// The call failed; the content says why.
    Error,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolMessage {
    /// The tool's output (or the error, with [`ToolStatus::Error`]).
    pub content: String,
    /// The message id (assigned by `add_messages` when missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The id of the tool call this answers.
    pub tool_call_id: String,
    /// Whether the call succeeded.
    #[serde(default)]
    pub status: ToolStatus,
}

/// Deletes the message with `id` when merged by [`add_messages`](crate::add_messages);
/// the id [`REMOVE_ALL_MESSAGES`] deletes every message before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveMessage {
    /// The id of the message to delete.
    pub id: String,
}

/// A tool the model wants called.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call's id; the tool result answers it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object).
    pub args: Value,
    #[serde(rename = "type")]
    kind: ToolCallType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum ToolCallType {
    #[serde(rename = "tool_call")]
    ToolCall,
}

/// A tool call the model produced with arguments that are not valid JSON.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InvalidToolCall {
    /// The call's id.
    pub id: Option<String>,
    /// The tool's name, if it came through.
    pub name: Option<String>,
    /// The raw arguments text.
    pub args: Option<String>,
    /// Why they could not be used.
    pub error: Option<String>,
}

/// Token counts of one model call (LangChain's `usage_metadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

impl ToolCall {
    /// A tool call with its id, tool name and arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            args,
            kind: ToolCallType::ToolCall,
        }
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Function {
            name: String,
            #[serde(default)]
            arguments: Option<String>,
        }
        #[derive(Deserialize)]
        struct Wire {
            #[serde(default)]
            id: Option<String>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            args: Option<Value>,
            #[serde(default)]
            function: Option<Function>,
        }
        let wire = Wire::deserialize(deserializer)?;
        let id = wire.id.unwrap_or_else(new_id);
        match (wire.name, wire.function) {
            (Some(name), _) => Ok(ToolCall::new(
                id,
                name,
                wire.args.unwrap_or_else(|| Value::Object(Map::new())),
            )),
            // OpenAI's form: `{"id", "type": "function", "function": {"name", "arguments"}}`.
            (None, Some(function)) => {
                let args = match function.arguments.as_deref().map(str::trim) {
                    None | Some("") => Value::Object(Map::new()),
                    Some(text) => serde_json::from_str(text).map_err(D::Error::custom)?,
                };
                Ok(ToolCall::new(id, function.name, args))
            }
            (None, None) => Err(D::Error::missing_field("name")),
        }
    }
}

impl AiMessage {
    /// A reply with text only.
    pub fn new(content: impl Into<String>) -> Self {
        AiMessage {
            content: content.into(),
            ..Default::default()
        }
    }

    /// Sets the id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Adds a tool call.
    pub fn with_tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Whether the model asked for tools (valid or not): a tool step must follow.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty() || !self.invalid_tool_calls.is_empty()
    }
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        SystemMessage {
            content: content.into(),
            ..Default::default()
        }
        .into()
    }

    /// A human message.
    pub fn human(content: impl Into<String>) -> Self {
        HumanMessage {
            content: content.into(),
            ..Default::default()
        }
        .into()
    }

    /// A model reply with text only.
    pub fn ai(content: impl Into<String>) -> Self {
        AiMessage::new(content).into()
    }

    /// A model reply with tool calls.
    pub fn ai_with_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        AiMessage {
            content: content.into(),
            tool_calls,
            ..Default::default()
        }
        .into()
    }

    /// A successful tool result answering the call `tool_call_id`.
    pub fn tool(content: impl Into<String>, tool_call_id: impl Into<String>) -> Self {
        ToolMessage {
            content: content.into(),
            tool_call_id: tool_call_id.into(),
            ..Default::default()
        }
        .into()
    }

    /// A marker deleting the message `id` (see [`add_messages`](crate::add_messages)).
    pub fn remove(id: impl Into<String>) -> Self {
        RemoveMessage { id: id.into() }.into()
    }

    /// A marker deleting every earlier message.
    pub fn remove_all() -> Self {
        Message::remove(REMOVE_ALL_MESSAGES)
    }

    /// The same message with `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.set_id(id.into());
        self
    }

    /// The message's id, if it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Message::System(m) => m.id.as_deref(),
            Message::Human(m) => m.id.as_deref(),
            Message::Ai(m) => m.id.as_deref(),
            Message::Tool(m) => m.id.as_deref(),
            Message::Remove(m) => Some(&m.id),
        }
    }

    /// Sets the message's id.
    pub fn set_id(&mut self, id: String) {
        match self {
            Message::System(m) => Arc::make_mut(m).id = Some(id),
            Message::Human(m) => Arc::make_mut(m).id = Some(id),
            Message::Ai(m) => Arc::make_mut(m).id = Some(id),
            Message::Tool(m) => Arc::make_mut(m).id = Some(id),
            Message::Remove(m) => Arc::make_mut(m).id = id,
        }
    }

    /// The text content (empty for a remove marker).
    pub fn text(&self) -> &str {
        match self {
            Message::System(m) => &m.content,
            Message::Human(m) => &m.content,
            Message::Ai(m) => &m.content,
            Message::Tool(m) => &m.content,
            Message::Remove(_) => "",
        }
    }

    /// LangChain's `type` of this message: `system`, `human`, `ai`, `tool` or `remove`.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::System(_) => "system",
            Message::Human(_) => "human",
            Message::Ai(_) => "ai",
            Message::Tool(_) => "tool",
            Message::Remove(_) => "remove",
        }
    }

    /// The model reply, if this is one.
    pub fn as_ai(&self) -> Option<&AiMessage> {
        match self {
            Message::Ai(m) => Some(m),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool(&self) -> Option<&ToolMessage> {
        match self {
            Message::Tool(m) => Some(m),
            _ => None,
        }
    }
}

/// `From<Kind>` and `From<Arc<Kind>>` for each message kind.
macro_rules! message_from {
    ($($kind:ident => $variant:ident),+ $(,)?) => {$(
        impl From<$kind> for Message {
            fn from(m: $kind) -> Self {
                Message::$variant(Arc::new(m))
            }
        }

        impl From<Arc<$kind>> for Message {
            fn from(m: Arc<$kind>) -> Self {
                Message::$variant(m)
            }
        }
    )+};
}

message_from! {
    AiMessage => Ai,
    HumanMessage => Human,
    SystemMessage => System,
    ToolMessage => Tool,
    RemoveMessage => Remove,
}

/// A plain string is a human message (as in LangChain's `convert_to_messages`).
impl From<&str> for Message {
    fn from(text: &str) -> Self {
        Message::human(text)
    }
}

/// A plain string is a human message (as in LangChain's `convert_to_messages`).
impl From<String> for Message {
    fn from(text: String) -> Self {
        Message::human(text)
    }
}

/// Serialised with LangChain's field names and a `type` tag.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Tagged<'a> {
    System(&'a SystemMessage),
    Human(&'a HumanMessage),
    Ai(&'a AiMessage),
    Tool(&'a ToolMessage),
    Remove(&'a RemoveMessage),
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::System(m) => Tagged::System(m),
            Message::Human(m) => Tagged::Human(m),
            Message::Ai(m) => Tagged::Ai(m),
            Message::Tool(m) => Tagged::Tool(m),
            Message::Remove(m) => Tagged::Remove(m),
        }
        .serialize(serializer)
    }
}

/// Content as LangChain allows it: a string, or a list of strings and blocks.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireContent {
    Text(String),
    Blocks(Vec<Value>),
    Null(()),
}

impl WireContent {
    /// The text of the content; text blocks are joined, other blocks dropped.
    fn into_text(self) -> String {
        match self {
            WireContent::Text(s) => s,
            WireContent::Null(()) => String::new(),
            WireContent::Blocks(blocks) => {
                let mut out = String::new();
                for block in blocks {
                    match block {
                        Value::String(s) => out.push_str(&s),
                        Value::Object(map) => {
                            if let Some(Value::String(s)) = map.get("text") {
                                out.push_str(s);
                            }
                        }
                        _ => {}
                    }
                }
                out
            }
        }
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Wire {
            #[serde(rename = "type", default)]
            kind: Option<String>,
            #[serde(default)]
            role: Option<String>,
            #[serde(default)]
            content: Option<WireContent>,
            #[serde(default)]
            id: Option<String>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            tool_calls: Option<Vec<ToolCall>>,
            #[serde(default)]
            invalid_tool_calls: Vec<InvalidToolCall>,
            #[serde(default)]
            usage_metadata: Option<Usage>,
            #[serde(default)]
            response_metadata: Option<Map<String, Value>>,
            #[serde(default)]
            tool_call_id: Option<String>,
            #[serde(default)]
            status: Option<ToolStatus>,
        }
        let w = Wire::deserialize(deserializer)?;
        let Some(kind) = w.role.or(w.kind) else {
            return Err(D::Error::missing_field("type"));
        };
        let content = w.content.map(WireContent::into_text).unwrap_or_default();
        let (id, name) = (w.id, w.name);
        Ok(match kind.as_str() {
            "system" | "developer" => SystemMessage { content, id, name }.into(),
            "human" | "user" => HumanMessage { content, id, name }.into(),
            "ai" | "assistant" | "AIMessageChunk" => AiMessage {
                content,
                id,
                name,
                tool_calls: w.tool_calls.unwrap_or_default(),
                invalid_tool_calls: w.invalid_tool_calls,
                usage_metadata: w.usage_metadata,
                response_metadata: w.response_metadata.unwrap_or_default(),
            }
            .into(),
            "tool" => ToolMessage {
                content,
                id,
                name,
                tool_call_id: w
                    .tool_call_id
                    .ok_or_else(|| D::Error::missing_field("tool_call_id"))?,
                status: w.status.unwrap_or_default(),
            }
            .into(),
            "remove" => RemoveMessage {
                id: id.ok_or_else(|| D::Error::missing_field("id"))?,
            }
            .into(),
            other => {
                return Err(D::Error::unknown_variant(
                    other,
                    &[
                        "system",
                        "human",
                        "user",
                        "ai",
                        "assistant",
                        "tool",
                        "remove",
                    ],
                ))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_look_like_uuid_v4_and_differ() {
        let a = new_id();
        let b = new_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        // 8-4-4-4-12 lowercase hex.
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
        assert!(a
            .chars()
            .all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c)));
    }

    #[test]
    fn serialises_like_langchain_model_dump() {
        let m = Message::from(
            AiMessage::new("hi")
                .with_id("m1")
                .with_tool_call(ToolCall::new("c1", "search", json!({"q": "x"}))),
        );
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({
                "type": "ai", "content": "hi", "id": "m1",
                "tool_calls": [{"id": "c1", "name": "search", "args": {"q": "x"}, "type": "tool_call"}],
            })
        );
        let t = Message::tool("out", "c1").with_id("t1");
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            json!({"type": "tool", "content": "out", "id": "t1", "tool_call_id": "c1", "status": "success"})
        );
    }

    #[test]
    fn round_trips_every_kind() {
        let all = vec![
            Message::system("be brief").with_id("s"),
            Message::human("hi").with_id("h"),
            Message::from(AiMessage {
                content: "x".into(),
                id: Some("a".into()),
                invalid_tool_calls: vec![InvalidToolCall {
                    id: Some("c9".into()),
                    name: Some("f".into()),
                    args: Some("{oops".into()),
                    error: Some("bad".into()),
                }],
                usage_metadata: Some(Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    total_tokens: 3,
                }),
                ..Default::default()
            }),
            Message::from(ToolMessage {
                content: "boom".into(),
                id: Some("t".into()),
                name: Some("f".into()),
                tool_call_id: "c9".into(),
                status: ToolStatus::Error,
            }),
            Message::remove("h"),
        ];
        let text = serde_json::to_string(&all).unwrap();
        let back: Vec<Message> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, all);
    }

    #[test]
    fn reads_openai_roles_and_content_blocks() {
        let m: Message = serde_json::from_value(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "add", "arguments": "{\"a\": 1}"}}],
        }))
        .unwrap();
        let ai = m.as_ai().unwrap();
        assert_eq!(ai.tool_calls[0].name, "add");
        assert_eq!(ai.tool_calls[0].args, json!({"a": 1}));
        let h: Message = serde_json::from_value(json!({
            "role": "user",
            "content": [{"type": "text", "text": "a"}, "b", {"type": "image_url"}],
        }))
        .unwrap();
        assert_eq!(h, Message::human("ab"));
    }

    #[test]
    fn rejects_unknown_kinds_and_missing_fields() {
        assert!(
            serde_json::from_value::<Message>(json!({"type": "robot", "content": ""})).is_err()
        );
        assert!(serde_json::from_value::<Message>(json!({"content": "no type"})).is_err());
        assert!(serde_json::from_value::<Message>(json!({"type": "tool", "content": ""})).is_err());
    }
}
