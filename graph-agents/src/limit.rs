//! [`ToolCallLimit`]: a cap on the tool calls an agent makes in one turn
//! (langchain's `ToolCallLimitMiddleware`, counted per turn).
//!
//! A turn is everything since the last human message. After each model reply the
//! agent counts the tool calls of the turn so far; the calls of the reply that
//! would go over the limit are blocked: answered with an error message instead of
//! run. What happens then is the limit's [`LimitExceeded`] behaviour.
//!
//! ```
//! use graph_agents::limit::{LimitExceeded, ToolCallLimit};
//! use graph_agents::model::FakeChatModel;
//! use graph_agents::{create_react_agent, AiMessage, Message, MessagesState, ToolCall};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), graph_core::GraphError> {
//! let search = |n: u32| ToolCall::new(format!("c{n}"), "search", serde_json::json!({"q": "rust"}));
//! let model = FakeChatModel::new(vec![
//!     AiMessage::new("").with_tool_call(search(1)),
//!     AiMessage::new("").with_tool_call(search(2)),
//! ]);
//! let tool = graph_agents::BoxedTool::from_fn(
//!     graph_agents::ToolSpec::of::<serde_json::Value>("search", "Searches the web."),
//!     |_| async { Ok("nothing found".to_owned()) },
//! );
//! let agent = create_react_agent(model, tool)
//!     .tool_call_limit(ToolCallLimit::per_turn(1).on_exceed(LimitExceeded::End))
//!     .compile()?;
//! let out = agent
//!     .invoke(MessagesState::update().messages(vec![Message::human("find it")]), &Default::default())
//!     .await?;
//! assert_eq!(
//!     out.messages.last().map(Message::text),
//!     Some("Tool call limit reached: turn limit exceeded (2/1 calls).")
//! );
//! # Ok(())
//! # }
//! ```

use crate::error::AgentError;
use crate::message::{AiMessage, Message, ToolCall, ToolMessage, ToolStatus};
use std::sync::Arc;

/// What the agent does when a model reply asks for more tool calls than a
/// [`ToolCallLimit`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// Stops the run: every call of the reply is answered with an error message
    /// (none runs), and a final AI message says which limit was reached
    /// (langchain's `exit_behavior="end"`). The default: a clear stop the user
    /// sees, with a history any model accepts.
    #[default]
    End,
    /// Answers the calls over the limit with an error message telling the model
    /// not to call again, runs the others, and lets the model go on
    /// (langchain's default, `"continue"`).
    Continue,
    /// Fails the run with [`AgentError::ToolCallLimitExceeded`]
    /// (langchain's `"error"`).
    Error,
}

/// At most `limit` tool calls per turn (of one tool, or of all), as
/// [`ReactAgent::tool_call_limit`](crate::ReactAgent::tool_call_limit) applies it.
///
/// The count comes from the history (the calls of the AI messages since the last
/// human message, blocked calls included, as langchain's run count does), so it
/// needs no extra state field and survives interrupts and resumes. Unlike
/// langchain's `run_limit`, a run that adds no human message (a resume, say)
/// continues the turn's count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallLimit {
    limit: usize,
    tool: Option<Arc<str>>,
    on_exceed: LimitExceeded,
}

impl ToolCallLimit {
    /// At most `limit` tool calls in a turn; over it, [`LimitExceeded::End`].
    pub fn per_turn(limit: usize) -> Self {
        ToolCallLimit {
            limit,
            tool: None,
            on_exceed: LimitExceeded::default(),
        }
    }

    /// Counts (and blocks) only the calls of the tool named `name`.
    pub fn tool(mut self, name: impl Into<Arc<str>>) -> Self {
        self.tool = Some(name.into());
        self
    }

    /// What happens when a reply goes over the limit.
    pub fn on_exceed(mut self, behaviour: LimitExceeded) -> Self {
        self.on_exceed = behaviour;
        self
    }

    fn counts(&self, call: &ToolCall) -> bool {
        self.tool.as_deref().is_none_or(|t| t == call.name)
    }

    /// "Tool call limit reached: turn limit exceeded (3/2 calls)." (langchain's
    /// wording, with "turn" for "run").
    fn reached(&self, count: usize) -> AgentError {
        AgentError::ToolCallLimitExceeded {
            tool: self.tool.as_deref().map(str::to_owned),
            count,
            limit: self.limit,
        }
    }
}

/// The answer of a call over a limit (langchain's wording).
fn blocked_answer(limit: &ToolCallLimit, call: &ToolCall) -> ToolMessage {
    let content = match &limit.tool {
        Some(tool) => format!("Tool call limit exceeded. Do not call '{tool}' again."),
        None => "Tool call limit exceeded. Do not make additional tool calls.".to_owned(),
    };
    error_answer(call, content)
}

fn error_answer(call: &ToolCall, content: String) -> ToolMessage {
    ToolMessage {
        content,
        id: Some(crate::message::new_id()),
        name: Some(call.name.clone()),
        tool_call_id: call.id.clone(),
        status: ToolStatus::Error,
    }
}

/// The messages the agent adds after `reply` because of `limits`: none when the
/// reply stays within them; the answers of blocked calls
/// ([`LimitExceeded::Continue`]); or an answer for every call and a final AI
/// message ([`LimitExceeded::End`]). [`LimitExceeded::Error`] fails.
///
/// With several limits, the strictest behaviour among those exceeded applies
/// (Error, then End, then Continue), and a call any of them blocks is blocked.
pub(crate) fn enforce(
    limits: &[ToolCallLimit],
    history: &[Message],
    reply: &AiMessage,
) -> Result<Vec<Message>, AgentError> {
    if limits.is_empty() || reply.tool_calls.is_empty() {
        return Ok(Vec::new());
    }
    let turn_start = history
        .iter()
        .rposition(|m| matches!(m, Message::Human(_)))
        .map_or(0, |i| i + 1);
    let turn: Vec<&ToolCall> = history[turn_start..]
        .iter()
        .filter_map(Message::as_ai)
        .flat_map(|ai| &ai.tool_calls)
        .collect();
    let mut blocked: Vec<(usize, &ToolCallLimit)> = Vec::new();
    // (the limit, the turn's count with this reply) of the strictest limit exceeded
    let mut worst: Option<(&ToolCallLimit, usize)> = None;
    for limit in limits {
        let mut count = turn.iter().filter(|c| limit.counts(c)).count();
        let mut exceeded = false;
        for (i, call) in reply.tool_calls.iter().enumerate() {
            if !limit.counts(call) {
                continue;
            }
            count += 1;
            if count > limit.limit {
                exceeded = true;
                if !blocked.iter().any(|(j, _)| *j == i) {
                    blocked.push((i, limit));
                }
            }
        }
        let stricter =
            |w: &(&ToolCallLimit, usize)| severity(limit.on_exceed) > severity(w.0.on_exceed);
        if exceeded && worst.as_ref().is_none_or(stricter) {
            worst = Some((limit, count));
        }
    }
    let Some((limit, count)) = worst else {
        return Ok(Vec::new());
    };
    let mut added: Vec<Message> = blocked
        .iter()
        .map(|&(i, l)| blocked_answer(l, &reply.tool_calls[i]).into())
        .collect();
    match limit.on_exceed {
        LimitExceeded::Continue => Ok(added),
        LimitExceeded::Error => Err(limit.reached(count)),
        LimitExceeded::End => {
            let pending = reply
                .tool_calls
                .iter()
                .enumerate()
                .filter(|(i, _)| !blocked.iter().any(|(j, _)| j == i))
                .map(|(_, call)| {
                    let content = "Execution stopped before this tool call could run because \
                                   another tool call in the same batch exceeded the limit.";
                    error_answer(call, content.to_owned()).into()
                });
            added.extend(pending);
            let stop =
                AiMessage::new(limit.reached(count).to_string()).with_id(crate::message::new_id());
            added.push(stop.into());
            Ok(added)
        }
    }
}

fn severity(behaviour: LimitExceeded) -> u8 {
    match behaviour {
        LimitExceeded::Continue => 0,
        LimitExceeded::End => 1,
        LimitExceeded::Error => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall::new(id, name, json!({}))
    }

    #[test]
    fn the_count_starts_at_the_last_human_message_and_blocks_the_calls_over_it() {
        let earlier = AiMessage::new("").with_tool_call(call("old", "search"));
        let history: Vec<Message> = vec![
            Message::human("first"),
            earlier.into(),
            Message::human("second"),
            AiMessage::new("")
                .with_tool_call(call("a", "search"))
                .into(),
        ];
        let reply = AiMessage::new("")
            .with_tool_call(call("b", "search"))
            .with_tool_call(call("c", "add"));
        let limits = [ToolCallLimit::per_turn(1)
            .tool("search")
            .on_exceed(LimitExceeded::Continue)];
        let added = enforce(&limits, &history, &reply).unwrap();
        let answered: Vec<(&str, &str)> = added
            .iter()
            .filter_map(Message::as_tool)
            .map(|t| (t.tool_call_id.as_str(), t.content.as_str()))
            .collect();
        assert_eq!(
            answered,
            [("b", "Tool call limit exceeded. Do not call 'search' again.")]
        );
        let within = [ToolCallLimit::per_turn(2).tool("search")];
        assert!(enforce(&within, &history, &reply).unwrap().is_empty());
    }

    #[test]
    fn the_strictest_behaviour_of_the_limits_exceeded_applies() {
        let reply = AiMessage::new("")
            .with_tool_call(call("a", "search"))
            .with_tool_call(call("b", "add"));
        let limits = [
            ToolCallLimit::per_turn(0)
                .tool("add")
                .on_exceed(LimitExceeded::Continue),
            ToolCallLimit::per_turn(1).on_exceed(LimitExceeded::Error),
        ];
        let err = enforce(&limits, &[], &reply).unwrap_err();
        assert!(matches!(
            err,
            AgentError::ToolCallLimitExceeded {
                tool: None,
                count: 2,
                limit: 1
            }
        ));
        assert_eq!(
            err.to_string(),
            "Tool call limit reached: turn limit exceeded (2/1 calls)."
        );
    }
}
