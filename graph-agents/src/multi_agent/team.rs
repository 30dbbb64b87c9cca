//! A team of agents typed at compile time: a `#[derive(Goto)]` enum with one
//! variant per agent. Handoffs name a variant ([`handoff_to`]), so rustc
//! rejects a handoff to an agent the team does not have, and
//! [`create_swarm_of`] / [`create_supervisor_of`] take the agents as
//! (variant, agent) pairs, name each agent after its variant (the variant's
//! node name: `MathExpert` is `math_expert`, or its `#[goto(name = "..")]`),
//! and make `compile()` fail when a variant has no agent.
//!
//! ```
//! use graph_agents::model::FakeChatModel;
//! use graph_agents::multi_agent::{create_swarm_of, handoff_to, SwarmState};
//! use graph_agents::{create_react_agent, AiMessage, Message, ToolCall};
//!
//! #[derive(graph_macros::Goto, Clone, Copy)]
//! enum Team {
//!     Alice,
//!     Bob,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), graph_core::GraphError> {
//! let call = ToolCall::new("c1", "transfer_to_bob", serde_json::json!({}));
//! let alice = create_react_agent(FakeChatModel::new(vec![AiMessage::new("").with_tool_call(call)]), handoff_to(Team::Bob))
//!     .with_state::<SwarmState>();
//! let bob = create_react_agent(FakeChatModel::new(vec![AiMessage::new("Bob here.")]), ())
//!     .with_state::<SwarmState>();
//! let swarm = create_swarm_of([(Team::Alice, alice), (Team::Bob, bob)], Team::Alice).compile()?;
//!
//! let input = SwarmState::update().messages(vec![Message::human("bob please")]);
//! let out = swarm.invoke(input, &Default::default()).await?;
//! assert_eq!(out.active_agent.as_deref(), Some("bob"));
//!
//! // A team member without an agent is a compile() error.
//! let alone = create_react_agent(FakeChatModel::new(vec![]), handoff_to(Team::Bob))
//!     .with_state::<SwarmState>();
//! assert!(create_swarm_of([(Team::Alice, alone)], Team::Alice).compile().is_err());
//! # Ok(())
//! # }
//! ```

use super::handoff::{create_handoff_tool, Handoff};
use super::supervisor::{create_supervisor, Supervisor};
use super::swarm::{create_swarm, HasActiveAgent, Swarm};
use crate::agent::ReactAgent;
use crate::model::ChatModel;
use crate::state::HasMessages;
use graph_core::{Destination, GotoTarget, Targets, END};

/// The agent name of a team member: its node name (`__end__` for a
/// `#[goto(end)]` variant, which no agent can have: `compile()` rejects it).
fn member_name<A: GotoTarget>(member: &A) -> String {
    match member.destination() {
        Destination::Node(name) => name.to_owned(),
        Destination::End => END.to_owned(),
    }
}

/// Every member of the team `A` (none when `A` is not a `#[derive(Goto)]` enum).
fn members<A: GotoTarget>() -> Vec<String> {
    match A::targets() {
        Targets::Declared(all) => all
            .iter()
            .map(|d| match d {
                Destination::Node(name) => (*name).to_owned(),
                Destination::End => END.to_owned(),
            })
            .collect(),
        Targets::None | Targets::Dynamic => Vec::new(),
    }
}

/// A handoff tool to the team member `agent` (a variant of a `#[derive(Goto)]`
/// enum): [`create_handoff_tool`] with the variant's node name, so a handoff to
/// a member the team does not have does not compile.
pub fn handoff_to<A: GotoTarget>(agent: A) -> Handoff {
    create_handoff_tool(member_name(&agent))
}

/// Names each agent after its team member.
fn named<A: GotoTarget, S: HasMessages>(
    agents: impl IntoIterator<Item = (A, ReactAgent<S>)>,
) -> Vec<ReactAgent<S>> {
    agents
        .into_iter()
        .map(|(member, agent)| agent.name(member_name(&member)))
        .collect()
}

/// [`create_swarm`] for a team typed at compile time: each agent is named
/// after its member, and the default agent is a member. `compile()` also fails
/// when a member of the team has no agent (`UnknownPathMapTarget`), besides
/// the problems `create_swarm` reports.
pub fn create_swarm_of<A: GotoTarget, S: HasActiveAgent>(
    agents: impl IntoIterator<Item = (A, ReactAgent<S>)>,
    default_active_agent: A,
) -> Swarm<S> {
    create_swarm(named(agents), member_name(&default_active_agent)).members(members::<A>())
}

/// [`create_supervisor`] for a team typed at compile time: each worker is named
/// after its member, and the supervisor has a handoff tool for every member, so
/// `compile()` fails when a member has no agent (`UnknownDestination`).
pub fn create_supervisor_of<A: GotoTarget, M: ChatModel, S: HasMessages>(
    model: M,
    agents: impl IntoIterator<Item = (A, ReactAgent<S>)>,
) -> Supervisor<S> {
    create_supervisor(model, named(agents)).members(members::<A>())
}
