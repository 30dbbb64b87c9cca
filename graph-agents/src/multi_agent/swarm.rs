//! [`create_swarm`]: agents that hand the conversation to each other, the one
//! that has it remembered in the state (langgraph-swarm's).

use super::handoff::destinations;
use crate::agent::ReactAgent;
use crate::message::Message;
use crate::state::{add_messages, HasMessages};
use graph_core::{
    CompileOptions, CompiledGraph, GraphError, PathMap, State, StateGraph, Subgraph, START,
};
use serde::{Deserialize, Serialize};

/// A state that remembers which agent of a swarm has the conversation.
///
/// [`SwarmState`] implements it; implement it for your own state (a field
/// `Option<String>` without a reducer) to add fields.
pub trait HasActiveAgent: HasMessages {
    /// The agent that has the conversation (`None` before the first handoff).
    fn active_agent(&self) -> Option<&str>;

    /// `update`, also making `agent` the active agent.
    fn set_active_agent(update: Self::Update, agent: &str) -> Self::Update;
}

/// The messages and the active agent (langgraph-swarm's `SwarmState`).
#[derive(graph_macros::State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SwarmState {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Vec<Message>,
    /// The agent that has the conversation; a new turn starts with it.
    pub active_agent: Option<String>,
}

impl HasMessages for SwarmState {
    fn messages(&self) -> &[Message] {
        &self.messages
    }

    fn messages_update(messages: Vec<Message>) -> SwarmStateUpdate {
        SwarmState::update().messages(messages)
    }
}

impl HasActiveAgent for SwarmState {
    fn active_agent(&self) -> Option<&str> {
        self.active_agent.as_deref()
    }

    fn set_active_agent(update: SwarmStateUpdate, agent: &str) -> SwarmStateUpdate {
        update.active_agent(Some(agent.to_owned()))
    }
}

/// What a handoff writes in a swarm: the messages and the new active agent.
fn swarm_update<S: HasActiveAgent>(messages: Vec<Message>, agent: &str) -> S::Update {
    S::set_active_agent(S::messages_update(messages), agent)
}

/// Builds a swarm: `agents` that hand the conversation to each other with
/// handoff tools ([`create_handoff_tool`](super::create_handoff_tool)). A
/// handoff records the agent in the state ([`HasActiveAgent`]), and every turn
/// starts with the active agent, `default_active_agent` until the first handoff
/// (langgraph-swarm's `create_swarm`). With a checkpointer, the next turn of a
/// thread goes to whoever had the conversation last.
///
/// `compile()` fails on an agent without a [`name`](ReactAgent::name)
/// (`EmptyNodeName`), two agents of one name (`DuplicateNode`), a handoff to an
/// agent the swarm does not have (`UnknownDestination`), and a default agent it
/// does not have (`UnknownPathMapTarget`): every problem at once.
/// See the [module](super) for an example.
pub fn create_swarm<S: HasActiveAgent>(
    agents: impl IntoIterator<Item = ReactAgent<S>>,
    default_active_agent: impl Into<String>,
) -> Swarm<S> {
    Swarm {
        agents: agents.into_iter().collect(),
        default: default_active_agent.into(),
        members: Vec::new(),
    }
}

/// The builder [`create_swarm`] returns.
pub struct Swarm<S: State> {
    agents: Vec<ReactAgent<S>>,
    default: String,
    /// The agents a typed team ([`create_swarm_of`](super::create_swarm_of)) must have.
    members: Vec<String>,
}

impl<S: HasActiveAgent> Swarm<S> {
    /// Requires an agent for each of `members` (`compile()` fails otherwise).
    pub(crate) fn members(mut self, members: Vec<String>) -> Self {
        self.members = members;
        self
    }

    /// The uncompiled graph: START routes to the active agent; a handoff routes
    /// to its agent. Fails when an agent fails to compile.
    pub fn graph(self) -> Result<StateGraph<S>, GraphError> {
        let names: Vec<String> = self
            .agents
            .iter()
            .map(|a| a.agent_name().unwrap_or_default().to_owned())
            .collect();
        // The default agent and the team's members are in the map too, so that
        // `compile()` checks they exist.
        let path_map: PathMap = names
            .iter()
            .chain([&self.default])
            .chain(&self.members)
            .map(|n| (n.clone(), n.clone()))
            .collect();
        let default = self.default;
        let route = move |s: &S| s.active_agent().unwrap_or(&default).to_owned();
        let mut graph = StateGraph::<S>::new().add_conditional_edges_with(START, route, path_map);
        for (mut agent, name) in self.agents.into_iter().zip(names) {
            agent.handoff = swarm_update::<S>;
            let handoffs = destinations(agent.toolbox());
            graph = graph.add_node(Subgraph::new(name.clone(), agent.compile()?));
            if !handoffs.is_empty() {
                graph = graph.destinations(name.as_str(), handoffs);
            }
        }
        Ok(graph)
    }

    /// Compiles the swarm without a checkpointer (every turn starts with the
    /// default agent unless the input names another).
    pub fn compile(self) -> Result<CompiledGraph<S>, GraphError> {
        self.graph()?.compile()
    }

    /// Compiles the swarm with a checkpointer (a thread remembers its active
    /// agent), or with [`CompileOptions`]: a checkpointer, a store.
    pub fn compile_with(
        self,
        options: impl Into<CompileOptions>,
    ) -> Result<CompiledGraph<S>, GraphError> {
        self.graph()?.compile_with(options)
    }
}
