//! Structured output: a reply that is a typed value ([`StructuredModel`]), asked
//! for with the type's JSON schema ([`ResponseFormat`]) and parsed with
//! [`parse_structured`].
//!
//! ```
//! use graph_agents::model::{ChatModel, FakeChatModel};
//! use graph_agents::{AgentError, AiMessage, Message};
//!
//! #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
//! struct Weather { city: String, temperature: i32 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), AgentError> {
//! let model = FakeChatModel::new(vec![
//!     AiMessage::new(r#"{"city": "Paris", "temperature": 21}"#),
//!     AiMessage::new("It is sunny."),
//! ])
//! .with_structured_output::<Weather>();
//! assert_eq!(model.format().name, "Weather");
//!
//! let question = [Message::human("Weather in Paris?")];
//! let weather = model.invoke(&question).await?;
//! assert_eq!(weather, Weather { city: "Paris".into(), temperature: 21 });
//!
//! // A reply that does not fit: a typed error with the raw text.
//! let err = model.invoke(&question).await.unwrap_err();
//! assert!(matches!(&err, AgentError::StructuredOutput { raw, .. } if raw == "It is sunny."));
//! # Ok(())
//! # }
//! ```

use super::{ChatModel, ChatRequest};
use crate::error::AgentError;
use crate::message::{AiMessage, Message};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;
use std::sync::Arc;

/// The JSON schema a reply must fit, with a name (OpenAI's
/// `response_format: {"type": "json_schema", "json_schema": {..}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFormat {
    /// The schema's name: the type's (letters, digits, `_` and `-` only).
    pub name: String,
    /// The JSON schema of the value.
    pub schema: Value,
    /// Whether the server must follow the schema exactly (OpenAI's `strict`;
    /// off by default, as LangChain's: strict mode accepts fewer schemas).
    pub strict: bool,
}

impl ResponseFormat {
    /// The format of a `T`.
    pub fn of<T: JsonSchema>() -> Self {
        let name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
        });
        let mut schema = settings
            .into_generator()
            .into_root_schema_for::<T>()
            .to_value();
        if let Value::Object(map) = &mut schema {
            map.remove("$schema");
        }
        ResponseFormat {
            name,
            schema,
            strict: false,
        }
    }

    /// Sets OpenAI's `strict` (the schema must then forbid other properties and
    /// require every property).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }
}

/// A chat model that answers with a `T`; made by
/// [`ChatModel::with_structured_output`].
pub struct StructuredModel<T> {
    model: Arc<dyn ChatModel>,
    format: ResponseFormat,
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for StructuredModel<T> {
    fn clone(&self) -> Self {
        StructuredModel {
            model: Arc::clone(&self.model),
            format: self.format.clone(),
            _value: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for StructuredModel<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredModel")
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned + JsonSchema> StructuredModel<T> {
    pub(crate) fn new(model: Arc<dyn ChatModel>) -> Self {
        StructuredModel {
            model,
            format: ResponseFormat::of::<T>(),
            _value: PhantomData,
        }
    }

    /// Sets OpenAI's `strict` on the format sent.
    pub fn strict(mut self, strict: bool) -> Self {
        self.format.strict = strict;
        self
    }

    /// The format sent with every request.
    pub fn format(&self) -> &ResponseFormat {
        &self.format
    }

    /// Asks the model about `messages`; returns its reply as a `T`.
    pub async fn invoke(&self, messages: &[Message]) -> Result<T, AgentError> {
        self.generate(ChatRequest::new(messages)).await
    }

    /// Sends `request` with the format; returns the reply as a `T`.
    pub async fn generate(&self, request: ChatRequest<'_>) -> Result<T, AgentError> {
        let reply = self
            .model
            .generate(request.response_format(&self.format))
            .await?;
        parse_structured(&reply)
    }
}

/// A reply as a `T`: its text as JSON (a Markdown code fence around it is
/// allowed), or, when it has no text and one tool call, that call's arguments
/// (models that answer through a forced tool).
///
/// A reply that does not fit is [`AgentError::StructuredOutput`], with the raw
/// reply and what did not fit.
pub fn parse_structured<T: DeserializeOwned>(reply: &AiMessage) -> Result<T, AgentError> {
    let fail = |raw: String, reason: String| AgentError::StructuredOutput {
        type_name: std::any::type_name::<T>(),
        raw,
        reason,
    };
    let text = reply.content.trim();
    if text.is_empty()
        && let [call] = reply.tool_calls.as_slice()
    {
        return serde_json::from_value(call.args.clone())
            .map_err(|e| fail(call.args.to_string(), e.to_string()));
    }
    serde_json::from_str(unfenced(text)).map_err(|e| fail(reply.content.clone(), e.to_string()))
}

/// `text` without a Markdown code fence around it (```` ```json ... ``` ````).
fn unfenced(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = inner.strip_suffix("```") else {
        return text;
    };
    // The info string ("json") runs to the end of the first line.
    match inner.find('\n') {
        Some(i) => inner[i + 1..].trim(),
        None => inner.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    #[derive(Debug, PartialEq, serde::Deserialize, JsonSchema)]
    struct Point {
        /// Horizontal.
        x: i32,
        y: i32,
    }

    #[test]
    fn the_format_names_the_type_and_keeps_its_schema() {
        let f = ResponseFormat::of::<Point>();
        assert_eq!(f.name, "Point");
        assert_eq!(f.schema["required"], json!(["x", "y"]));
        assert_eq!(f.schema["properties"]["x"]["description"], "Horizontal.");
        assert!(f.schema.get("$schema").is_none());
        assert_eq!(ResponseFormat::of::<Vec<Point>>().name, "Array_of_Point");
    }

    #[test]
    fn text_fenced_text_and_a_lone_tool_call_parse() {
        let p: Point = parse_structured(&AiMessage::new(" {\"x\": 1, \"y\": 2} ")).unwrap();
        assert_eq!(p, Point { x: 1, y: 2 });
        let fenced = AiMessage::new("```json\n{\"x\": 3, \"y\": 4}\n```");
        assert_eq!(
            parse_structured::<Point>(&fenced).unwrap(),
            Point { x: 3, y: 4 }
        );
        let called =
            AiMessage::new("").with_tool_call(ToolCall::new("c", "Point", json!({"x": 5, "y": 6})));
        assert_eq!(
            parse_structured::<Point>(&called).unwrap(),
            Point { x: 5, y: 6 }
        );
    }

    #[test]
    fn a_reply_that_does_not_fit_names_the_type_and_keeps_the_raw_text() {
        let err = parse_structured::<Point>(&AiMessage::new("{\"x\": \"one\"}")).unwrap_err();
        let AgentError::StructuredOutput {
            type_name,
            raw,
            reason,
        } = &err
        else {
            panic!("{err:?}")
        };
        assert!(type_name.ends_with("Point"));
        assert_eq!(raw, "{\"x\": \"one\"}");
        assert!(reason.contains("invalid type"), "{reason}");
        assert!(!err.is_retryable());
        let msg = err.to_string();
        assert!(
            msg.contains("Point") && msg.contains("{\"x\": \"one\"}"),
            "{msg}"
        );
    }
}
