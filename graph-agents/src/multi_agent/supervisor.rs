//! [`create_supervisor`]: a supervisor agent that hands the conversation to
//! worker agents and gets it back (langgraph-supervisor's).

use super::handoff::{create_handoff_tool, destinations, handoff_back_messages};
use crate::agent::ReactAgent;
use crate::message::Message;
use crate::model::ChatModel;
use crate::state::HasMessages;
use crate::tool::{BoxedTool, IntoTool, IntoTools, Toolbox};
use graph_core::{
    CompileOptions, CompiledGraph, GraphError, NodeOutput, State, StateGraph, Subgraph, END, START,
};
use std::sync::Arc;

/// What a worker hands back to the supervisor's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OutputMode {
    /// Its last message (the last two when that is a tool result): the
    /// supervisor sees answers, not the work (langgraph-supervisor's default).
    #[default]
    LastMessage,
    /// Everything it said and every tool result.
    FullHistory,
}

/// Builds a supervisor: an agent (named `supervisor`) on `model` that hands the
/// conversation to one of `agents` with handoff tools (`transfer_to_<agent>`,
/// one per agent), gets it back when the worker is done, and answers when no
/// worker is needed (langgraph-supervisor's `create_supervisor`).
///
/// Every agent needs a [`name`](ReactAgent::name): it is the node that runs it
/// and the handoff tool's destination. A worker's answer comes back as
/// [`OutputMode`] says, followed by a pair of messages saying that control went
/// back to the supervisor ([`add_handoff_back_messages`](Supervisor::add_handoff_back_messages)).
///
/// `compile()` fails on an agent without a name
/// ([`GraphProblem::EmptyNodeName`](graph_core::error::GraphProblem::EmptyNodeName)),
/// two agents of one name (`DuplicateNode`), and a handoff tool of a worker to
/// an agent the graph does not have (`UnknownDestination`).
///
/// ```
/// use graph_agents::model::FakeChatModel;
/// use graph_agents::multi_agent::create_supervisor;
/// use graph_agents::{create_react_agent, AiMessage, Message, MessagesState, ToolCall};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), graph_core::GraphError> {
/// let math = create_react_agent(FakeChatModel::new(vec![AiMessage::new("2 + 2 = 4.")]), ())
///     .name("math_expert");
/// let supervisor = FakeChatModel::new(vec![
///     AiMessage::new("").with_tool_call(ToolCall::new("c1", "transfer_to_math_expert", serde_json::json!({}))),
///     AiMessage::new("The answer is 4."),
/// ]);
/// let app = create_supervisor(supervisor, [math]).compile()?;
///
/// let out = app
///     .invoke(MessagesState::update().messages(vec![Message::human("2 + 2?")]), &Default::default())
///     .await?;
/// let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
/// assert_eq!(texts, [
///     "2 + 2?",
///     "",
///     "Successfully transferred to math_expert",
///     "2 + 2 = 4.",
///     "Transferring back to supervisor",
///     "Successfully transferred back to supervisor",
///     "The answer is 4.",
/// ]);
/// # Ok(())
/// # }
/// ```
pub fn create_supervisor<M: ChatModel, S: HasMessages>(
    model: M,
    agents: impl IntoIterator<Item = ReactAgent<S>>,
) -> Supervisor<S> {
    Supervisor {
        model: Arc::new(model),
        agents: agents.into_iter().collect(),
        tools: Vec::new(),
        prompt: None,
        output_mode: OutputMode::default(),
        handoff_back: true,
        name: Arc::from("supervisor"),
        members: Vec::new(),
    }
}

/// The builder [`create_supervisor`] returns.
pub struct Supervisor<S: State> {
    model: Arc<dyn ChatModel>,
    agents: Vec<ReactAgent<S>>,
    tools: Vec<BoxedTool>,
    prompt: Option<Arc<str>>,
    output_mode: OutputMode,
    handoff_back: bool,
    name: Arc<str>,
    /// The agents a typed team ([`create_supervisor_of`](super::create_supervisor_of))
    /// must have: the supervisor gets a handoff tool to each.
    members: Vec<String>,
}

impl<S: HasMessages> Supervisor<S> {
    /// Tools of the supervisor's own, besides the handoff tools.
    pub fn tools<M>(mut self, tools: impl IntoTools<M>) -> Self {
        self.tools.extend(tools.into_tools());
        self
    }

    /// The supervisor's system prompt.
    pub fn prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// What a worker hands back (default: [`OutputMode::LastMessage`]).
    pub fn output_mode(mut self, mode: OutputMode) -> Self {
        self.output_mode = mode;
        self
    }

    /// Whether a worker's output ends with an AI message calling
    /// `transfer_back_to_<supervisor>` and its tool answer (default: yes).
    pub fn add_handoff_back_messages(mut self, yes: bool) -> Self {
        self.handoff_back = yes;
        self
    }

    /// Names the supervisor (its node, and the signature of its replies;
    /// default `supervisor`).
    pub fn supervisor_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Gives the supervisor a handoff to each of `members` too, so that
    /// `compile()` fails when one has no agent.
    pub(crate) fn members(mut self, members: Vec<String>) -> Self {
        self.members = members;
        self
    }

    /// The uncompiled graph: the supervisor and one node per worker, each worker
    /// returning to the supervisor. Fails when an agent fails to compile.
    pub fn graph(self) -> Result<StateGraph<S>, GraphError> {
        let names: Vec<String> = self
            .agents
            .iter()
            .map(|a| a.agent_name().unwrap_or_default().to_owned())
            .collect();
        let mut handoffs_to = names.clone();
        for member in self.members {
            if !handoffs_to.contains(&member) {
                handoffs_to.push(member);
            }
        }
        let mut tools = self.tools;
        tools.extend(
            handoffs_to
                .iter()
                .map(|n| create_handoff_tool(n.as_str()).into_tool()),
        );
        let supervisor = ReactAgent::<S>::from_parts(self.model, Toolbox::new(tools))
            .name(Arc::clone(&self.name));
        let supervisor = match self.prompt {
            Some(prompt) => supervisor.system_prompt(prompt),
            None => supervisor,
        };
        let sup: &str = &self.name;
        let mut targets: Vec<&str> = handoffs_to.iter().map(String::as_str).collect();
        targets.push(END);
        let mut graph = StateGraph::<S>::new()
            .add_node(Subgraph::new(sup.to_owned(), supervisor.compile()?))
            .add_edge(START, sup)
            .destinations(sup, targets);
        for (agent, name) in self.agents.into_iter().zip(names) {
            let handoffs = destinations(agent.toolbox());
            let back = self
                .handoff_back
                .then(|| (name.clone(), Arc::clone(&self.name)));
            let mode = self.output_mode;
            let output = move |done: S| {
                let messages = done.messages();
                let keep = match (mode, messages.last()) {
                    (OutputMode::FullHistory, _) => messages.len(),
                    (OutputMode::LastMessage, Some(Message::Tool(_))) => 2,
                    (OutputMode::LastMessage, _) => 1,
                };
                let mut out = messages[messages.len().saturating_sub(keep)..].to_vec();
                if let Some((agent, supervisor)) = &back {
                    out.extend(handoff_back_messages(agent, supervisor));
                }
                NodeOutput::new().with_update(S::messages_update(out))
            };
            let node = Subgraph::mapped(name.clone(), agent.compile()?, S::to_update, output);
            graph = graph.add_node(node).add_edge(name.as_str(), sup);
            if !handoffs.is_empty() {
                graph = graph.destinations(name.as_str(), handoffs);
            }
        }
        Ok(graph)
    }

    /// Compiles the supervisor without a checkpointer.
    pub fn compile(self) -> Result<CompiledGraph<S>, GraphError> {
        self.graph()?.compile()
    }

    /// Compiles the supervisor with a checkpointer (threads persist), or with
    /// [`CompileOptions`]: a checkpointer, a store for the agents' memory tools.
    pub fn compile_with(
        self,
        options: impl Into<CompileOptions>,
    ) -> Result<CompiledGraph<S>, GraphError> {
        self.graph()?.compile_with(options)
    }
}
