//! Chat agents for [stategraph](https://docs.rs/stategraph): chat [`Message`]s merged
//! by [`add_messages`], typed [`Tool`]s, [`ChatModel`]s, a [`ToolNode`] and a ReAct
//! agent ([`create_react_agent`]).
//!
//! Users reach this crate as `stategraph::agents` (feature `agents`, on by
//! default), where the `#[tool]` attribute also lives. The HTTP client for
//! OpenAI-compatible servers is `model::openai::OpenAiChat` (feature `openai`).
//!
//! ```
//! use graph_agents::model::FakeChatModel;
//! use graph_agents::{create_react_agent, AiMessage, Message, MessagesState};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), graph_core::GraphError> {
//! // A scripted model: no network. Swap in `model::openai::OpenAiChat` for a real one.
//! let model = FakeChatModel::new(vec![AiMessage::new("Hello! How can I help?")]);
//! let agent = create_react_agent(model, ()).compile()?;
//!
//! let input = MessagesState::update().messages(vec![Message::human("hi")]);
//! let out = agent.invoke(input, &Default::default()).await?;
//! assert_eq!(out.messages.len(), 2);
//! assert_eq!(out.messages[1].text(), "Hello! How can I help?");
//! assert!(out.messages.iter().all(|m| m.id().is_some()));
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

// The macros name this package `::graph_agents` in all its crates, the library
// too (its unit tests use `#[tool]`): see graph-macros' crate_path.rs.
extern crate self as graph_agents;

pub mod agent;
pub mod error;
pub mod limit;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memory;
pub mod message;
pub mod model;
pub mod multi_agent;
pub mod state;
pub mod tool;
pub mod tool_node;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use agent::{create_react_agent, AgentNode, AgentVersion, ReactAgent, NEED_MORE_STEPS};
pub use error::AgentError;
pub use message::{
    new_id, AiMessage, HumanMessage, InvalidToolCall, Message, RemoveMessage, SystemMessage,
    ToolCall, ToolMessage, ToolStatus, Usage, REMOVE_ALL_MESSAGES,
};
pub use model::{
    call_model, is_retryable, model_retry_policy, AiMessageChunk, ChatModel, ChatRequest,
    FakeChatModel, StreamedMessage,
};
#[allow(deprecated)]
pub use state::try_add_messages;
pub use state::{
    add_messages, AgentStateWithStructuredResponse, AgentStateWithStructuredResponseUpdate,
    HasMessages, HasStructuredResponse, MessagesState, MessagesStateUpdate,
};
pub use tool::{BoxedTool, IntoTool, IntoTools, Tool, ToolErrors, ToolMarker, ToolSpec, Toolbox};
pub use tool_node::{
    tools_condition, validate_chat_history, SharedToolCall, ToolApproval, ToolApprovalRequest,
    ToolCallNode, ToolCallRequest, ToolNode, ToolsRoute,
};
