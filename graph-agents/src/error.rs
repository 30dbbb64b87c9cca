//! [`AgentError`]: everything that can go wrong in messages, tools and model calls.

use graph_core::NodeError;
use std::time::Duration;

/// An error of this crate: merging messages, calling a tool, calling a model.
///
/// Inside a node it converts into `NodeError` with `?`; the model errors worth
/// retrying (rate limits, server errors, dropped connections) say so with
/// [`is_retryable`](AgentError::is_retryable), which
/// [`model_retry_policy`](crate::model_retry_policy) uses. A plain `?` keeps the
/// error as it is, which the default `RetryPolicy` does not retry (unless an
/// I/O error of a failed connection is underneath); convert with
/// [`into_node_error`](AgentError::into_node_error) to have the default policy
/// retry 429s and 5xx too.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `add_messages` was asked to remove a message that is not in the list.
    #[error("Attempting to delete a message with an ID that doesn't exist ('{id}')")]
    RemoveUnknownMessage {
        /// The id of the `RemoveMessage`.
        id: String,
    },

    /// The history has AI tool calls without a tool result, so no model will take it.
    #[error(
        "Found AIMessages with tool_calls that do not have a corresponding ToolMessage. Here are \
         the first few of those tool calls: {tool_call_ids:?}.\n\nEvery tool call (LLM requesting \
         to call a tool) in the message history MUST have a corresponding ToolMessage (result of \
         a tool invocation to return to the LLM) - this is required by most LLM providers.\nFor \
         troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/errors/INVALID_CHAT_HISTORY"
    )]
    InvalidChatHistory {
        /// The ids of (the first few) unanswered tool calls.
        tool_call_ids: Vec<String>,
    },

    /// The model asked for a tool that does not exist.
    #[error("Error: {name} is not a valid tool, try one of [{available}].")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The tools there are, comma-separated.
        available: String,
    },

    /// The model's arguments for a tool do not fit the tool's argument type.
    #[error("Error invoking tool '{tool}' with kwargs {args}: invalid arguments: {reason}\n Please fix your mistakes.")]
    InvalidToolArgs {
        /// The tool.
        tool: String,
        /// The arguments as the model sent them.
        args: String,
        /// What did not fit.
        reason: String,
    },

    /// The model sent a tool call whose arguments are not JSON.
    #[error("Error: the arguments of the call to '{tool}' are not valid JSON ({reason}): {args}\n Please fix your mistakes.")]
    MalformedToolCall {
        /// The tool named in the call, if any.
        tool: String,
        /// The raw arguments.
        args: String,
        /// The parse error.
        reason: String,
    },

    /// The tool ran and failed.
    #[error("Error: {message}\n Please fix your mistakes.")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// The tool's error message.
        message: String,
    },

    /// A human rejected the tool call.
    #[error("The tool call was rejected{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    ToolRejected {
        /// Why, if they said.
        reason: Option<String>,
    },

    /// A model reply asked for more tool calls than a
    /// [`ToolCallLimit`](crate::limit::ToolCallLimit) of the agent allows, and
    /// the limit says to fail ([`LimitExceeded::Error`](crate::limit::LimitExceeded)).
    /// The same text ends the history when the limit says to stop.
    #[error(
        "{} call limit reached: turn limit exceeded ({count}/{limit} calls).",
        tool.as_deref().map_or_else(|| "Tool".to_owned(), |t| format!("'{t}' tool"))
    )]
    ToolCallLimitExceeded {
        /// The tool the limit counts, or `None` for all tools.
        tool: Option<String>,
        /// The turn's calls with the reply's (blocked ones included).
        count: usize,
        /// The limit.
        limit: usize,
    },

    /// A tool that reads its task's context ([`BoxedTool::from_fn_in_context`](crate::BoxedTool::from_fn_in_context))
    /// was called outside of a graph. Fails the run whatever the
    /// [`ToolErrors`](crate::ToolErrors) policy.
    #[error(
        "the tool '{tool}' reads the graph's context (its store, the run's config): run it in a \
         ToolNode or an agent, or call it with BoxedTool::call_in"
    )]
    NeedsContext {
        /// The tool.
        tool: String,
    },

    /// A memory tool could not reach or use the store: the graph has none
    /// (compile the agent with one), the namespace misses a configurable
    /// value, or the store failed. Fails the run whatever the
    /// [`ToolErrors`](crate::ToolErrors) policy.
    #[error("the tool '{tool}' failed on the store")]
    Store {
        /// The tool.
        tool: String,
        /// The store's error (boxed: it is large, and rare).
        #[source]
        source: Box<graph_core::store::StoreError>,
    },

    /// A memory tool's namespace names a value of the run's `configurable`
    /// that the run was not given (langmem's `ConfigurationError`). Fails the
    /// run whatever the [`ToolErrors`](crate::ToolErrors) policy.
    #[error(
        "the tool '{tool}' needs `{key}` in the run's configurable (RunConfig::with_configurable); \
         it has {available:?}"
    )]
    MissingConfigurable {
        /// The tool.
        tool: String,
        /// The key its namespace names.
        key: String,
        /// The keys the run's `configurable` has.
        available: Vec<String>,
    },

    /// The server said: too many requests (HTTP 429). Retryable.
    #[error("the model server is rate limiting (HTTP 429){}: {body}", retry_after.map(|d| format!(", retry after {d:?}")).unwrap_or_default())]
    RateLimited {
        /// The server's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
        /// The response body.
        body: String,
    },

    /// The server failed (HTTP 5xx). Retryable.
    #[error("the model server failed (HTTP {status}): {body}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The response body.
        body: String,
    },

    /// The server refused the request (HTTP 4xx other than 429): fix the request.
    #[error("the model server rejected the request (HTTP {status}): {body}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The response body.
        body: String,
    },

    /// The connection failed or timed out. Retryable.
    ///
    /// The message says what failed and what to do; the error underneath (the
    /// HTTP client's) is the [`source`](std::error::Error::source), and is not
    /// repeated in the message, so that a reporter walking the chain prints
    /// each cause once.
    #[error("{context}")]
    Transport {
        /// What failed and what to do about it, e.g. "could not connect to the
        /// model server at `URL`: check the base URL and that the server is
        /// running".
        context: String,
        /// The error underneath. A bare message converts too:
        /// `"connection reset".into()`.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The server answered with something that is not a chat completion.
    #[error("the model server sent an invalid response: {0}")]
    InvalidResponse(String),

    /// The response stream ended before the model finished. Retryable.
    #[error("the model's response stream ended early: {0}")]
    StreamEnded(String),

    /// A structured reply ([`with_structured_output`](crate::ChatModel::with_structured_output))
    /// that does not fit its type.
    #[error(
        "the model's reply does not fit `{type_name}` ({reason}): say in the prompt what to \
         answer, or loosen the type; the reply was: {raw}"
    )]
    StructuredOutput {
        /// The type asked for.
        type_name: &'static str,
        /// The reply as the model sent it.
        raw: String,
        /// What did not fit (the JSON error).
        reason: String,
    },

    /// A scripted model ran out of responses, or another model-specific failure.
    #[error("{0}")]
    Model(String),
}

impl AgentError {
    /// Whether calling the model again may succeed: rate limits, server errors,
    /// transport failures and dropped streams.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            AgentError::RateLimited { .. }
                | AgentError::Server { .. }
                | AgentError::Transport { .. }
                | AgentError::StreamEnded(_)
        )
    }

    /// This error as a node's error, marked transient
    /// ([`NodeError::transient`]) when it [`is_retryable`](Self::is_retryable),
    /// so that the default `RetryPolicy` retries rate limits, server errors,
    /// transport failures and dropped streams, and nothing else.
    ///
    /// ```
    /// use graph_agents::AgentError;
    ///
    /// let busy = AgentError::Server { status: 503, body: String::new() }.into_node_error();
    /// assert!(busy.is_transient() && busy.is::<AgentError>());
    /// let bad = AgentError::Rejected { status: 400, body: String::new() }.into_node_error();
    /// assert!(!bad.is_transient());
    /// ```
    pub fn into_node_error(self) -> NodeError {
        if self.is_retryable() {
            NodeError::transient(self)
        } else {
            NodeError::from(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_transport_error_keeps_its_source_out_of_its_message() {
        let err = AgentError::Transport {
            context: "could not connect to the model server at http://x/v1: check the base URL"
                .to_owned(),
            source: "connection refused".into(),
        };
        assert_eq!(
            err.to_string(),
            "could not connect to the model server at http://x/v1: check the base URL"
        );
        assert_eq!(
            err.source().map(ToString::to_string).as_deref(),
            Some("connection refused")
        );
        assert!(err.is_retryable());
    }
}
