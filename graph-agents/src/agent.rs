//! [`create_react_agent`]: the ReAct loop (model → tools → model ...) as an
//! ordinary graph built with the public DSL.

use crate::error::AgentError;
use crate::limit::{self, ToolCallLimit};
use crate::message::{AiMessage, Message};
use crate::model::{
    call_model, model_retry_policy, parse_structured, ChatModel, ChatRequest, ResponseFormat,
};
use crate::multi_agent::handoff::{messages_only, HandoffUpdate};
use crate::state::{
    AgentStateWithStructuredResponse, HasMessages, HasStructuredResponse, MessagesState,
};
use crate::tool::{IntoTools, ToolErrors, ToolSpec, Toolbox};
use crate::tool_node::{
    validate_chat_history, SharedToolCall, ToolCallNode, ToolCallRequest, ToolNode,
};
use graph_core::context::FromContext;
use graph_core::{
    node_fn, CompileOptions, CompiledGraph, Context, GraphError, Node, NodeFuture, NodeOptions,
    NodeOutput, NodeSpec, RetryPolicy, Route, Send, State, StateGraph, END, START,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::Arc;

/// The reply the agent gives instead of tool calls when the recursion limit would
/// cut the loop short (LangGraph's wording).
pub const NEED_MORE_STEPS: &str = "Sorry, need more steps to process this request.";

/// The node that calls the model: checks the history, asks the model with the
/// whole history and the tools, and appends its reply.
pub struct AgentNode<S> {
    model: Arc<dyn ChatModel>,
    tools: Arc<[ToolSpec]>,
    system: Option<Arc<str>>,
    name: Cow<'static, str>,
    author: Option<Arc<str>>,
    limits: Arc<[ToolCallLimit]>,
    _state: PhantomData<fn() -> S>,
}

impl<S> Clone for AgentNode<S> {
    fn clone(&self) -> Self {
        AgentNode {
            model: Arc::clone(&self.model),
            tools: Arc::clone(&self.tools),
            system: self.system.clone(),
            name: self.name.clone(),
            author: self.author.clone(),
            limits: Arc::clone(&self.limits),
            _state: PhantomData,
        }
    }
}

impl<S: HasMessages> AgentNode<S> {
    /// A node named `agent` calling `model`, offering it `tools`.
    pub fn new(model: Arc<dyn ChatModel>, tools: Arc<[ToolSpec]>) -> Self {
        AgentNode {
            model,
            tools,
            system: None,
            name: Cow::Borrowed("agent"),
            author: None,
            limits: Arc::new([]),
            _state: PhantomData,
        }
    }

    /// Puts `prompt` before the history in every model call.
    pub fn system_prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Signs every reply with `name` (the AI message's `name`), as LangGraph's
    /// agent does with its own name: in a multi-agent history, who said what.
    pub fn author(mut self, name: impl Into<Arc<str>>) -> Self {
        self.author = Some(name.into());
        self
    }

    /// Caps the tool calls of a turn: a reply over a limit has its calls
    /// answered (or the run stopped, or failed) as the [`ToolCallLimit`] says.
    pub fn tool_call_limits(mut self, limits: impl Into<Arc<[ToolCallLimit]>>) -> Self {
        self.limits = limits.into();
        self
    }
}

impl<S: HasMessages> NodeSpec for AgentNode<S> {
    type Input = S;

    fn name(&self) -> Cow<'static, str> {
        self.name.clone()
    }
}

// For a graph of any context type: the agent reads no typed context.
impl<S: HasMessages, C: ?Sized + 'static> Node<S, C> for AgentNode<S> {
    fn run(&self, input: Arc<S>, ctx: Context<C>) -> NodeFuture<S> {
        let ctx: Context = FromContext::from_context(ctx);
        let node = self.clone();
        NodeFuture::new(async move {
            let messages = input.messages();
            validate_chat_history(messages)?;
            let request = ChatRequest {
                system: node.system.as_deref(),
                messages,
                tools: &node.tools,
                response_format: None,
            };
            let reply = call_model(&*node.model, request, &ctx)
                .await
                .map_err(AgentError::into_node_error)?;
            // A tool step and another model call need two more supersteps.
            let reply = if reply.has_tool_calls() && ctx.remaining_steps() < 2 {
                Arc::new(AiMessage {
                    id: reply.id.clone(),
                    ..AiMessage::new(NEED_MORE_STEPS)
                })
            } else {
                reply
            };
            let mut added = limit::enforce(&node.limits, messages, &reply)?;
            // The reply goes into the history as the model handed it over
            // (shared), unless it is to be signed.
            let sign = |reply: Arc<AiMessage>| match &node.author {
                Some(author) => Arc::new(AiMessage {
                    name: Some(author.to_string()),
                    ..Arc::unwrap_or_clone(reply)
                }),
                None => reply,
            };
            for message in &mut added {
                if let Message::Ai(ai) = message {
                    *ai = sign(Arc::clone(ai));
                }
            }
            added.insert(0, Message::Ai(sign(reply)));
            Ok(NodeOutput::new().with_update(S::messages_update(added)))
        })
    }
}

/// The node of an agent with handoff tools that answers a handoff call and hands
/// control to the parent graph.
const HANDOFF: &str = "handoff";

/// Where the agent's router sends each kind of next step.
struct Targets {
    /// The tools node.
    tools: &'static str,
    /// The node answering handoff calls.
    handoff: Arc<[String]>,
    /// Back to the model (the calls of its reply are all answered already).
    model: &'static str,
    /// The model answered: END, or the node making the typed answer.
    done: &'static str,
}

/// Routes after the agent, on its last AI message and the answers after it (the
/// calls a [`ToolCallLimit`] blocked): `done` when it asked for no tools; the
/// `handoff` node when one call is a handoff; back to the model when every call
/// is answered; else the tools, as one `Send` per open call ([`AgentVersion::V2`],
/// answered concurrently) or one task for all ([`AgentVersion::V1`]).
fn route_tool_calls<S: HasMessages>(
    version: AgentVersion,
    to: Targets,
) -> impl Fn(&S) -> Vec<Route<&'static str>> {
    move |state: &S| {
        let messages = state.messages();
        let Some(at) = messages.iter().rposition(|m| m.as_ai().is_some()) else {
            return vec![Route::To(to.done)];
        };
        let Message::Ai(ai) = &messages[at] else {
            return vec![Route::To(to.done)];
        };
        if !ai.has_tool_calls() {
            return vec![Route::To(to.done)];
        }
        if ai.tool_calls.iter().any(|c| to.handoff.contains(&c.name)) {
            return vec![Route::To(HANDOFF)];
        }
        let answered = |id: &str| {
            messages[at + 1..]
                .iter()
                .filter_map(Message::as_tool)
                .any(|t| t.tool_call_id == id)
        };
        // Each call shares the AI message (no copy of its arguments).
        let valid = (0..ai.tool_calls.len())
            .filter(|&i| !answered(&ai.tool_calls[i].id))
            .filter_map(|i| SharedToolCall::new(Arc::clone(ai), i))
            .map(ToolCallRequest::Call);
        let invalid = ai
            .invalid_tool_calls
            .iter()
            .filter(|c| c.id.as_deref().is_none_or(|id| !answered(id)))
            .map(|c| ToolCallRequest::Invalid(c.clone()));
        let open: Vec<ToolCallRequest> = valid.chain(invalid).collect();
        if open.is_empty() {
            return vec![Route::To(to.model)];
        }
        match version {
            AgentVersion::V1 => vec![Route::To(to.tools)],
            AgentVersion::V2 => open
                .into_iter()
                .map(|request| Route::Send(Send::to_named(to.tools, request)))
                .collect(),
        }
    }
}

/// How a ReAct agent runs the tool calls of one model reply (LangGraph's
/// `version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AgentVersion {
    /// One `tools` task runs every call of the reply, concurrently, and writes
    /// all the answers at once (LangGraph's `"v1"`, a [`ToolNode`]).
    V1,
    /// One `tools` task per call, each sent with a `Send`, so each call is a
    /// task of its own: its own `updates` event, its own retry and interrupt
    /// (LangGraph's `"v2"`, the default, a [`ToolCallNode`]). The answers are in
    /// the state in the order of the calls.
    #[default]
    V2,
}

/// Builds a ReAct agent: a model that calls tools until it answers.
///
/// The graph is `START → agent`, then after `agent` one task of `tools` per tool
/// call of its reply (LangGraph's "v2" dispatch), `tools → agent`, and END once the
/// model replies without tool calls. Tool errors go back to the model as error
/// messages; model errors worth retrying (rate limits, 5xx, dropped streams) are
/// retried by the agent node's [`RetryPolicy`].
///
/// ```
/// use graph_agents::{create_react_agent, AiMessage, Message, MessagesState, ToolCall, Tool};
/// use graph_agents::model::FakeChatModel;
/// use std::borrow::Cow;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Query { city: String }
///
/// struct Weather;
/// impl Tool for Weather {
///     type Args = Query;
///     type Output = String;
///     type Error = std::convert::Infallible;
///     fn name(&self) -> Cow<'static, str> { "weather".into() }
///     fn description(&self) -> Cow<'static, str> { "Today's weather in a city.".into() }
///     async fn call(&self, q: Query) -> Result<String, Self::Error> { Ok(format!("sunny in {}", q.city)) }
/// }
///
/// let model = FakeChatModel::new(vec![
///     AiMessage::new("").with_tool_call(ToolCall::new("c1", "weather", serde_json::json!({"city": "Paris"}))),
///     AiMessage::new("It is sunny in Paris."),
/// ]);
/// let agent = create_react_agent(model, Weather)
///     .system_prompt("You answer weather questions.")
///     .compile()?;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let out = agent
///     .invoke(MessagesState::update().messages(vec![Message::human("Weather in Paris?")]), &Default::default())
///     .await?;
/// let texts: Vec<&str> = out.messages.iter().map(Message::text).collect();
/// assert_eq!(texts, ["Weather in Paris?", "", "sunny in Paris", "It is sunny in Paris."]);
/// # Ok::<(), graph_core::GraphError>(())
/// # })?;
/// # Ok::<(), graph_core::GraphError>(())
/// ```
pub fn create_react_agent<M: ChatModel, T>(model: M, tools: impl IntoTools<T>) -> ReactAgent {
    ReactAgent::from_parts(Arc::new(model), Toolbox::new(tools))
}

/// The builder [`create_react_agent`] returns; `S` is the graph state
/// ([`MessagesState`] unless [`with_state`](ReactAgent::with_state) changes it).
pub struct ReactAgent<S: State = MessagesState> {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) tools: Toolbox,
    pub(crate) system: Option<Arc<str>>,
    pub(crate) name: Option<Arc<str>>,
    approval: bool,
    retry: Option<RetryPolicy>,
    pub(crate) handoff: HandoffUpdate<S>,
    structured: Option<StructuredStep<S>>,
    pre_model_hook: Option<Hook<S>>,
    post_model_hook: Option<Hook<S>>,
    interrupt_before_tools: bool,
    version: AgentVersion,
    limits: Vec<ToolCallLimit>,
}

/// A node fn run before or after the model ([`ReactAgent::pre_model_hook`]).
type Hook<S> = Arc<dyn Fn(&S) -> <S as State>::Update + std::marker::Send + Sync>;

/// The nodes of the hooks, as LangGraph names them.
const PRE_MODEL_HOOK: &str = "pre_model_hook";
const POST_MODEL_HOOK: &str = "post_model_hook";

/// How an agent asked for a typed answer makes it: the format sent, and how the
/// reply becomes the state's `structured_response`.
struct StructuredStep<S: State> {
    format: Arc<ResponseFormat>,
    parse: fn(&AiMessage) -> Result<S::Update, AgentError>,
}

impl<S: State> Clone for StructuredStep<S> {
    fn clone(&self) -> Self {
        StructuredStep {
            format: Arc::clone(&self.format),
            parse: self.parse,
        }
    }
}

fn parse_into<S: HasStructuredResponse<T>, T: DeserializeOwned>(
    reply: &AiMessage,
) -> Result<S::Update, AgentError> {
    parse_structured::<T>(reply).map(S::structured_response_update)
}

/// The node that asks the model, once the agent is done, for its answer as a
/// typed value (LangGraph's `generate_structured_response`): the history without
/// the system prompt, with the format; the history is left as it is.
struct StructuredResponseNode<S: State> {
    model: Arc<dyn ChatModel>,
    step: StructuredStep<S>,
}

impl<S: HasMessages> NodeSpec for StructuredResponseNode<S> {
    type Input = S;

    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(STRUCTURED)
    }
}

impl<S: HasMessages, C: ?Sized + 'static> Node<S, C> for StructuredResponseNode<S> {
    fn run(&self, input: Arc<S>, _ctx: Context<C>) -> NodeFuture<S> {
        let model = Arc::clone(&self.model);
        let step = self.step.clone();
        NodeFuture::new(async move {
            let request = ChatRequest::new(input.messages()).response_format(&step.format);
            let reply = model
                .generate(request)
                .await
                .map_err(AgentError::into_node_error)?;
            let update = (step.parse)(&reply)?;
            Ok(NodeOutput::new().with_update(update))
        })
    }
}

/// The node of an agent asked for a typed answer that makes it.
const STRUCTURED: &str = "generate_structured_response";

impl ReactAgent<MessagesState> {
    /// Asks for a typed answer: once the model answers without tool calls, one
    /// more model call with `T`'s JSON schema
    /// ([`ChatModel::with_structured_output`]; OpenAI's `response_format:
    /// json_schema`) fills `structured_response` of the
    /// [`AgentStateWithStructuredResponse`] the agent now runs on, as LangGraph's
    /// `response_format` does (the call gets the history without the system
    /// prompt). A reply that does not fit `T` fails the run with
    /// [`AgentError::StructuredOutput`], which carries the raw reply.
    ///
    /// ```
    /// use graph_agents::{create_react_agent, AiMessage, Message};
    /// use graph_agents::model::FakeChatModel;
    ///
    /// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { ok: bool }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let model = FakeChatModel::new(vec![AiMessage::new("Looks fine."), AiMessage::new(r#"{"ok": true}"#)]);
    /// let agent = create_react_agent(model, ()).response_format::<Verdict>().compile()?;
    /// let input = graph_agents::AgentStateWithStructuredResponse::update().messages(vec![Message::human("ok?")]);
    /// let out = agent.invoke(input, &Default::default()).await?;
    /// assert_eq!(out.structured_response, Some(Verdict { ok: true }));
    /// assert_eq!(out.messages.len(), 2, "the history is left as it is");
    /// # Ok::<(), graph_core::GraphError>(())
    /// # })?;
    /// # Ok::<(), graph_core::GraphError>(())
    /// ```
    pub fn response_format<T>(self) -> ReactAgent<AgentStateWithStructuredResponse<T>>
    where
        T: DeserializeOwned + JsonSchema + Serialize + Clone + std::marker::Send + Sync + 'static,
    {
        self.with_state().structured_response::<T>()
    }
}

impl<S: HasMessages> ReactAgent<S> {
    /// An agent on an erased model and a ready toolbox, with the defaults of
    /// [`create_react_agent`].
    pub(crate) fn from_parts(model: Arc<dyn ChatModel>, tools: Toolbox) -> Self {
        ReactAgent {
            model,
            tools,
            system: None,
            name: None,
            approval: false,
            retry: Some(model_retry_policy()),
            handoff: messages_only::<S>,
            structured: None,
            pre_model_hook: None,
            post_model_hook: None,
            interrupt_before_tools: false,
            version: AgentVersion::default(),
            limits: Vec::new(),
        }
    }

    /// Puts `prompt` as a system message before the history in every model call.
    pub fn system_prompt(mut self, prompt: impl Into<Arc<str>>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Names the agent: its replies are signed with the name (the AI message's
    /// `name`), and a multi-agent graph
    /// ([`create_supervisor`](crate::multi_agent::create_supervisor),
    /// [`create_swarm`](crate::multi_agent::create_swarm)) runs it as the node of
    /// that name.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The agent's name, if it has one.
    pub fn agent_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The agent's tools.
    pub fn toolbox(&self) -> &Toolbox {
        &self.tools
    }

    /// Asks a human before each tool call: the run pauses with a
    /// [`ToolApprovalRequest`](crate::ToolApprovalRequest) interrupt per call and
    /// resumes with a [`ToolApproval`](crate::ToolApproval) (`Command::resume`). A
    /// rejected call is answered with an error message, so the model learns of it.
    /// Needs a checkpointer ([`compile_with`](Self::compile_with)).
    pub fn require_approval(mut self, yes: bool) -> Self {
        self.approval = yes;
        self
    }

    /// What happens when a tool fails (default: the model gets the error).
    pub fn tool_errors(mut self, errors: ToolErrors) -> Self {
        self.tools = self.tools.with_errors(errors);
        self
    }

    /// The retry policy of the agent node (default: [`model_retry_policy`]);
    /// `None` never retries.
    pub fn retry_policy(mut self, policy: Option<RetryPolicy>) -> Self {
        self.retry = policy;
        self
    }

    /// Runs the agent on another state type (one with more fields, say).
    pub fn with_state<S2: HasMessages>(self) -> ReactAgent<S2> {
        ReactAgent {
            model: self.model,
            tools: self.tools,
            system: self.system,
            name: self.name,
            approval: self.approval,
            retry: self.retry,
            handoff: messages_only::<S2>,
            structured: None,
            pre_model_hook: None,
            post_model_hook: None,
            interrupt_before_tools: self.interrupt_before_tools,
            version: self.version,
            limits: self.limits,
        }
    }

    /// Runs `hook` (a node named `pre_model_hook`) before every model call; its
    /// update is applied first, e.g. to trim or summarise the history with
    /// [`Message::remove`] (LangGraph's `pre_model_hook`, without its
    /// `llm_input_messages`: what the model sees is the state).
    pub fn pre_model_hook(
        mut self,
        hook: impl Fn(&S) -> S::Update + std::marker::Send + Sync + 'static,
    ) -> Self {
        self.pre_model_hook = Some(Arc::new(hook));
        self
    }

    /// Runs `hook` (a node named `post_model_hook`) after every model call,
    /// before the agent routes on the last message: guardrails, validation, a
    /// human check (LangGraph's `post_model_hook`).
    pub fn post_model_hook(
        mut self,
        hook: impl Fn(&S) -> S::Update + std::marker::Send + Sync + 'static,
    ) -> Self {
        self.post_model_hook = Some(Arc::new(hook));
        self
    }

    /// Pauses before the tools run (a static breakpoint on `tools`, LangGraph's
    /// `interrupt_before=["tools"]`): the run returns with the model's tool
    /// calls in the state, and `invoke(None, ..)` runs them. Needs a
    /// checkpointer ([`compile_with`](Self::compile_with)).
    pub fn interrupt_before_tools(mut self, yes: bool) -> Self {
        self.interrupt_before_tools = yes;
        self
    }

    /// How the tool calls of a reply run: one task per call ([`AgentVersion::V2`],
    /// the default) or one task for all ([`AgentVersion::V1`]). Either way the
    /// answers are in the state in the order of the calls, and
    /// [`require_approval`](Self::require_approval) asks about each call in turn.
    pub fn version(mut self, version: AgentVersion) -> Self {
        self.version = version;
        self
    }

    /// Caps the tool calls per turn (the calls since the last human message), as
    /// langchain's `ToolCallLimitMiddleware` does per run; call it again to add
    /// a limit (of one tool, say). See [`crate::limit`].
    ///
    /// For the number of model → tools rounds, there is the run's
    /// `recursion_limit`: near it the agent answers [`NEED_MORE_STEPS`] instead
    /// of asking for tools (each round takes two steps), as LangGraph's does.
    pub fn tool_call_limit(mut self, limit: ToolCallLimit) -> Self {
        self.limits.push(limit);
        self
    }

    /// Asks for a typed answer in a state of your own: once the model answers
    /// without tool calls, one more model call with `T`'s JSON schema
    /// ([`ChatModel::with_structured_output`]) fills the state's
    /// `structured_response` ([`HasStructuredResponse`]). For the ready state,
    /// use [`response_format`](ReactAgent::response_format).
    pub fn structured_response<T>(mut self) -> Self
    where
        S: HasStructuredResponse<T>,
        T: DeserializeOwned + JsonSchema,
    {
        self.structured = Some(StructuredStep {
            format: Arc::new(ResponseFormat::of::<T>()),
            parse: parse_into::<S, T>,
        });
        self
    }

    /// The uncompiled graph, to add nodes or edges before compiling.
    pub fn graph(self) -> StateGraph<S> {
        let mut agent =
            AgentNode::<S>::new(Arc::clone(&self.model), Arc::clone(self.tools.specs()));
        if let Some(system) = self.system {
            agent = agent.system_prompt(system);
        }
        if let Some(name) = self.name {
            agent = agent.author(name);
        }
        agent = agent.tool_call_limits(self.limits);
        let mut options = NodeOptions::new();
        if let Some(policy) = self.retry {
            options = options.retry(policy);
        }
        let agent_options = options.clone();
        let handoffs: Arc<[String]> = self.tools.handoffs().map(|(t, _)| t.to_owned()).collect();
        let done = if self.structured.is_some() {
            STRUCTURED
        } else {
            END
        };
        let structured = self.structured.map(|step| StructuredResponseNode::<S> {
            model: Arc::clone(&self.model),
            step,
        });
        let handoff = (!handoffs.is_empty()).then(|| {
            ToolNode::<S>::from_toolbox(self.tools.clone())
                .named(HANDOFF)
                .on_handoff(self.handoff)
        });
        let model_entry = if self.pre_model_hook.is_some() {
            PRE_MODEL_HOOK
        } else {
            "agent"
        };
        let targets = Targets {
            tools: "tools",
            handoff: handoffs,
            model: model_entry,
            done,
        };
        let router = route_tool_calls::<S>(self.version, targets);
        let graph = StateGraph::<S>::new().add_node_with(agent, agent_options);
        let graph = match self.version {
            AgentVersion::V1 => graph.add_node(
                ToolNode::<S>::from_toolbox(self.tools)
                    .require_approval(self.approval)
                    .on_handoff(self.handoff),
            ),
            AgentVersion::V2 => {
                graph.add_node(ToolCallNode::<S>::new(self.tools).require_approval(self.approval))
            }
        };
        let mut graph = graph
            .add_edge(START, model_entry)
            .add_edge("tools", model_entry);
        if let Some(hook) = self.pre_model_hook {
            graph = graph
                .add_node(node_fn(PRE_MODEL_HOOK, move |s: &S| {
                    NodeOutput::new().with_update(hook(s))
                }))
                .add_edge(PRE_MODEL_HOOK, "agent");
        }
        graph = match self.post_model_hook {
            Some(hook) => graph
                .add_node(node_fn(POST_MODEL_HOOK, move |s: &S| {
                    NodeOutput::new().with_update(hook(s))
                }))
                .add_edge("agent", POST_MODEL_HOOK)
                .add_conditional_edges(POST_MODEL_HOOK, router),
            None => graph.add_conditional_edges("agent", router),
        };
        if self.interrupt_before_tools {
            graph = graph.interrupt_before("tools");
        }
        let graph = match structured {
            Some(node) => graph.add_node_with(node, options),
            None => graph,
        };
        match handoff {
            Some(node) => graph.add_node(node),
            None => graph,
        }
    }

    /// Compiles the agent without a checkpointer.
    pub fn compile(self) -> Result<CompiledGraph<S>, GraphError> {
        self.graph().compile()
    }

    /// Compiles the agent with a checkpointer (threads persist, and tool
    /// approval can pause and resume), or with [`CompileOptions`]: a
    /// checkpointer, a store (for the [`memory`](crate::memory) tools), a cache.
    pub fn compile_with(
        self,
        options: impl Into<CompileOptions>,
    ) -> Result<CompiledGraph<S>, GraphError> {
        self.graph().compile_with(options)
    }
}
