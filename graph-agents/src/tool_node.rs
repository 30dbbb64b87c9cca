//! Graph nodes running tool calls: [`ToolNode`] (every call of the last AI message,
//! concurrently), [`ToolCallNode`] (one call per `Send`, with optional human
//! approval), and the [`tools_condition`] router.

use crate::error::AgentError;
use crate::message::{AiMessage, InvalidToolCall, Message, ToolCall, ToolMessage, ToolStatus};
use crate::multi_agent::handoff::{self, HandoffUpdate};
use crate::state::HasMessages;
use crate::tool::{IntoTools, ToolErrors, Toolbox};
use graph_core::context::FromContext;
use graph_core::{Context, Node, NodeError, NodeFuture, NodeOutput, NodeSpec, State, Targets};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

/// A node that runs every tool call of the last AI message (those not answered
/// yet), concurrently, and answers each with a tool message (in the order of the
/// calls).
///
/// Named `tools` unless renamed with [`named`](ToolNode::named). Calls of unknown
/// tools, arguments that do not fit, and tool errors become error messages the
/// model can react to (see [`ToolErrors`] to change that), so every tool call of
/// the history gets its answer.
///
/// A call of a handoff tool
/// ([`create_handoff_tool`](crate::multi_agent::create_handoff_tool)) ends the
/// graph's run instead: the node returns a command for the parent graph that
/// moves control to the handoff's agent, with the history and the call's answer.
pub struct ToolNode<S: State> {
    tools: Toolbox,
    name: Cow<'static, str>,
    handoff: HandoffUpdate<S>,
    approval: bool,
}

impl<S: State> Clone for ToolNode<S> {
    fn clone(&self) -> Self {
        ToolNode {
            tools: self.tools.clone(),
            name: self.name.clone(),
            handoff: self.handoff,
            approval: self.approval,
        }
    }
}

impl<S: State> std::fmt::Debug for ToolNode<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolNode")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish()
    }
}

impl<S: HasMessages> ToolNode<S> {
    /// A node named `tools` running `tools` (one tool or a tuple of them).
    pub fn new<M>(tools: impl IntoTools<M>) -> Self {
        Self::from_toolbox(Toolbox::new(tools))
    }

    /// A node running the tools of `tools`, with its error policy.
    pub fn from_toolbox(tools: Toolbox) -> Self {
        ToolNode {
            tools,
            name: Cow::Borrowed("tools"),
            handoff: handoff::messages_only::<S>,
            approval: false,
        }
    }

    /// Asks a human ([`ToolApprovalRequest`]) about each call, one interrupt
    /// after the other in the order of the calls, before any runs (needs a
    /// checkpointer, to pause and resume the thread).
    pub fn require_approval(mut self, approval: bool) -> Self {
        self.approval = approval;
        self
    }

    /// Sets how a handoff writes the parent's state (a swarm records the agent).
    pub(crate) fn on_handoff(mut self, update: HandoffUpdate<S>) -> Self {
        self.handoff = update;
        self
    }

    /// Registers the node under another name.
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets what happens when a tool call fails.
    pub fn errors(mut self, errors: ToolErrors) -> Self {
        self.tools = self.tools.with_errors(errors);
        self
    }

    /// The tools.
    pub fn toolbox(&self) -> &Toolbox {
        &self.tools
    }
}

impl<S: HasMessages> NodeSpec for ToolNode<S> {
    type Input = S;

    fn name(&self) -> Cow<'static, str> {
        self.name.clone()
    }
}

// For a graph of any context type: tools read no typed context.
impl<S: HasMessages, C: ?Sized + 'static> Node<S, C> for ToolNode<S> {
    fn run(&self, input: Arc<S>, ctx: Context<C>) -> NodeFuture<S> {
        let ctx: Context = FromContext::from_context(ctx);
        let tools = self.tools.clone();
        let handoff = self.handoff;
        let approval = self.approval;
        NodeFuture::new(async move {
            let messages = input.messages();
            let mut from_end = messages.iter().enumerate().rev();
            let Some((at, ai)) = from_end.find_map(|(i, m)| Some((i, m.as_ai()?))) else {
                return Err(NodeError::msg(
                    "ToolNode found no AI message in the history: route to it only after a \
                     model asked for tools (see tools_condition)",
                ));
            };
            // A handoff ends this graph's run: the parent takes over (the first
            // handoff call wins; other calls of the message are not run).
            let first_handoff = ai.tool_calls.iter().find_map(|call| {
                let agent = tools.get(&call.name)?.handoff_target()?;
                Some((call, agent))
            });
            if let Some((call, agent)) = first_handoff {
                let (output, answer) = handoff::hand_off(input.messages(), call, agent, handoff)?;
                if ctx.is_streaming_messages() {
                    ctx.write_message_chunk(&answer);
                }
                return Ok(output);
            }
            // Calls answered already (by a tool call limit) are not run again.
            let answered = |id: &str| {
                messages[at + 1..]
                    .iter()
                    .filter_map(Message::as_tool)
                    .any(|t| t.tool_call_id == id)
            };
            let open: Vec<&ToolCall> = ai.tool_calls.iter().filter(|c| !answered(&c.id)).collect();
            let mut decisions = Vec::with_capacity(open.len());
            for call in open {
                decisions.push(if approval {
                    ask_approval(call, &ctx)?
                } else {
                    Decision::Run(Cow::Borrowed(call))
                });
            }
            let calls = decisions.into_iter().map(|d| d.answer(&tools, &ctx));
            let mut answers: Vec<ToolMessage> = futures::future::try_join_all(calls).await?;
            answers.extend(
                ai.invalid_tool_calls
                    .iter()
                    .filter(|c| c.id.as_deref().is_none_or(|id| !answered(id)))
                    .map(|c| tools.answer_invalid(c)),
            );
            let answers = answers.into_iter().map(|a| publish(a, &ctx)).collect();
            Ok(NodeOutput::new().with_update(S::messages_update(answers)))
        })
    }
}

/// Gives a tool result its id and reports it on the `messages` stream mode (as
/// LangGraph streams the messages a node returns), when someone listens.
fn publish(mut answer: ToolMessage, ctx: &Context) -> Message {
    if answer.id.is_none() {
        answer.id = Some(crate::message::new_id());
    }
    let message = Message::from(answer);
    if ctx.is_streaming_messages() {
        ctx.write_message_chunk(&message);
    }
    message
}

/// One tool call, as the payload of a `Send` to a [`ToolCallNode`] (LangGraph's
/// "v2" tool dispatch: one task per call).
///
/// Serialised as the call itself with a `kind` tag: `{"kind": "call", "id": ..,
/// "name": .., "args": .., "type": "tool_call"}` or `{"kind": "invalid", ..}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolCallRequest {
    /// A call with parsed arguments (shared with the AI message that made it).
    Call(SharedToolCall),
    /// A call whose arguments were not JSON: answered with an error.
    Invalid(InvalidToolCall),
}

impl From<ToolCall> for ToolCallRequest {
    fn from(call: ToolCall) -> Self {
        ToolCallRequest::Call(call.into())
    }
}

/// One tool call of an AI message, sharing the message instead of copying the
/// call (its arguments can be large, and the agent sends each call of each
/// reply to a task of its own). Dereferences to the [`ToolCall`]; compares,
/// prints and serialises as the call alone.
///
/// ```
/// use graph_agents::{AiMessage, SharedToolCall, ToolCall};
/// use std::sync::Arc;
///
/// let reply = Arc::new(AiMessage::new("").with_tool_call(ToolCall::new("c1", "search", serde_json::json!({"q": "rust"}))));
/// let call = SharedToolCall::new(Arc::clone(&reply), 0).expect("the reply has a call 0");
/// assert_eq!(call.name, "search");
/// assert!(SharedToolCall::new(reply, 1).is_none());
/// let alone = SharedToolCall::from(ToolCall::new("c2", "search", serde_json::json!({})));
/// assert_eq!(alone.id, "c2");
/// ```
#[derive(Clone)]
pub struct SharedToolCall {
    /// Holds the call at `index` (checked when made; the message is immutable).
    message: Arc<AiMessage>,
    index: usize,
}

impl SharedToolCall {
    /// The call at `index` of `message`'s tool calls; `None` when it has no
    /// such call.
    pub fn new(message: Arc<AiMessage>, index: usize) -> Option<Self> {
        (index < message.tool_calls.len()).then_some(SharedToolCall { message, index })
    }

    /// The AI message the call belongs to.
    pub fn message(&self) -> &Arc<AiMessage> {
        &self.message
    }

    /// The call.
    pub fn call(&self) -> &ToolCall {
        &self.message.tool_calls[self.index]
    }
}

impl std::ops::Deref for SharedToolCall {
    type Target = ToolCall;

    fn deref(&self) -> &ToolCall {
        self.call()
    }
}

impl From<ToolCall> for SharedToolCall {
    /// The call as the only one of an otherwise empty AI message.
    fn from(call: ToolCall) -> Self {
        SharedToolCall {
            message: Arc::new(AiMessage::new("").with_tool_call(call)),
            index: 0,
        }
    }
}

impl PartialEq for SharedToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.call() == other.call()
    }
}

impl std::fmt::Debug for SharedToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.call().fmt(f)
    }
}

impl Serialize for SharedToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.call().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SharedToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ToolCall::deserialize(deserializer).map(SharedToolCall::from)
    }
}

/// What a human is asked before a tool call runs (the interrupt's value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolApprovalRequest {
    /// The call awaiting approval.
    pub tool_call: ToolCall,
}

/// A human's answer to a [`ToolApprovalRequest`], given with `Command::resume`.
///
/// Serialised as `{"action": "approve"}`, `{"action": "reject", "reason": ".."}`
/// or `{"action": "edit", "args": {..}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ToolApproval {
    /// Run the call as the model made it.
    Approve,
    /// Do not run it; the model is told it was rejected (and why).
    Reject {
        /// Why, for the model.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Run it with these arguments instead.
    Edit {
        /// The arguments to use.
        args: serde_json::Value,
    },
}

/// A node that runs the one tool call it is sent ([`ToolCallRequest`]) and
/// answers it with a tool message; with [`require_approval`](Self::require_approval)
/// it first asks a human through `Context::interrupt`.
pub struct ToolCallNode<S> {
    tools: Toolbox,
    name: Cow<'static, str>,
    approval: bool,
    _state: PhantomData<fn() -> S>,
}

impl<S> Clone for ToolCallNode<S> {
    fn clone(&self) -> Self {
        ToolCallNode {
            tools: self.tools.clone(),
            name: self.name.clone(),
            approval: self.approval,
            _state: PhantomData,
        }
    }
}

impl<S: HasMessages> ToolCallNode<S> {
    /// A node named `tools` running calls of the tools in `tools`.
    pub fn new(tools: Toolbox) -> Self {
        ToolCallNode {
            tools,
            name: Cow::Borrowed("tools"),
            approval: false,
            _state: PhantomData,
        }
    }

    /// Registers the node under another name.
    pub fn named(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }

    /// Asks a human ([`ToolApprovalRequest`]) before each call and waits for a
    /// [`ToolApproval`] (needs a checkpointer, to pause and resume the thread).
    pub fn require_approval(mut self, approval: bool) -> Self {
        self.approval = approval;
        self
    }
}

impl<S: HasMessages> NodeSpec for ToolCallNode<S> {
    type Input = ToolCallRequest;

    fn name(&self) -> Cow<'static, str> {
        self.name.clone()
    }
}

impl<S: HasMessages, C: ?Sized + 'static> Node<S, C> for ToolCallNode<S> {
    fn run(&self, input: Arc<ToolCallRequest>, ctx: Context<C>) -> NodeFuture<S> {
        let ctx: Context = FromContext::from_context(ctx);
        let tools = self.tools.clone();
        let approval = self.approval;
        NodeFuture::new(async move {
            let answer = match &*input {
                ToolCallRequest::Invalid(call) => tools.answer_invalid(call),
                ToolCallRequest::Call(call) if approval => {
                    ask_approval(call, &ctx)?.answer(&tools, &ctx).await?
                }
                ToolCallRequest::Call(call) => tools.run_in(call, &ctx).await?,
            };
            let answer = publish(answer, &ctx);
            Ok(NodeOutput::new().with_update(S::messages_update(vec![answer])))
        })
    }

    fn targets(&self) -> Targets {
        Targets::None
    }
}

/// What becomes of one tool call once a human (if asked) has decided.
enum Decision<'a> {
    /// Run it (as the model sent it, or as the human edited it).
    Run(Cow<'a, ToolCall>),
    /// Answer it with the rejection.
    Reject(&'a ToolCall, Option<String>),
}

impl Decision<'_> {
    async fn answer(self, tools: &Toolbox, ctx: &Context) -> Result<ToolMessage, AgentError> {
        match self {
            Decision::Run(call) => tools.run_in(&call, ctx).await,
            Decision::Reject(call, reason) => Ok(ToolMessage {
                content: AgentError::ToolRejected { reason }.to_string(),
                id: None,
                name: Some(call.name.clone()),
                tool_call_id: call.id.clone(),
                status: ToolStatus::Error,
            }),
        }
    }
}

/// Asks a human about `call` (pauses the node the first time).
fn ask_approval<'a>(call: &'a ToolCall, ctx: &Context) -> Result<Decision<'a>, NodeError> {
    let decision: ToolApproval = ctx.interrupt(ToolApprovalRequest {
        tool_call: call.clone(),
    })?;
    Ok(match decision {
        ToolApproval::Approve => Decision::Run(Cow::Borrowed(call)),
        ToolApproval::Edit { args } => Decision::Run(Cow::Owned(ToolCall::new(
            call.id.clone(),
            call.name.clone(),
            args,
        ))),
        ToolApproval::Reject { reason } => Decision::Reject(call, reason),
    })
}

/// Where [`tools_condition`] routes.
#[derive(graph_macros::Goto, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolsRoute {
    /// The node `tools`: the last message asked for tools.
    Tools,
    /// END: the model answered.
    #[goto(end)]
    End,
}

/// A router for `add_conditional_edges`: to the node `tools` when the last
/// message is an AI message with tool calls, else to END.
pub fn tools_condition<S: HasMessages>(state: &S) -> ToolsRoute {
    match state.messages().last().and_then(Message::as_ai) {
        Some(ai) if ai.has_tool_calls() => ToolsRoute::Tools,
        _ => ToolsRoute::End,
    }
}

/// At most this many calls of one AI message are matched to their answers by
/// [`answered_in_place`]'s scan.
const IN_PLACE_CALLS: usize = 16;

/// Whether every tool call of every AI message in `messages` is answered by one
/// of the tool messages that directly follow that AI message. `true` implies
/// that [`validate_chat_history`] passes; `false` says nothing (a call may be
/// answered further on).
fn answered_in_place(messages: &[Message]) -> bool {
    messages.iter().enumerate().all(|(i, m)| {
        let Some(ai) = m.as_ai() else {
            return true;
        };
        // Each call is looked for among the answers: quadratic in the calls of
        // one message, so many parallel calls go to the hashed check.
        if ai.tool_calls.len() + ai.invalid_tool_calls.len() > IN_PLACE_CALLS {
            return false;
        }
        let answers = messages[i + 1..].iter().map_while(Message::as_tool);
        let answered = |id: &str| answers.clone().any(|t| t.tool_call_id == id);
        ai.tool_calls.iter().all(|c| answered(&c.id))
            && ai
                .invalid_tool_calls
                .iter()
                .filter_map(|c| c.id.as_deref())
                .all(answered)
    })
}

/// Checks that every tool call of every AI message has a tool message answering
/// it (the full scan LangGraph's agent does before each model call); the models
/// of most providers reject a history that fails this.
pub fn validate_chat_history(messages: &[Message]) -> Result<(), AgentError> {
    // Runs before every model call over the whole history, so the history of a
    // long agent loop is checked again at each of its turns. In the usual
    // history each call is answered by one of the tool messages right after its
    // AI message: that is checked first, without hashing or allocating. Only a
    // call not answered there needs the full check.
    if answered_in_place(messages) {
        return Ok(());
    }
    // Hashed with foldhash (hashbrown's default), sized once.
    let mut answered: hashbrown::HashSet<&str> = hashbrown::HashSet::with_capacity(messages.len());
    answered.extend(
        messages
            .iter()
            .filter_map(Message::as_tool)
            .map(|t| t.tool_call_id.as_str()),
    );
    let mut missing = Vec::new();
    for ai in messages.iter().filter_map(Message::as_ai) {
        let ids = ai
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .chain(ai.invalid_tool_calls.iter().filter_map(|c| c.id.as_deref()));
        missing.extend(ids.filter(|id| !answered.contains(id)).map(str::to_owned));
    }
    if missing.is_empty() {
        Ok(())
    } else {
        missing.truncate(3);
        Err(AgentError::InvalidChatHistory {
            tool_call_ids: missing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AiMessage;
    use crate::state::MessagesState;
    use crate::tool::Tool;
    use graph_core::{RunConfig, StateGraph, START};
    use serde_json::json;

    #[test]
    fn a_shared_call_serialises_as_the_call_alone_and_reads_back() {
        let reply = Arc::new(
            AiMessage::new("two calls")
                .with_tool_call(ToolCall::new("c1", "add", json!({"x": 1})))
                .with_tool_call(ToolCall::new("c2", "add", json!({"x": 2}))),
        );
        let shared = SharedToolCall::new(Arc::clone(&reply), 1).expect("call 1");
        assert!(Arc::ptr_eq(shared.message(), &reply), "shared, not copied");
        let request = ToolCallRequest::Call(shared);
        let text = serde_json::to_string(&request).unwrap();
        let owned = json!({"kind": "call", "id": "c2", "name": "add", "args": {"x": 2}, "type": "tool_call"});
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            owned
        );
        let back: ToolCallRequest = serde_json::from_str(&text).unwrap();
        assert_eq!(back, request);
        assert_eq!(back, ToolCallRequest::from(reply.tool_calls[1].clone()));
        assert_ne!(back, ToolCallRequest::from(reply.tool_calls[0].clone()));
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    struct Args {
        x: i64,
    }

    struct Double;

    impl Tool for Double {
        type Args = Args;
        type Output = i64;
        type Error = String;

        fn name(&self) -> Cow<'static, str> {
            "double".into()
        }

        fn description(&self) -> Cow<'static, str> {
            "Doubles x.".into()
        }

        async fn call(&self, args: Args) -> Result<i64, String> {
            if args.x < 0 {
                return Err("negative".into());
            }
            // Later calls finish first: answers must still follow call order.
            tokio::time::sleep(std::time::Duration::from_millis((10 - args.x).max(0) as u64)).await;
            Ok(args.x * 2)
        }
    }

    fn ai_calling(calls: Vec<ToolCall>) -> Message {
        Message::from(AiMessage {
            tool_calls: calls,
            invalid_tool_calls: vec![InvalidToolCall {
                id: Some("bad".into()),
                name: Some("double".into()),
                args: Some("{x:".into()),
                error: Some("key must be a string".into()),
            }],
            ..AiMessage::new("")
        })
    }

    #[tokio::test]
    async fn every_call_of_the_last_ai_message_is_answered_in_order() {
        let app = StateGraph::<MessagesState>::new()
            .add_node(ToolNode::new(Double))
            .add_edge(START, "tools")
            .compile()
            .unwrap();
        let input = vec![
            Message::human("go"),
            ai_calling(vec![
                ToolCall::new("a", "double", json!({"x": 1})),
                ToolCall::new("b", "double", json!({"x": 5})),
                ToolCall::new("c", "triple", json!({"x": 5})),
                ToolCall::new("d", "double", json!({"x": "five"})),
                ToolCall::new("e", "double", json!({"x": -1})),
            ]),
        ];
        let out = app
            .invoke(MessagesState::update().messages(input), &RunConfig::new())
            .await
            .unwrap();
        let answers: Vec<(&str, &str, ToolStatus)> = out.messages[2..]
            .iter()
            .filter_map(Message::as_tool)
            .map(|t| (t.tool_call_id.as_str(), t.content.as_str(), t.status))
            .collect();
        assert_eq!(answers.len(), 6);
        assert_eq!(answers[0], ("a", "2", ToolStatus::Success));
        assert_eq!(answers[1], ("b", "10", ToolStatus::Success));
        assert_eq!(answers[2].0, "c");
        assert!(answers[2].1.contains("triple is not a valid tool"));
        assert_eq!((answers[3].0, answers[3].2), ("d", ToolStatus::Error));
        assert_eq!(answers[4].1, "Error: negative\n Please fix your mistakes.");
        assert_eq!((answers[5].0, answers[5].2), ("bad", ToolStatus::Error));
        validate_chat_history(&out.messages).unwrap();
    }

    #[tokio::test]
    async fn tool_errors_fail_the_node_when_asked() {
        let app = StateGraph::<MessagesState>::new()
            .add_node(ToolNode::new(Double).errors(ToolErrors::Fail))
            .add_edge(START, "tools")
            .compile()
            .unwrap();
        let input = vec![ai_calling(vec![ToolCall::new(
            "e",
            "double",
            json!({"x": -1}),
        )])];
        let err = app
            .invoke(MessagesState::update().messages(input), &RunConfig::new())
            .await
            .unwrap_err();
        let report = format!(
            "{err}: {}",
            std::error::Error::source(&err).expect("the node's error")
        );
        assert!(report.contains("negative"), "{report}");
    }

    #[test]
    fn tools_condition_routes_on_the_last_message() {
        let mut s = MessagesState::default();
        assert_eq!(tools_condition(&s), ToolsRoute::End);
        s.messages.push(ai_calling(vec![]));
        assert_eq!(
            tools_condition(&s),
            ToolsRoute::Tools,
            "invalid calls need answers too"
        );
        s.messages.push(Message::ai("done"));
        assert_eq!(tools_condition(&s), ToolsRoute::End);
    }

    #[test]
    fn history_validation_finds_unanswered_calls() {
        let mut h = vec![
            Message::human("q"),
            Message::ai_with_tool_calls("", vec![ToolCall::new("a", "t", json!({}))]),
        ];
        let err = validate_chat_history(&h).unwrap_err();
        assert!(
            matches!(&err, AgentError::InvalidChatHistory { tool_call_ids } if tool_call_ids == &["a"])
        );
        assert!(err.to_string().contains("INVALID_CHAT_HISTORY"));
        h.push(Message::tool("r", "a"));
        validate_chat_history(&h).unwrap();
    }

    #[test]
    fn history_validation_accepts_answers_in_any_place_and_order() {
        let call = |id: &str| ToolCall::new(id, "t", json!({}));
        let two = Message::ai_with_tool_calls("", vec![call("a"), call("b")]);
        // Answered right after, in the other order.
        let h = vec![
            two.clone(),
            Message::tool("rb", "b"),
            Message::tool("ra", "a"),
        ];
        validate_chat_history(&h).unwrap();
        // One answer further on, after another message: still answered.
        let h = vec![
            two.clone(),
            Message::tool("rb", "b"),
            Message::human("more?"),
            Message::tool("ra", "a"),
        ];
        validate_chat_history(&h).unwrap();
        // An answer before its call counts too (LangGraph checks ids only).
        let h = vec![
            Message::tool("ra", "a"),
            two.clone(),
            Message::tool("rb", "b"),
        ];
        validate_chat_history(&h).unwrap();
        // Unanswered calls are reported in the order of the history, at most 3.
        let many: Vec<ToolCall> = (0..20).map(|i| call(&format!("c{i}"))).collect();
        let mut h = vec![two, Message::tool("ra", "a")];
        h.push(Message::ai_with_tool_calls("", many));
        h.extend((1..20).map(|i| Message::tool("r", format!("c{i}"))));
        let err = validate_chat_history(&h).unwrap_err();
        assert!(
            matches!(&err, AgentError::InvalidChatHistory { tool_call_ids } if tool_call_ids == &["b", "c0"]),
            "{err:?}"
        );
    }
}
