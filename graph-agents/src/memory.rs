//! Memory tools over the graph's [`Store`](graph_core::store::Store): a model
//! saves what it learns ([`manage_memory_tool`]) and finds it again in later
//! conversations ([`search_memory_tool`]), as langmem's
//! `create_manage_memory_tool` and `create_search_memory_tool` do.
//!
//! Memories live under a [`MemoryNamespace`]: fixed labels and `{key}`s filled
//! per run from the run's `configurable` (`("memories", "{user_id}")`, langmem's
//! templates), or a namespace computed from the task's context (the typed
//! runtime context, say). Each memory is a store item `{"content": text}` under a
//! fresh UUID key; the search is the store's (semantic when the store has an
//! index). The tools reach the store the agent is compiled with.
//!
//! ```
//! use graph_agents::memory::{manage_memory_tool, search_memory_tool};
//! use graph_agents::model::FakeChatModel;
//! use graph_agents::{create_react_agent, AiMessage, Message, MessagesState, ToolCall};
//! use graph_core::store::{InMemoryStore, Namespace, SearchOp, Store};
//! use graph_core::{CompileOptions, RunConfig};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let save = ToolCall::new("c1", "manage_memory", json!({"content": "Alice is vegetarian"}));
//! let model = FakeChatModel::new(vec![
//!     AiMessage::new("").with_tool_call(save),
//!     AiMessage::new("Noted."),
//! ]);
//! let namespace = ["memories", "{user_id}"];
//! let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
//! let agent = create_react_agent(model, (manage_memory_tool(namespace), search_memory_tool(namespace)))
//!     .compile_with(CompileOptions::new().store(Arc::clone(&store)))?;
//!
//! let config = RunConfig::new().with_configurable("user_id", "alice");
//! let input = MessagesState::update().messages(vec![Message::human("I'm vegetarian")]);
//! agent.invoke(input, &config).await?;
//!
//! let saved = store.search(SearchOp::new(Namespace::new(["memories", "alice"])?)).await?;
//! assert_eq!(saved[0].value["content"], "Alice is vegetarian");
//! # Ok(())
//! # }
//! ```

use crate::error::AgentError;
use crate::tool::{BoxedTool, Erased, IntoTool, ToolSpec};
use graph_core::store::{Filter, Namespace, SearchItem, SearchOp, StoreError};
use graph_core::Context;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Where a memory tool keeps its memories: fixed labels with `{key}`s filled
/// from the run's `configurable` ([`template`](Self::template)), or a
/// namespace computed from the task's context ([`from_fn`](Self::from_fn)).
#[derive(Clone)]
pub struct MemoryNamespace(Repr);

#[derive(Clone)]
enum Repr {
    Template(Arc<[Part]>),
    Fn(Arc<NamespaceFn>),
}

type NamespaceFn = dyn Fn(&Context) -> Result<Namespace, StoreError> + Send + Sync;

#[derive(Clone, Debug)]
enum Part {
    Label(String),
    /// `{key}`: the run's `configurable[key]`.
    Configurable(String),
}

impl MemoryNamespace {
    /// langmem's namespace template: each part a label, or `{key}` for the
    /// run's `configurable[key]` (a string, or a number written out), e.g.
    /// `["memories", "{user_id}"]` with
    /// `RunConfig::new().with_configurable("user_id", "alice")`. A run without
    /// the key fails with [`AgentError::MissingConfigurable`].
    pub fn template<I, P>(parts: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<str>,
    {
        let parts = parts.into_iter().map(|p| {
            let p = p.as_ref();
            match p.strip_prefix('{').and_then(|k| k.strip_suffix('}')) {
                Some(key) => Part::Configurable(key.to_owned()),
                None => Part::Label(p.to_owned()),
            }
        });
        MemoryNamespace(Repr::Template(parts.collect()))
    }

    /// A namespace computed per call from the task's context: the run's typed
    /// context value (`ctx.context().downcast_ref::<UserCtx>()`), its config,
    /// its thread.
    pub fn from_fn(
        namespace: impl Fn(&Context) -> Result<Namespace, StoreError> + Send + Sync + 'static,
    ) -> Self {
        MemoryNamespace(Repr::Fn(Arc::new(namespace)))
    }

    /// The namespace for the call in `ctx` of the tool `tool`.
    fn resolve(&self, tool: &str, ctx: &Context) -> Result<Namespace, AgentError> {
        let store_error = |source| AgentError::Store {
            tool: tool.to_owned(),
            source: Box::new(source),
        };
        let parts = match &self.0 {
            Repr::Fn(f) => return f(ctx).map_err(store_error),
            Repr::Template(parts) => parts,
        };
        let configurable = ctx.config().configurable();
        let mut labels = Vec::with_capacity(parts.len());
        for part in parts.iter() {
            labels.push(match part {
                Part::Label(label) => Cow::Borrowed(label.as_str()),
                Part::Configurable(key) => match configurable.get(key) {
                    Some(Value::String(s)) => Cow::Borrowed(s.as_str()),
                    Some(v @ Value::Number(_)) => Cow::Owned(v.to_string()),
                    _ => {
                        return Err(AgentError::MissingConfigurable {
                            tool: tool.to_owned(),
                            key: key.clone(),
                            available: configurable.keys().cloned().collect(),
                        })
                    }
                },
            });
        }
        Namespace::new(labels).map_err(store_error)
    }
}

impl fmt::Debug for MemoryNamespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Template(parts) => f.debug_tuple("MemoryNamespace").field(parts).finish(),
            Repr::Fn(_) => f.write_str("MemoryNamespace(<fn>)"),
        }
    }
}

impl<const N: usize> From<[&str; N]> for MemoryNamespace {
    fn from(parts: [&str; N]) -> Self {
        MemoryNamespace::template(parts)
    }
}

impl From<&[&str]> for MemoryNamespace {
    fn from(parts: &[&str]) -> Self {
        MemoryNamespace::template(parts)
    }
}

/// What [`manage_memory_tool`] may do to a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryAction {
    /// Save a new memory (under a fresh id).
    Create,
    /// Replace the content of the memory with the given id.
    Update,
    /// Delete the memory with the given id.
    Delete,
}

impl MemoryAction {
    fn as_str(self) -> &'static str {
        match self {
            MemoryAction::Create => "create",
            MemoryAction::Update => "update",
            MemoryAction::Delete => "delete",
        }
    }
}

/// langmem's default instructions of `manage_memory`.
const MANAGE_INSTRUCTIONS: &str = "Proactively call this tool when you:\n\n\
1. Identify a new USER preference.\n\
2. Receive an explicit USER request to remember something or otherwise alter your behavior.\n\
3. Are working and want to record important context.\n\
4. Identify that an existing MEMORY is incorrect or outdated.\n";

/// The tool a model saves, updates and deletes memories with (langmem's
/// `create_manage_memory_tool`): named `manage_memory`, taking `content`,
/// `action` (`create`, the default, `update` or `delete`) and, to update or
/// delete, the memory's `id`. It answers `created memory <id>`,
/// `updated memory <id>` or `Deleted memory <id>` (langmem's words).
///
/// Give it to [`create_react_agent`](crate::create_react_agent) as a tool; it
/// stores in the graph's store (compile the agent with one) under `namespace`.
pub fn manage_memory_tool(namespace: impl Into<MemoryNamespace>) -> ManageMemoryTool {
    ManageMemoryTool {
        namespace: namespace.into(),
        name: Cow::Borrowed("manage_memory"),
        instructions: Cow::Borrowed(MANAGE_INSTRUCTIONS),
        actions: vec![
            MemoryAction::Create,
            MemoryAction::Update,
            MemoryAction::Delete,
        ],
    }
}

/// The builder [`manage_memory_tool`] returns; a tool as it is.
#[derive(Debug, Clone)]
pub struct ManageMemoryTool {
    namespace: MemoryNamespace,
    name: Cow<'static, str>,
    instructions: Cow<'static, str>,
    actions: Vec<MemoryAction>,
}

impl ManageMemoryTool {
    /// Names the tool (default `manage_memory`).
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }

    /// When the model should call it (the second part of its description).
    pub fn instructions(mut self, instructions: impl Into<Cow<'static, str>>) -> Self {
        self.instructions = instructions.into();
        self
    }

    /// The actions the model may take (default all three); another one is
    /// answered with an error. An empty list keeps the default.
    pub fn actions(mut self, actions: impl IntoIterator<Item = MemoryAction>) -> Self {
        let actions: Vec<MemoryAction> = actions.into_iter().collect();
        if !actions.is_empty() {
            self.actions = actions;
        }
        self
    }

    /// langmem's description: "Create, update, or delete a memory to persist
    /// across conversations. ..." for the actions allowed.
    fn description(&self) -> String {
        let names: Vec<&str> = self.actions.iter().map(|a| a.as_str()).collect();
        let capitalised = |s: &str| {
            let mut chars = s.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        };
        let verbs = match names.as_slice() {
            [one] => format!("{one} a memory"),
            [a, b] => format!("{} or {b} a memory", capitalised(a)),
            [first, middle @ .., last] => {
                let mut prefix = vec![capitalised(first)];
                prefix.extend(middle.iter().map(|s| (*s).to_owned()));
                format!("{}, or {last} a memory", prefix.join(", "))
            }
            [] => "Manage a memory".to_owned(),
        };
        format!(
            "{verbs} to persist across conversations.\nInclude the MEMORY ID when updating or \
             deleting a MEMORY. Omit when creating a new MEMORY - it will be created for you.\n{}",
            self.instructions
        )
    }
}

/// The arguments of `manage_memory`.
#[derive(Deserialize, JsonSchema)]
struct ManageArgs {
    /// The memory's content (to create or update).
    #[serde(default)]
    content: Option<String>,
    /// What to do: create (the default), update or delete.
    #[serde(default)]
    action: Option<MemoryAction>,
    /// The MEMORY ID, to update or delete.
    #[serde(default)]
    id: Option<String>,
}

impl IntoTool<Erased> for ManageMemoryTool {
    fn into_tool(self) -> BoxedTool {
        let spec = ToolSpec::of::<ManageArgs>(self.name.to_string(), self.description());
        let tool = Arc::new(self);
        BoxedTool::from_fn_in_context(spec, move |args, ctx| {
            let tool = Arc::clone(&tool);
            async move { tool.manage(args, &ctx).await }
        })
    }
}

impl ManageMemoryTool {
    async fn manage(&self, args: Value, ctx: &Context) -> Result<String, AgentError> {
        let failed = |message: String| AgentError::ToolFailed {
            tool: self.name.to_string(),
            message,
        };
        let args: ManageArgs =
            serde_json::from_value(args.clone()).map_err(|e| AgentError::InvalidToolArgs {
                tool: self.name.to_string(),
                args: args.to_string(),
                reason: e.to_string(),
            })?;
        let default = if self.actions.contains(&MemoryAction::Create) {
            MemoryAction::Create
        } else {
            self.actions[0]
        };
        let action = args.action.unwrap_or(default);
        if !self.actions.contains(&action) {
            let allowed: Vec<&str> = self.actions.iter().map(|a| a.as_str()).collect();
            return Err(failed(format!(
                "Invalid action {}. Must be one of {allowed:?}.",
                action.as_str()
            )));
        }
        let id = match (action, args.id) {
            (MemoryAction::Create, Some(_)) => {
                return Err(failed(
                    "You cannot provide a MEMORY ID when creating a MEMORY. Please try again, \
                     omitting the id argument."
                        .to_owned(),
                ))
            }
            (MemoryAction::Create, None) => crate::message::new_id(),
            (_, Some(id)) if !id.is_empty() => id,
            (_, _) => {
                return Err(failed(
                    "You must provide a MEMORY ID when deleting or updating a MEMORY.".to_owned(),
                ))
            }
        };
        let namespace = self.namespace.resolve(&self.name, ctx)?;
        let store_error = |source| AgentError::Store {
            tool: self.name.to_string(),
            source: Box::new(source),
        };
        let store = ctx.store().map_err(store_error)?;
        if action == MemoryAction::Delete {
            store.delete(&namespace, &id).await.map_err(store_error)?;
            return Ok(format!("Deleted memory {id}"));
        }
        let content = args.content.map_or(Value::Null, Value::String);
        store
            .put(&namespace, &id, json!({ "content": content }))
            .await
            .map_err(store_error)?;
        Ok(format!("{}d memory {id}", action.as_str()))
    }
}

/// The tool a model searches its memories with (langmem's
/// `create_search_memory_tool`): named `search_memory`, taking a `query`, and
/// optionally `limit` (default 10), `offset` and a `filter` on the items'
/// fields. It answers the items found, best first, as a JSON list of
/// `{"namespace", "key", "value", "created_at", "updated_at", "score"}`.
///
/// Searches the graph's store under `namespace` (semantically when the store
/// has an index).
pub fn search_memory_tool(namespace: impl Into<MemoryNamespace>) -> SearchMemoryTool {
    SearchMemoryTool {
        namespace: namespace.into(),
        name: Cow::Borrowed("search_memory"),
        instructions: Cow::Borrowed(""),
    }
}

/// The builder [`search_memory_tool`] returns; a tool as it is.
#[derive(Debug, Clone)]
pub struct SearchMemoryTool {
    namespace: MemoryNamespace,
    name: Cow<'static, str>,
    instructions: Cow<'static, str>,
}

impl SearchMemoryTool {
    /// Names the tool (default `search_memory`).
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = name.into();
        self
    }

    /// When the model should call it (appended to its description).
    pub fn instructions(mut self, instructions: impl Into<Cow<'static, str>>) -> Self {
        self.instructions = instructions.into();
        self
    }
}

fn ten() -> usize {
    10
}

/// The arguments of `search_memory`.
#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// What to look for.
    query: String,
    /// At most this many memories (default 10).
    #[serde(default = "ten")]
    limit: usize,
    /// Skip this many first.
    #[serde(default)]
    offset: usize,
    /// Only memories whose fields match, e.g. {"content": "..."}.
    #[serde(default)]
    filter: Option<Map<String, Value>>,
}

impl IntoTool<Erased> for SearchMemoryTool {
    fn into_tool(self) -> BoxedTool {
        let description = format!(
            "Search your long-term memories for information relevant to your current context. {}",
            self.instructions
        );
        let spec = ToolSpec::of::<SearchArgs>(self.name.to_string(), description);
        let tool = Arc::new(self);
        BoxedTool::from_fn_in_context(spec, move |args, ctx| {
            let tool = Arc::clone(&tool);
            async move { tool.search(args, &ctx).await }
        })
    }
}

impl SearchMemoryTool {
    async fn search(&self, args: Value, ctx: &Context) -> Result<String, AgentError> {
        let args: SearchArgs =
            serde_json::from_value(args.clone()).map_err(|e| AgentError::InvalidToolArgs {
                tool: self.name.to_string(),
                args: args.to_string(),
                reason: e.to_string(),
            })?;
        // A filter the model got wrong is its to fix: an error message.
        let filter = match args.filter {
            Some(filter) => {
                Filter::from_json(Value::Object(filter)).map_err(|e| AgentError::ToolFailed {
                    tool: self.name.to_string(),
                    message: e.to_string(),
                })?
            }
            None => Filter::new(),
        };
        let namespace = self.namespace.resolve(&self.name, ctx)?;
        let store_error = |source| AgentError::Store {
            tool: self.name.to_string(),
            source: Box::new(source),
        };
        let op = SearchOp::new(namespace)
            .query(args.query)
            .filter(filter)
            .limit(args.limit)
            .offset(args.offset);
        let found = ctx
            .store()
            .map_err(store_error)?
            .search(op)
            .await
            .map_err(store_error)?;
        let items: Vec<Value> = found.iter().map(item_json).collect();
        Ok(Value::Array(items).to_string())
    }
}

/// A found item as langgraph's `SearchItem.dict()`.
fn item_json(found: &SearchItem) -> Value {
    json!({
        "namespace": found.namespace.labels(),
        "key": found.key,
        "value": found.value,
        "created_at": graph_core::__private::iso8601(found.created_at),
        "updated_at": graph_core::__private::iso8601(found.updated_at),
        "score": found.score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_lists_the_actions_allowed_as_langmem_does() {
        let all = manage_memory_tool(["m"]);
        assert!(all
            .description()
            .starts_with("Create, update, or delete a memory to persist across conversations."));
        let two = manage_memory_tool(["m"]).actions([MemoryAction::Create, MemoryAction::Update]);
        assert!(two.description().starts_with("Create or update a memory"));
        let one = manage_memory_tool(["m"]).actions([MemoryAction::Update]);
        assert!(one.description().starts_with("update a memory"));
    }
}
