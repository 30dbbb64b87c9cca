//! Handoff tools: a tool call that moves control to another agent of the
//! multi-agent graph (langgraph-supervisor's and langgraph-swarm's
//! `create_handoff_tool`).

use crate::message::{new_id, AiMessage, Message, ToolCall, ToolMessage, ToolStatus};
use crate::state::HasMessages;
use crate::tool::{BoxedTool, Erased, IntoTool, ToolSpec};
use graph_core::{Command, IntoNodeOutput, NodeError, NodeOutput, State};

/// How a handoff writes the parent graph's state: the messages to merge and the
/// agent that takes over. The default writes the messages only; a swarm also
/// records the active agent ([`HasActiveAgent`](super::HasActiveAgent)).
pub(crate) type HandoffUpdate<S> = fn(Vec<Message>, &str) -> <S as State>::Update;

/// The [`HandoffUpdate`] of an agent outside a swarm.
pub(crate) fn messages_only<S: HasMessages>(messages: Vec<Message>, _agent: &str) -> S::Update {
    S::messages_update(messages)
}

/// Creates a tool that hands control to the agent (the node) named `agent`.
///
/// Its call does not run anything: the [`ToolNode`](crate::ToolNode) of the
/// calling agent answers it with "Successfully transferred to `agent`" and
/// returns a command to the **parent** graph (the supervisor's or the swarm's)
/// that appends the agent's history and that answer to the parent's messages and
/// routes to `agent`, as langgraph-supervisor's and langgraph-swarm's handoff
/// tools do. The tool is named `transfer_to_<agent>` (lower case, blanks as
/// `_`) and takes no arguments.
///
/// Inside [`create_supervisor`](super::create_supervisor) and
/// [`create_swarm`](super::create_swarm), a handoff to an agent the graph does
/// not have is a `compile()` error
/// ([`GraphProblem::UnknownDestination`](graph_core::error::GraphProblem::UnknownDestination)).
///
/// ```
/// use graph_agents::multi_agent::create_handoff_tool;
/// use graph_agents::IntoTool;
///
/// let tool = create_handoff_tool("Math Expert").into_tool();
/// assert_eq!(tool.name(), "transfer_to_math_expert");
/// assert_eq!(tool.spec().description, "Ask agent 'Math Expert' for help");
/// assert_eq!(tool.handoff_target(), Some("Math Expert"));
/// ```
pub fn create_handoff_tool(agent: impl Into<String>) -> Handoff {
    Handoff {
        agent: agent.into(),
        name: None,
        description: None,
    }
}

/// A handoff tool being configured; made by [`create_handoff_tool`], used wherever
/// a tool is (`create_react_agent(model, (create_handoff_tool("bob"), add))`).
#[derive(Debug, Clone)]
pub struct Handoff {
    agent: String,
    name: Option<String>,
    description: Option<String>,
}

impl Handoff {
    /// Names the tool (default `transfer_to_<agent>`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Describes the tool for the model (default "Ask agent '`agent`' for help").
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The agent the tool hands control to.
    pub fn agent(&self) -> &str {
        &self.agent
    }
}

impl IntoTool<Erased> for Handoff {
    fn into_tool(self) -> BoxedTool {
        let name = self
            .name
            .unwrap_or_else(|| format!("transfer_to_{}", normalize(&self.agent)));
        let description = self
            .description
            .unwrap_or_else(|| format!("Ask agent '{}' for help", self.agent));
        let spec = ToolSpec {
            name,
            description,
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        };
        let content = transferred(&self.agent);
        BoxedTool::handoff(spec, self.agent.into(), content)
    }
}

/// An agent's name as part of a tool name: trimmed, blanks as `_`, lower case.
pub(crate) fn normalize(agent: &str) -> String {
    agent
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
        .to_lowercase()
}

fn transferred(agent: &str) -> String {
    format!("Successfully transferred to {agent}")
}

/// The output of a tool node whose AI message calls the handoff tool `call`
/// (to `agent`): a command for the parent graph that merges the history and the
/// call's answer ([`handoff_messages`]) into the parent's state and routes to
/// `agent`. Also returns the answer, for the `messages` stream mode.
pub(crate) fn hand_off<S: HasMessages>(
    history: &[Message],
    call: &ToolCall,
    agent: &str,
    update: HandoffUpdate<S>,
) -> Result<(NodeOutput<S>, Message), NodeError> {
    let (messages, answer) = handoff_messages(history, call, agent);
    let output = Command::goto(agent.to_owned())
        .update(update(messages, agent))
        .to_parent()
        .into_output()?;
    Ok((output, answer))
}

/// What a handoff writes to the parent's messages: the history and the answer
/// to the handoff call.
///
/// When the AI message is the last of `history` and calls other tools too, its
/// copy in the parent keeps only the handoff call (under a new id), so that the
/// parent's history has no unanswered call; the other calls are not run (as in
/// langgraph-supervisor, where their results never reach the parent either).
fn handoff_messages(history: &[Message], call: &ToolCall, agent: &str) -> (Vec<Message>, Message) {
    let answer = Message::from(ToolMessage {
        content: transferred(agent),
        id: Some(new_id()),
        name: Some(call.name.clone()),
        tool_call_id: call.id.clone(),
        status: ToolStatus::Success,
    });
    let mut messages = Vec::with_capacity(history.len() + 1);
    match history.split_last() {
        Some((Message::Ai(last), before)) if last.tool_calls.len() > 1 => {
            messages.extend_from_slice(before);
            messages.push(Message::from(AiMessage {
                id: Some(new_id()),
                tool_calls: vec![call.clone()],
                invalid_tool_calls: Vec::new(),
                ..AiMessage::clone(last)
            }));
        }
        _ => messages.extend_from_slice(history),
    }
    messages.push(answer.clone());
    (messages, answer)
}

/// A handoff tool's destination, for the drawing and `compile()`'s check.
pub(crate) fn destinations(tools: &crate::tool::Toolbox) -> Vec<String> {
    let mut out: Vec<String> = tools.handoffs().map(|(_, a)| a.to_owned()).collect();
    out.dedup();
    out
}

/// The pair of messages a worker's output ends with when control goes back to
/// the supervisor (langgraph-supervisor's `create_handoff_back_messages`).
pub(crate) fn handoff_back_messages(agent: &str, supervisor: &str) -> [Message; 2] {
    let tool_name = format!("transfer_back_to_{}", normalize(supervisor));
    let call_id = new_id();
    let mut metadata = serde_json::Map::new();
    metadata.insert(
        "__is_handoff_back".to_owned(),
        serde_json::Value::Bool(true),
    );
    let ai = AiMessage {
        name: Some(agent.to_owned()),
        response_metadata: metadata,
        ..AiMessage::new(format!("Transferring back to {supervisor}")).with_tool_call(
            ToolCall::new(call_id.clone(), tool_name.clone(), serde_json::json!({})),
        )
    };
    let tool = ToolMessage {
        content: format!("Successfully transferred back to {supervisor}"),
        id: None,
        name: Some(tool_name),
        tool_call_id: call_id,
        status: ToolStatus::Success,
    };
    [ai.into(), tool.into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_as_langgraph_does() {
        assert_eq!(normalize("  Math  Expert "), "math_expert");
        assert_eq!(normalize("bob"), "bob");
    }

    #[test]
    fn a_custom_name_and_description_are_kept() {
        let tool = create_handoff_tool("bob")
            .name("ask_bob")
            .description("Bob knows.")
            .into_tool();
        assert_eq!(tool.name(), "ask_bob");
        assert_eq!(tool.spec().description, "Bob knows.");
        assert_eq!(tool.spec().parameters["properties"], serde_json::json!({}));
    }

    #[test]
    fn a_parallel_reply_reaches_the_parent_with_the_handoff_call_only() {
        let calls = vec![
            ToolCall::new("a", "add", serde_json::json!({"a": 1})),
            ToolCall::new("h", "transfer_to_bob", serde_json::json!({})),
        ];
        let history = vec![
            Message::human("hi").with_id("1"),
            Message::ai_with_tool_calls("", calls.clone()).with_id("2"),
        ];
        let (out, _) = handoff_messages(&history, &calls[1], "bob");
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].id(), Some("1"));
        let ai = out[1].as_ai().unwrap();
        assert_ne!(
            ai.id.as_deref(),
            Some("2"),
            "a new message, not the agent's"
        );
        assert_eq!(ai.tool_calls, calls[1..]);
        let answer = out[2].as_tool().unwrap();
        assert_eq!(
            (answer.tool_call_id.as_str(), answer.content.as_str()),
            ("h", "Successfully transferred to bob")
        );

        // A single call: the history as it is, then the answer.
        let single = vec![
            history[0].clone(),
            Message::ai_with_tool_calls("", calls[1..].to_vec()).with_id("2"),
        ];
        let (out, answer) = handoff_messages(&single, &calls[1], "bob");
        assert_eq!(out[2], answer);
        assert_eq!(out[..2], single[..]);
        assert_eq!(
            out[2].as_tool().unwrap().name.as_deref(),
            Some("transfer_to_bob")
        );
    }
}
