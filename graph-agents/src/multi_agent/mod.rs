//! Several agents in one graph: handoff tools that move control between agents
//! ([`create_handoff_tool`]), a supervisor routing among workers
//! ([`create_supervisor`], langgraph-supervisor's) and a swarm of agents handing
//! off to each other ([`create_swarm`], langgraph-swarm's). With the agents
//! as a `#[derive(Goto)]` enum ([`create_swarm_of`], [`create_supervisor_of`],
//! [`handoff_to`]), rustc checks every handoff target.
//!
//! Each agent is a [`ReactAgent`](crate::ReactAgent) with a
//! [`name`](crate::ReactAgent::name), run as a subgraph node of that name. A
//! handoff tool's call ends the calling agent's run with a command for the parent
//! graph (docs/semantics.md §8.5): its history and the tool's answer are merged
//! into the parent's messages, and the parent runs the named agent next.
//!
//! ```
//! use graph_agents::model::FakeChatModel;
//! use graph_agents::multi_agent::{create_handoff_tool, create_swarm, SwarmState};
//! use graph_agents::{create_react_agent, AiMessage, Message, ToolCall};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), graph_core::GraphError> {
//! let alice = create_react_agent(
//!     FakeChatModel::new(vec![AiMessage::new("")
//!         .with_tool_call(ToolCall::new("c1", "transfer_to_bob", serde_json::json!({})))]),
//!     create_handoff_tool("bob"),
//! )
//! .name("alice");
//! let bob = create_react_agent(FakeChatModel::new(vec![AiMessage::new("Bob here.")]), ())
//!     .name("bob")
//!     .with_state::<SwarmState>();
//! let swarm = create_swarm([alice.with_state::<SwarmState>(), bob], "alice").compile()?;
//!
//! let out = swarm
//!     .invoke(SwarmState::update().messages(vec![Message::human("bob please")]), &Default::default())
//!     .await?;
//! let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
//! assert_eq!(texts, ["bob please", "", "Successfully transferred to bob", "Bob here."]);
//! assert_eq!(out.active_agent.as_deref(), Some("bob"));
//! # Ok(())
//! # }
//! ```

pub(crate) mod handoff;
mod supervisor;
mod swarm;
mod team;

pub use handoff::{create_handoff_tool, Handoff};
pub use supervisor::{create_supervisor, OutputMode, Supervisor};
pub use swarm::{create_swarm, HasActiveAgent, Swarm, SwarmState, SwarmStateUpdate};
pub use team::{create_supervisor_of, create_swarm_of, handoff_to};
