//! Chat agents for [stategraph](https://docs.rs/stategraph): chat [`Message`]s merged
//! by [`add_messages`], tools, chat models, a tool node and a ReAct agent.
//!
//! Users reach this crate as `stategraph::agents` (feature `agents`, on by default).
//!
//! ```
//! use graph_agents::{add_messages, Message, MessagesState};
//!
//! let history = add_messages(Vec::new(), vec![Message::human("hi")]);
//! let history = add_messages(history, vec![Message::ai("hello").with_id("a1")]);
//! assert_eq!(history.len(), 2);
//! assert!(history.iter().all(|m| m.id().is_some()));
//!
//! let state = MessagesState { messages: history };
//! assert_eq!(state.messages[1].text(), "hello");
//! ```

// The derive macros expand to `::stategraph::..` paths (the facade); inside this
// crate, graph-core is that facade.
extern crate graph_core as stategraph;

pub mod error;
pub mod message;
pub mod state;

pub use error::AgentError;
pub use message::{
    new_id, AiMessage, HumanMessage, InvalidToolCall, Message, RemoveMessage, SystemMessage,
    ToolCall, ToolMessage, ToolStatus, Usage, REMOVE_ALL_MESSAGES,
};
pub use state::{add_messages, try_add_messages, HasMessages, MessagesState, MessagesStateUpdate};
