//! Tools: the [`Tool`] trait (typed arguments with a JSON schema), the erased
//! [`BoxedTool`] a node holds, and how a tool call becomes a [`ToolMessage`].

use crate::error::AgentError;
use crate::message::{InvalidToolCall, ToolCall, ToolMessage, ToolStatus};
use futures::future::BoxFuture;
use graph_core::Context;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// A function the model can call, with typed arguments.
///
/// The arguments are deserialised from the JSON the model sends; their JSON
/// schema (from `schemars`) tells the model what to send. The `#[tool]` attribute
/// of the `stategraph` facade implements this trait for a fn; implement it by hand
/// for tools that hold state (a client, a connection pool).
///
/// ```
/// use graph_agents::Tool;
/// use std::borrow::Cow;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct AddArgs { a: i64, b: i64 }
///
/// struct Add;
///
/// impl Tool for Add {
///     type Args = AddArgs;
///     type Output = i64;
///     type Error = std::convert::Infallible;
///
///     fn name(&self) -> Cow<'static, str> { "add".into() }
///     fn description(&self) -> Cow<'static, str> { "Adds two integers.".into() }
///     async fn call(&self, args: AddArgs) -> Result<i64, Self::Error> { Ok(args.a + args.b) }
/// }
///
/// let spec = graph_agents::BoxedTool::new(Add).spec().clone();
/// assert_eq!(spec.name, "add");
/// assert_eq!(spec.parameters["required"], serde_json::json!(["a", "b"]));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "not a tool",
    note = "put `#[tool]` on a fn whose parameters are the tool's arguments, or implement `Tool` by hand"
)]
pub trait Tool: Send + Sync + 'static {
    /// The arguments, deserialised from the model's JSON.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The result; a `String` is sent to the model as it is, anything else as JSON.
    type Output: Serialize + Send + 'static;
    /// The error; its message is sent to the model (see [`ToolErrors`]).
    type Error: fmt::Display + Send + 'static;

    /// The name the model calls the tool by.
    fn name(&self) -> Cow<'static, str>;

    /// What the tool does, for the model.
    fn description(&self) -> Cow<'static, str>;

    /// Runs the tool.
    fn call(
        &self,
        args: Self::Args,
    ) -> impl Future<Output = Result<Self::Output, Self::Error>> + Send;
}

/// What the model is told about a tool: name, description, JSON schema of the
/// arguments (OpenAI's `function` object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON schema of its arguments (an object schema).
    pub parameters: Value,
}

impl ToolSpec {
    /// The spec of a tool whose arguments are `A`.
    pub fn of<A: JsonSchema>(name: impl Into<String>, description: impl Into<String>) -> Self {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
        });
        let schema = settings.into_generator().into_root_schema_for::<A>();
        let mut parameters = schema.to_value();
        if let Value::Object(map) = &mut parameters {
            map.remove("$schema");
            map.remove("title");
            map.remove("description");
        }
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// A tool's erased call: the model's arguments, and the context of the task
/// running it (`None` when called directly, [`BoxedTool::call`]). The arguments
/// are borrowed: a typed tool reads its own type from them, so a tool node
/// answering a call need not copy the call's arguments.
type CallFn = dyn Fn(&Value, Option<&Context>) -> BoxFuture<'static, Result<String, AgentError>>
    + Send
    + Sync;

/// A tool with its types erased, ready to be called with JSON arguments.
#[derive(Clone)]
pub struct BoxedTool {
    spec: Arc<ToolSpec>,
    call: Arc<CallFn>,
    /// The agent a handoff tool moves control to
    /// ([`create_handoff_tool`](crate::multi_agent::create_handoff_tool)).
    handoff: Option<Arc<str>>,
}

impl fmt::Debug for BoxedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoxedTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

impl BoxedTool {
    /// Erases `tool`'s types.
    pub fn new<T: Tool>(tool: T) -> Self {
        let spec = ToolSpec::of::<T::Args>(tool.name(), tool.description());
        let name: Arc<str> = spec.name.as_str().into();
        let tool = Arc::new(tool);
        let call = move |args: &Value,
                         _: Option<&Context>|
              -> BoxFuture<'static, Result<String, AgentError>> {
            // Read from the arguments in place, before the future (which then
            // needs no copy of them).
            let parsed = match <T::Args as serde::Deserialize>::deserialize(args) {
                Ok(a) => a,
                Err(e) => {
                    return Box::pin(std::future::ready(Err(AgentError::InvalidToolArgs {
                        tool: name.to_string(),
                        args: args.to_string(),
                        reason: e.to_string(),
                    })))
                }
            };
            let tool = Arc::clone(&tool);
            let name = Arc::clone(&name);
            Box::pin(async move {
                match tool.call(parsed).await {
                    Ok(out) => into_content(out),
                    Err(e) => Err(AgentError::ToolFailed {
                        tool: name.to_string(),
                        message: e.to_string(),
                    }),
                }
            })
        };
        BoxedTool {
            spec: Arc::new(spec),
            call: Arc::new(call),
            handoff: None,
        }
    }

    /// A tool known only at run time (say, one an MCP server lists): its spec,
    /// and a fn from the model's JSON arguments to the content for the model.
    ///
    /// ```
    /// use graph_agents::{BoxedTool, ToolSpec};
    ///
    /// let spec = ToolSpec {
    ///     name: "echo".into(),
    ///     description: "Repeats the text.".into(),
    ///     parameters: serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    /// };
    /// let echo = BoxedTool::from_fn(spec, |args: serde_json::Value| async move {
    ///     Ok(args["text"].as_str().unwrap_or_default().to_owned())
    /// });
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// assert_eq!(echo.call(serde_json::json!({"text": "hi"})).await.unwrap(), "hi");
    /// # });
    /// ```
    pub fn from_fn<F, Fut>(spec: ToolSpec, call: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, AgentError>> + Send + 'static,
    {
        let call = move |args: &Value,
                         _: Option<&Context>|
              -> BoxFuture<'static, Result<String, AgentError>> {
            Box::pin(call(args.clone()))
        };
        BoxedTool {
            spec: Arc::new(spec),
            call: Arc::new(call),
            handoff: None,
        }
    }

    /// A tool that reads the context of the task running it: the graph's store
    /// ([`Context::store`]), the run's config and context value. A
    /// [`ToolNode`](crate::ToolNode) or an agent gives it theirs; called
    /// directly ([`call`](Self::call)), it fails with
    /// [`AgentError::NeedsContext`].
    ///
    /// ```
    /// use graph_agents::{AgentError, BoxedTool, ToolSpec};
    ///
    /// let whoami = BoxedTool::from_fn_in_context(
    ///     ToolSpec::of::<serde_json::Value>("whoami", "The user's id."),
    ///     |_args, ctx| async move {
    ///         let user = ctx.config().configurable().get("user_id").cloned();
    ///         Ok(user.map(|u| u.to_string()).unwrap_or_default())
    ///     },
    /// );
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let err = whoami.call(serde_json::json!({})).await.unwrap_err();
    /// assert!(matches!(err, AgentError::NeedsContext { .. }));
    /// # });
    /// ```
    pub fn from_fn_in_context<F, Fut>(spec: ToolSpec, call: F) -> Self
    where
        F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, AgentError>> + Send + 'static,
    {
        let name: Arc<str> = spec.name.as_str().into();
        let call = move |args: &Value,
                         ctx: Option<&Context>|
              -> BoxFuture<'static, Result<String, AgentError>> {
            match ctx {
                Some(ctx) => Box::pin(call(args.clone(), ctx.clone())),
                None => Box::pin(std::future::ready(Err(AgentError::NeedsContext {
                    tool: name.to_string(),
                }))),
            }
        };
        BoxedTool {
            spec: Arc::new(spec),
            call: Arc::new(call),
            handoff: None,
        }
    }

    /// A tool that only answers `content`: the erased form of a handoff tool, whose
    /// call the [`ToolNode`](crate::ToolNode) turns into a command for the parent graph.
    pub(crate) fn handoff(spec: ToolSpec, agent: Arc<str>, content: String) -> Self {
        let content: Arc<str> = content.into();
        let call = move |_: &Value,
                         _: Option<&Context>|
              -> BoxFuture<'static, Result<String, AgentError>> {
            let content = content.to_string();
            Box::pin(std::future::ready(Ok(content)))
        };
        BoxedTool {
            spec: Arc::new(spec),
            call: Arc::new(call),
            handoff: Some(agent),
        }
    }

    /// The agent this tool hands control to, when it is a handoff tool.
    pub fn handoff_target(&self) -> Option<&str> {
        self.handoff.as_deref()
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// What the model is told about the tool.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Calls the tool with JSON arguments; returns the content for the model.
    pub fn call(&self, args: Value) -> BoxFuture<'static, Result<String, AgentError>> {
        (self.call)(&args, None)
    }

    /// Calls the tool with JSON arguments in the context of a task (what a
    /// [`ToolNode`](crate::ToolNode) does); returns the content for the model.
    pub fn call_in(
        &self,
        args: Value,
        ctx: &Context,
    ) -> BoxFuture<'static, Result<String, AgentError>> {
        (self.call)(&args, Some(ctx))
    }
}

/// A tool's output as message content: a `String` as it is, anything else as JSON.
fn into_content<O: Serialize + 'static>(out: O) -> Result<String, AgentError> {
    let mut slot = Some(out);
    if let Some(s) = (&mut slot as &mut dyn Any).downcast_mut::<Option<String>>() {
        return Ok(s.take().unwrap_or_default());
    }
    match serde_json::to_value(&slot) {
        Ok(Value::String(s)) => Ok(s),
        Ok(v) => Ok(v.to_string()),
        Err(e) => Err(AgentError::ToolFailed {
            tool: String::new(),
            message: format!("the tool's output cannot be serialised: {e}"),
        }),
    }
}

/// The argument of the marker fn `#[tool]` generates; you never call that fn.
#[derive(Debug, Clone, Copy)]
pub struct ToolMarker(pub(crate) ());

/// Marks a tool passed as a value.
pub enum ByValue {}
/// Marks a tool passed as the marker fn of a `#[tool]`.
pub struct ByFn<T>(std::marker::PhantomData<fn() -> T>);
/// Marks an already erased tool.
pub enum Erased {}

/// A tool given as a value, as the name of a `#[tool]` fn, or erased.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a `#[tool]` fn or a `Tool` value",
    note = "put `#[tool]` on the fn, or implement `Tool` for the type"
)]
pub trait IntoTool<M> {
    /// Erases the tool.
    fn into_tool(self) -> BoxedTool;
}

impl<T: Tool> IntoTool<ByValue> for T {
    fn into_tool(self) -> BoxedTool {
        BoxedTool::new(self)
    }
}

impl<F: Fn(ToolMarker) -> T, T: Tool> IntoTool<ByFn<T>> for F {
    fn into_tool(self) -> BoxedTool {
        BoxedTool::new(self(ToolMarker(())))
    }
}

impl IntoTool<Erased> for BoxedTool {
    fn into_tool(self) -> BoxedTool {
        self
    }
}

/// One tool, a tuple of tools, or a `Vec<BoxedTool>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool, nor a tuple of tools",
    label = "expected a `#[tool]` fn, a `Tool` value, or a tuple of them",
    note = "put `#[tool]` on the fn (its doc comment is the description the model reads), or implement `Tool` for the type; in a tuple of tools, such as `(search, add)`, every element must be one"
)]
pub trait IntoTools<M> {
    /// The erased tools, in order.
    fn into_tools(self) -> Vec<BoxedTool>;
}

/// Marks a single tool in [`IntoTools`].
pub struct One<M>(std::marker::PhantomData<fn() -> M>);

impl<M, T: IntoTool<M>> IntoTools<One<M>> for T {
    fn into_tools(self) -> Vec<BoxedTool> {
        vec![self.into_tool()]
    }
}

impl IntoTools<Vec<Erased>> for Vec<BoxedTool> {
    fn into_tools(self) -> Vec<BoxedTool> {
        self
    }
}

impl IntoTools<()> for () {
    fn into_tools(self) -> Vec<BoxedTool> {
        Vec::new()
    }
}

macro_rules! tuple_tools {
    ($($t:ident $m:ident),+) => {
        impl<$($t: IntoTool<$m>, $m),+> IntoTools<($($m,)+)> for ($($t,)+) {
            #[allow(non_snake_case)]
            fn into_tools(self) -> Vec<BoxedTool> {
                let ($($t,)+) = self;
                vec![$($t.into_tool()),+]
            }
        }
    };
}

tuple_tools!(A MA);
tuple_tools!(A MA, B MB);
tuple_tools!(A MA, B MB, C MC);
tuple_tools!(A MA, B MB, C MC, D MD);
tuple_tools!(A MA, B MB, C MC, D MD, E ME);
tuple_tools!(A MA, B MB, C MC, D MD, E ME, F MF);
tuple_tools!(A MA, B MB, C MC, D MD, E ME, F MF, G MG);
tuple_tools!(A MA, B MB, C MC, D MD, E ME, F MF, G MG, H MH);

/// What happens when a tool call fails (bad arguments, or the tool's own error).
///
/// Calls of unknown tools and arguments that are not JSON are always answered with
/// an error message: they are the model's mistakes, and it can correct them.
#[derive(Clone, Default)]
pub enum ToolErrors {
    /// The error becomes the tool message's content, with status `error`, so the
    /// model sees it and can try again (LangGraph's default).
    #[default]
    AsMessage,
    /// The error becomes the content returned by this fn.
    Format(Arc<dyn Fn(&AgentError) -> String + Send + Sync>),
    /// The node fails with the error (the run stops, or the node's retry policy
    /// runs it again).
    Fail,
}

impl fmt::Debug for ToolErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolErrors::AsMessage => "AsMessage",
            ToolErrors::Format(_) => "Format(..)",
            ToolErrors::Fail => "Fail",
        })
    }
}

/// A set of tools by name, and the policy for their errors: what turns tool calls
/// into tool messages, for [`ToolNode`](crate::ToolNode) and the ReAct agent.
#[derive(Clone, Debug)]
pub struct Toolbox {
    tools: Arc<HashMap<String, BoxedTool>>,
    specs: Arc<[ToolSpec]>,
    errors: ToolErrors,
}

impl Toolbox {
    /// The tools (a later tool with the same name replaces an earlier one).
    pub fn new<M>(tools: impl IntoTools<M>) -> Self {
        let tools = tools.into_tools();
        let mut specs: Vec<ToolSpec> = Vec::with_capacity(tools.len());
        let mut by_name = HashMap::with_capacity(tools.len());
        for tool in tools {
            specs.retain(|s| s.name != tool.name());
            specs.push(tool.spec().clone());
            by_name.insert(tool.name().to_owned(), tool);
        }
        Toolbox {
            tools: Arc::new(by_name),
            specs: specs.into(),
            errors: ToolErrors::default(),
        }
    }

    /// Sets what happens when a tool call fails.
    pub fn with_errors(mut self, errors: ToolErrors) -> Self {
        self.errors = errors;
        self
    }

    /// What the model is told about the tools, in the order given.
    pub fn specs(&self) -> &Arc<[ToolSpec]> {
        &self.specs
    }

    /// The handoff tools, as (tool name, agent) pairs in the order given.
    pub fn handoffs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.specs.iter().filter_map(|s| {
            let tool = self.tools.get(&s.name)?;
            Some((tool.name(), tool.handoff_target()?))
        })
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&BoxedTool> {
        self.tools.get(name)
    }

    /// Runs one tool call; the result answers it (`tool_call_id` = the call's id).
    /// Fails only under [`ToolErrors::Fail`], for bad arguments or a failing tool.
    pub async fn run(&self, call: &ToolCall) -> Result<ToolMessage, AgentError> {
        self.run_with(call, None).await
    }

    /// Runs one tool call in the context of a task, as
    /// [`ToolNode`](crate::ToolNode) does: tools made with
    /// [`BoxedTool::from_fn_in_context`] read it.
    pub async fn run_in(&self, call: &ToolCall, ctx: &Context) -> Result<ToolMessage, AgentError> {
        self.run_with(call, Some(ctx)).await
    }

    async fn run_with(
        &self,
        call: &ToolCall,
        ctx: Option<&Context>,
    ) -> Result<ToolMessage, AgentError> {
        let Some(tool) = self.tools.get(&call.name) else {
            let mut available: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            available.sort_unstable();
            let error = AgentError::UnknownTool {
                name: call.name.clone(),
                available: available.join(", "),
            };
            return Ok(error_message(call.id.clone(), Some(&call.name), &error));
        };
        match (tool.call)(&call.args, ctx).await {
            Ok(content) => Ok(ToolMessage {
                content,
                id: None,
                name: Some(call.name.clone()),
                tool_call_id: call.id.clone(),
                status: ToolStatus::Success,
            }),
            // A graph set up wrong fails the run, whatever the policy: the
            // model cannot fix it.
            Err(
                error @ (AgentError::NeedsContext { .. }
                | AgentError::Store { .. }
                | AgentError::MissingConfigurable { .. }),
            ) => Err(error),
            Err(error) => match &self.errors {
                ToolErrors::Fail => Err(error),
                ToolErrors::AsMessage => {
                    Ok(error_message(call.id.clone(), Some(&call.name), &error))
                }
                ToolErrors::Format(f) => {
                    let mut m = error_message(call.id.clone(), Some(&call.name), &error);
                    m.content = f(&error);
                    Ok(m)
                }
            },
        }
    }

    /// Answers a call whose arguments were not JSON with an error message, so that
    /// the history stays valid and the model can correct itself.
    pub fn answer_invalid(&self, call: &InvalidToolCall) -> ToolMessage {
        let error = AgentError::MalformedToolCall {
            tool: call.name.clone().unwrap_or_default(),
            args: call.args.clone().unwrap_or_default(),
            reason: call
                .error
                .clone()
                .unwrap_or_else(|| "invalid JSON".to_owned()),
        };
        error_message(
            call.id.clone().unwrap_or_default(),
            call.name.as_deref(),
            &error,
        )
    }
}

fn error_message(tool_call_id: String, name: Option<&str>, error: &AgentError) -> ToolMessage {
    ToolMessage {
        content: error.to_string(),
        id: None,
        name: name.map(str::to_owned),
        tool_call_id,
        status: ToolStatus::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    struct EchoArgs {
        /// What to echo.
        text: String,
        #[serde(default)]
        times: Option<u32>,
    }

    struct Echo;

    impl Tool for Echo {
        type Args = EchoArgs;
        type Output = String;
        type Error = String;

        fn name(&self) -> Cow<'static, str> {
            "echo".into()
        }

        fn description(&self) -> Cow<'static, str> {
            "Repeats text.".into()
        }

        async fn call(&self, args: EchoArgs) -> Result<String, String> {
            if args.text == "fail" {
                return Err("cannot echo that".into());
            }
            Ok(args.text.repeat(args.times.unwrap_or(1) as usize))
        }
    }

    #[derive(Deserialize, JsonSchema)]
    struct NoArgs {}

    struct Stats;

    impl Tool for Stats {
        type Args = NoArgs;
        type Output = Value;
        type Error = std::convert::Infallible;

        fn name(&self) -> Cow<'static, str> {
            "stats".into()
        }

        fn description(&self) -> Cow<'static, str> {
            "Numbers.".into()
        }

        async fn call(&self, _: NoArgs) -> Result<Value, Self::Error> {
            Ok(json!({"n": 1}))
        }
    }

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall::new("c1", name, args)
    }

    #[tokio::test]
    async fn a_call_becomes_a_tool_message_answering_it() {
        let tools = Toolbox::new((Echo, Stats));
        let m = tools
            .run(&call("echo", json!({"text": "ab", "times": 2})))
            .await
            .unwrap();
        assert_eq!(
            (m.content.as_str(), m.tool_call_id.as_str(), m.status),
            ("abab", "c1", ToolStatus::Success)
        );
        assert_eq!(m.name.as_deref(), Some("echo"));
        let m = tools.run(&call("stats", json!({}))).await.unwrap();
        assert_eq!(m.content, r#"{"n":1}"#);
    }

    /// Shouts.
    #[graph_macros::tool]
    fn shout(text: String) -> String {
        text.to_uppercase()
    }

    // Inside this crate `#[tool]` finds itself as `crate` (proc-macro-crate's
    // `Itself`, in the library's own compilation).
    #[tokio::test]
    async fn a_tool_fn_of_this_crate_expands_to_crate_paths() {
        let tools = Toolbox::new(shout);
        let m = tools
            .run(&call("shout", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(m.content, "HI");
    }

    #[tokio::test]
    async fn unknown_tools_and_bad_args_are_answered_with_errors() {
        let tools = Toolbox::new((Echo, Stats));
        let m = tools.run(&call("nope", json!({}))).await.unwrap();
        assert_eq!(m.status, ToolStatus::Error);
        assert_eq!(
            m.content,
            "Error: nope is not a valid tool, try one of [echo, stats]."
        );
        let m = tools.run(&call("echo", json!({"text": 5}))).await.unwrap();
        assert_eq!(m.status, ToolStatus::Error);
        assert!(m.content.contains("invalid arguments"), "{}", m.content);
        assert!(
            m.content.contains("invalid type: integer `5`"),
            "{}",
            m.content
        );
        let m = tools
            .run(&call("echo", json!("not an object")))
            .await
            .unwrap();
        assert_eq!(m.status, ToolStatus::Error);
        let m = tools
            .run(&call("echo", json!({"text": "fail"})))
            .await
            .unwrap();
        assert_eq!(
            m.content,
            "Error: cannot echo that\n Please fix your mistakes."
        );
    }

    #[tokio::test]
    async fn error_policies_format_or_fail() {
        let tools = Toolbox::new(Echo).with_errors(ToolErrors::Format(Arc::new(|e| {
            format!("sorry: {}", matches!(e, AgentError::ToolFailed { .. }))
        })));
        let m = tools
            .run(&call("echo", json!({"text": "fail"})))
            .await
            .unwrap();
        assert_eq!(
            (m.content.as_str(), m.status),
            ("sorry: true", ToolStatus::Error)
        );

        let tools = Toolbox::new(Echo).with_errors(ToolErrors::Fail);
        let err = tools
            .run(&call("echo", json!({"text": "fail"})))
            .await
            .unwrap_err();
        assert!(matches!(err, AgentError::ToolFailed { .. }));
        // The model's own mistakes are still answered, never fatal.
        let m = tools.run(&call("nope", json!({}))).await.unwrap();
        assert_eq!(m.status, ToolStatus::Error);
    }

    #[test]
    fn invalid_calls_get_an_error_answer_with_their_id() {
        let tools = Toolbox::new(Echo);
        let m = tools.answer_invalid(&InvalidToolCall {
            id: Some("c7".into()),
            name: Some("echo".into()),
            args: Some("{\"text\": ".into()),
            error: Some("EOF while parsing".into()),
        });
        assert_eq!(
            (m.tool_call_id.as_str(), m.status),
            ("c7", ToolStatus::Error)
        );
        assert!(m.content.contains("not valid JSON"), "{}", m.content);
    }

    #[test]
    fn the_schema_describes_the_arguments() {
        let spec = BoxedTool::new(Echo).spec().clone();
        assert_eq!(spec.description, "Repeats text.");
        let p = &spec.parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["properties"]["text"]["type"], "string");
        assert_eq!(p["properties"]["text"]["description"], "What to echo.");
        assert_eq!(p["required"], json!(["text"]));
        assert!(p.get("$schema").is_none());
    }
}
