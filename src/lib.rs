//! Typed, stateful agent workflows as graphs: LangGraph's execution model (channels
//! with reducers, Pregel supersteps, `Command`, `Send`), with the workflow's shape
//! checked by the Rust compiler.
//!
//! ```
//! use stategraph::prelude::*;
//!
//! fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
//!     a.extend(b);
//!     a
//! }
//!
//! #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
//! struct Chat {
//!     #[reducer(concat)]
//!     log: Vec<String>,
//!     turns: u32,
//! }
//!
//! #[derive(Goto, Clone, Copy, Debug)]
//! enum Next {
//!     Speak,
//!     #[goto(end)]
//!     Done,
//! }
//!
//! #[node]
//! async fn speak(state: &Chat) -> Command<Next> {
//!     if state.turns == 3 {
//!         return Command::goto(Next::Done);
//!     }
//!     let line = format!("turn {}", state.turns + 1);
//!     Command::goto(Next::Speak).update(Chat::update().log(vec![line]).turns(state.turns + 1))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = StateGraph::<Chat>::new()
//!     .add_node(speak)
//!     .add_edge(START, speak)
//!     .compile()?;
//!
//! let out = app.invoke(Chat::update(), &RunConfig::new()).await?;
//! assert_eq!(out.log, ["turn 1", "turn 2", "turn 3"]);
//! # Ok(())
//! # }
//! ```
//!
//! Start with the [guide]: state and reducers, nodes and `Command`, edges and
//! `Send`, persistence, interrupts, subgraphs and streaming, each with examples
//! that run.
//!
//! # Architecture
//!
//! `stategraph` is a facade: it re-exports the workspace's crates under one
//! name, so that a user depends on it alone.
//!
//! | package (library) | what it holds | here |
//! |---|---|---|
//! | `stategraph-core` (`graph_core`) | the runtime: builder, compiled graph, engine, channels, checkpoints, streaming | the crate root and its modules |
//! | `stategraph-macros` (`graph_macros`) | `#[derive(State)]`, `#[derive(Schema)]`, `#[derive(Goto)]`, `#[node]`, `#[tool]` | [`State`](macro@State), [`Schema`](macro@Schema), [`Goto`](macro@Goto), [`node`](macro@node), `agents::tool` |
//! | `stategraph-sqlite` (`graph_sqlite`) | `SqliteSaver`, checkpoints in a SQLite file | `stategraph::sqlite` (feature `sqlite`, default) |
//! | `stategraph-postgres` (`graph_postgres`) | `PostgresSaver`, checkpoints shared by many processes | `stategraph::postgres` (feature `postgres`) |
//! | `stategraph-agents` (`graph_agents`) | messages and `add_messages`, tools, chat models, `ToolNode`, `create_react_agent` | `stategraph::agents` (feature `agents`, default) |
//! | `stategraph-server` (`graph_server`) | `Server`: LangGraph Server's HTTP API for compiled graphs, runs queued in SQLite (one process) or PostgreSQL (many) | `stategraph::server` (feature `server`; `server-postgres`) |
//!
//! In `graph_core`, a graph goes from what you write down to what is stored:
//!
//! 1. **Builder**: [`StateGraph`] (module [`graph`](mod@graph)) collects nodes
//!    ([`mod@node`]: what a node is and may return, the [`Context`] it gets)
//!    and edges ([`Command`] and [`Send`] for routing from inside a node).
//! 2. **Compiled graph**: `compile()` checks every edge, goto target and
//!    `Send` target and returns a [`CompiledGraph`], the object you run
//!    (`invoke`, `stream`), inspect (`get_state`, `get_state_history`) and
//!    edit (`update_state`).
//! 3. **Pregel engine** (internal): runs a compiled graph superstep by
//!    superstep: picks the tasks the last writes trigger, runs them
//!    concurrently, applies their writes in task order, reports [`stream`]
//!    events, pauses on an [`interrupt`].
//! 4. **Channels**: each state field is a channel ([`channels`]) that decides
//!    what a superstep's writes do to it; the [`State`](trait@State) trait
//!    (module [`state`]), implemented by the derive, ties a struct to its
//!    channels and its typed update.
//! 5. **Checkpoints**: after each superstep the engine stores the channels
//!    through a [`Checkpointer`](checkpoint::Checkpointer) (module
//!    [`checkpoint`], with the in-memory saver); `graph-sqlite` and
//!    `graph-postgres` implement the same trait.
//!
//! Beside these: [`subgraph`] (a compiled graph as a node), [`component`]
//! (graphs and node sets a library ships for any state), [`config`],
//! [`retry`] and [`cache`]. The concepts behind them are in `docs/concepts.md`
//! in the repository; the exact runtime rules in `docs/semantics.md`.

#![forbid(unsafe_code)]

pub use graph_core::*;

pub mod func;
pub mod guide;
#[cfg(feature = "testing")]
pub mod testing;

/// Derives [`State`](trait@State) for a struct: each field becomes a channel.
///
/// - no attribute: `LastValue` (one write per superstep, the new value replaces the old);
/// - `#[reducer(path)]`: writes are folded with `path`, which must be usable as
///   `fn(T, T) -> T` for the field type `T` (checked at compile time); a closure
///   that captures nothing works too: `#[reducer(|current, update| current + update)]`;
/// - `#[channel(kind)]`: another channel kind: `topic`, `topic(accumulate)`,
///   `ephemeral`, `ephemeral(guard = false)`, `untracked`, `untracked(guard = false)`,
///   `any_value`, `last_value`, `last_value_after_finish`;
/// - a field of type [`RemainingSteps`] or [`IsLastStep`] is a managed value, filled
///   in by the engine before every superstep;
/// - `#[field(Marker)]`: the field provides the [`Field`] `Marker` (declared with
///   [`field!`]), so that code generic over `S: Has<Marker>` reads and writes it
///   (docs/for-library-authors.md);
/// - `#[state(crate = path)]` on the struct: where the expansion finds this crate
///   (see [Where the macros find stategraph](#where-the-macros-find-stategraph)).
///
/// The struct may have type and const parameters; a field whose type names one is
/// checked for each instantiation (`Chat<M>` is a state for each `M` its channels
/// can hold).
///
/// It also generates `<Name>Update`, the typed partial update, with a builder
/// (`Name::update().field(value)`, and `field_overwrite(value)` for reducer fields).
///
/// # Where the macros find stategraph
///
/// The expansions of `derive(State)`, `derive(Goto)`, `#[node]` and `#[tool]` name
/// this crate's items by path. They find the `stategraph` dependency in your
/// Cargo.toml under whatever name you gave it (`sg = { package = "stategraph", .. }`
/// expands to `::sg::..`). When the crate is reached another way, through a
/// re-export of a library, say, tell each macro where it is, as a path or a string:
/// `#[state(crate = path)]` on the struct, `#[goto(crate = path)]` on the enum,
/// `#[node(crate = path)]`, `#[tool(crate = path)]`. The path names this crate (the
/// facade); `#[tool]` finds `agents` in it.
///
/// ```
/// use stategraph as sg;
/// use sg::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// #[state(crate = sg)]
/// struct Doc {
///     text: String,
/// }
///
/// #[derive(Goto, Clone, Copy)]
/// #[goto(crate = "sg")]
/// enum Route {
///     #[goto(end)]
///     Done,
/// }
///
/// #[node(crate = sg)]
/// fn finish(doc: &Doc) -> Command<Route> {
///     Command::goto(Route::Done).update(Doc::update().text(doc.text.clone()))
/// }
/// # let _ = StateGraph::<Doc>::new().add_node(finish).add_edge(START, finish).compile().unwrap();
/// ```
///
/// ```
/// use stategraph::prelude::*;
///
/// fn add(a: u32, b: u32) -> u32 { a + b }
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Counter {
///     #[reducer(add)]
///     total: u32,
///     label: String,
///     #[channel(topic)]
///     events: Vec<String>,
/// }
///
/// let update = Counter::update().total(2).label("x".into());
/// assert_eq!(format!("{update:?}"), r#"CounterUpdate { total: 2, label: "x" }"#);
/// ```
pub use graph_macros::State;

/// Derives [`InputSchema`], [`OutputSchema`] and [`View`] for a struct of some of
/// a state's fields: LangGraph's `input_schema` and `output_schema`, and a node's
/// input when the node reads only these fields.
///
/// `#[schema(state = MyState)]` names the state. Each field must be a field of the
/// state with the same name and type; rustc reports one that is not at the field
/// ("no field `x` on type `&MyState`", "mismatched types"). As graph input
/// (`app.invoke(Question { .. }, ..)`), the struct writes only its fields, through
/// their channels (a reducer folds the value in); as output
/// ([`CompiledGraph::with_output`]), it is cloned from the final state. As the
/// input of a `#[node]` (`fn write(plan: &Plan)`), it is cloned from the state for
/// each of the node's tasks, and `send(write, Plan { .. })` carries it
/// ([`view`]). Other nodes and streams see the whole state. The schema reads the state's fields, so they must
/// be visible where it is declared (the same module, or `pub` fields). `#[schema(crate = path)]` tells the expansion where
/// this crate is ([`State`](macro@State#where-the-macros-find-stategraph)).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Overall { question: String, answer: String }
///
/// #[derive(Schema)]
/// #[schema(state = Overall)]
/// struct Answer { answer: String }
///
/// let state = Overall { question: "q".into(), answer: "a".into() };
/// let answer: Answer = OutputSchema::from_state(&state);
/// assert_eq!(answer.answer, "a");
/// let update = InputSchema::<Overall>::into_update(answer);
/// assert_eq!(update.answer.as_deref(), Some("a"));
/// assert!(update.question.is_none()); // only the schema's fields are written
/// ```
pub use graph_macros::Schema;

/// Derives [`GotoTarget`] for an enum: the set of places a node may route to.
///
/// Each unit variant names a node, in snake_case (`ToolCall` → `tool_call`);
/// `#[goto(end)]` marks `END`, `#[goto(name = "x")]` names the node explicitly.
/// A node returning `Command<ThisEnum>` declares these targets: `compile()` checks
/// every one of them exists. On the enum, `#[goto(crate = path)]` tells the
/// expansion where this crate is ([`State`](macro@State#where-the-macros-find-stategraph)).
///
/// ```
/// use stategraph::prelude::*;
/// use stategraph::{Destination, GotoTarget};
///
/// #[derive(Goto, Clone, Copy, Debug)]
/// enum Route {
///     ToolCall,
///     #[goto(name = "human-review")]
///     Review,
///     #[goto(end)]
///     Done,
/// }
///
/// assert_eq!(Route::ToolCall.destination(), Destination::Node("tool_call"));
/// assert_eq!(Route::Review.destination(), Destination::Node("human-review"));
/// assert_eq!(Route::Done.destination(), Destination::End);
/// ```
pub use graph_macros::Goto;

/// Declares a whole graph in one statement list that reads like its drawing, and
/// has rustc check its shape: the [guide chapter](guide::checked) shows every
/// statement and every check.
///
/// The declaration expands to the [`StateGraph`] builder calls it stands for, in
/// its order, so the graph it makes is the one those calls make: the same
/// `compile()`, runs and drawing. What rustc rejects, each at the token at fault:
/// an edge, join or path map naming an undeclared node; a `#[derive(Goto)]`
/// variant of a node's `Command<G>` or of a router's return type naming a node
/// the graph lacks (the error names the variant and the node); a node written
/// for another state; a `send` to an undeclared node; a node that nothing
/// reaches from START (unless marked `#[dynamic]`); no edge from START; a name
/// declared twice or reserved; END among a join's sources, START as a target.
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Ticket { text: String, reply: String }
///
/// #[derive(Goto, Clone, Copy)]
/// enum Triage { Answer, Escalate, #[goto(end)] Drop }
///
/// #[node]
/// fn triage(t: &Ticket) -> Command<Triage> {
///     Command::goto(if t.text.contains("lawyer") { Triage::Escalate } else { Triage::Answer })
/// }
/// #[node]
/// fn answer(_: &Ticket) -> TicketUpdate { Ticket::update().reply("Done.".into()) }
/// #[node]
/// fn escalate(_: &Ticket) -> TicketUpdate { Ticket::update().reply("Call me.".into()) }
///
/// let declared = graph! {
///     state Ticket;
///     node triage, answer, escalate;
///
///     START -> triage;
///     answer -> END;
/// };
///
/// // The same graph, built by hand: the drawings are identical.
/// let built = StateGraph::<Ticket>::new()
///     .add_node(triage)
///     .add_node(answer)
///     .add_node(escalate)
///     .add_edge(START, triage)
///     .add_edge(answer, END);
///
/// let (declared, built) = (declared.compile()?, built.compile()?);
/// assert_eq!(declared.draw_mermaid(), built.draw_mermaid());
/// # Ok::<(), GraphError>(())
/// ```
pub use graph_macros::graph;

/// Turns a fn (async or not) into a graph node named after the fn.
///
/// The first parameter is the node's input: the state (`&S` or `S`), a
/// [`View`] of it (a `#[derive(Schema)]` struct of some of its fields, cloned
/// from the state for each task: see [`view`]), or a payload
/// type for a node started only by [`send`]. An optional second parameter takes the
/// [`Context`] (`&Context` or `Context`). The return type is the state's update,
/// `Command<G>` (the macro fills in the update type), `Vec<Command<G>>`, `Send`s,
/// `()`, `Option` or `Result` of these; any `std::error::Error` can be the error.
///
/// The name can then be used as a value: `add_node(agent)`, `add_edge(agent, tools)`,
/// `send(worker, item)`; the body stays callable as `agent::call(..)`.
///
/// Options: `#[node(state = MyState)]` names the graph's state for a node whose input
/// is a payload or a view and that returns `Command<G>`; `#[node(crate = path)]` tells the
/// expansion where this crate is
/// ([`State`](macro@State#where-the-macros-find-stategraph)).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Doc { text: String }
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("empty document")]
/// struct Empty;
///
/// #[node]
/// async fn shout(doc: &Doc, ctx: &Context) -> Result<DocUpdate, Empty> {
///     if doc.text.is_empty() {
///         return Err(Empty);
///     }
///     ctx.write_custom(format!("step {}", ctx.step()));
///     Ok(Doc::update().text(doc.text.to_uppercase()))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let graph = StateGraph::<Doc>::new()
///     .add_node(shout)
///     .add_edge(START, shout)
///     .compile()
///     .unwrap();
/// let doc = graph.invoke(Doc::update().text("hi".into()), &RunConfig::new()).await.unwrap();
/// assert_eq!(doc.text, "HI");
/// # }
/// ```
pub use graph_macros::node;

/// Durable checkpoints in a SQLite file: [`SqliteSaver`](sqlite::SqliteSaver)
/// (feature `sqlite`, on by default). Threads it stores can be read and resumed
/// by LangGraph's own Python `SqliteSaver`, and the other way round.
#[cfg(feature = "sqlite")]
pub mod sqlite {
    pub use graph_sqlite::*;
}

/// Checkpoints in PostgreSQL, shared by many worker processes:
/// [`PostgresSaver`](postgres::PostgresSaver) (feature `postgres`, off by default).
/// It uses LangGraph's Postgres schema, and serialises runs of one thread across
/// processes with [`lock_thread`](postgres::PostgresSaver::lock_thread).
#[cfg(feature = "postgres")]
pub mod postgres {
    pub use graph_postgres::*;
}

/// Chat agents: [`Message`](agents::Message)s merged by
/// [`add_messages`](agents::add_messages), tools, chat models,
/// [`ToolNode`](agents::ToolNode) and
/// [`create_react_agent`](agents::create_react_agent) (feature `agents`, on by
/// default; the OpenAI-compatible HTTP client needs feature `openai`).
///
/// ```
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Chat {
///     #[reducer(add_messages)]
///     messages: Vec<Message>,
///     turns: u32,
/// }
///
/// let update = Chat::update().messages(vec![Message::human("hi")]).turns(1);
/// # let _ = update;
/// ```
/// Serving graphs over LangGraph Server's HTTP API:
/// [`Server`](server::Server) (feature `server`). Threads, runs and
/// checkpoints live in a SQLite file, or, with feature `server-postgres`, in
/// PostgreSQL shared by any number of server processes
/// (`Server::postgres`); the Python `langgraph-sdk` and `RemoteGraph` talk to
/// it as to LangGraph Server.
#[cfg(feature = "server")]
pub mod server {
    pub use graph_server::*;
}

#[cfg(feature = "agents")]
pub mod agents {
    pub use graph_agents::*;

    /// Turns a fn into a [`Tool`] the model can call, named after the fn.
    ///
    /// The fn's parameters are the tool's arguments: the model sends them as a
    /// JSON object, deserialised into the parameter types (with serde; their JSON
    /// schema, from `schemars`, tells the model what to send). The doc comment is
    /// the description the model reads; doc comments on parameters describe the
    /// arguments. The fn may be async, and returns a `String`, another
    /// serializable value, or a `Result` of one whose error the model is shown.
    /// Options: `#[tool(name = "web_search", description = "...")]`, and
    /// `#[tool(crate = path)]` for where the `stategraph` crate is
    /// ([`State`](macro@crate::State#where-the-macros-find-stategraph)).
    ///
    /// ```
    /// use stategraph::agents::{tool, BoxedTool, Toolbox, ToolCall};
    ///
    /// /// Adds two integers.
    /// #[tool]
    /// fn add(
    ///     /// The first term.
    ///     a: i64,
    ///     b: i64,
    /// ) -> Result<i64, String> {
    ///     a.checked_add(b).ok_or_else(|| "overflow".to_owned())
    /// }
    ///
    /// let spec = BoxedTool::new(add {}).spec().clone();
    /// assert_eq!(spec.name, "add");
    /// assert_eq!(spec.description, "Adds two integers.");
    /// assert_eq!(spec.parameters["properties"]["a"]["description"], "The first term.");
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let tools = Toolbox::new(add);
    /// let answer = tools.run(&ToolCall::new("c1", "add", serde_json::json!({"a": 2, "b": 3}))).await.unwrap();
    /// assert_eq!(answer.content, "5");
    /// assert_eq!(add::call(1, 1), Ok(2));
    /// # });
    /// ```
    pub use graph_macros::tool;
}

// Items of other crates that appear in stategraph's API, re-exported so that user
// code names the versions stategraph was built with. Whole crates are not
// re-exported: rustc would then print `std::string::String` for `String` (and
// `std::future::Future` for `Future`) in every error message that names a type.
// `#[derive(Serialize)]` needs `serde` itself as a dependency of the user's crate.

/// The stream of a run's events is a [`Stream`]; [`StreamExt`] consumes it.
#[doc(no_inline)]
pub use futures::{Stream, StreamExt};

/// What the methods of a custom [`Checkpointer`](checkpoint::Checkpointer) return.
#[doc(no_inline)]
pub use futures::future::BoxFuture;

/// Builds a [`JsonValue`] (`serde_json::json!`).
#[doc(no_inline)]
pub use serde_json::json;

/// A JSON value (`serde_json::Value`): interrupt values, checkpoint metadata, tool
/// arguments.
pub type JsonValue = serde_json::Value;

/// Everything a graph definition needs, in one import.
///
/// [`Send`] is deliberately left out (it would shadow `std::marker::Send`); use
/// [`send`] to build one, or name it `stategraph::Send`.
pub mod prelude {
    pub use graph_core::channels::{Overwrite, ReducerWrite, TopicWrite};
    pub use graph_core::{
        async_node_fn, node_fn, send, Breakpoints, Command, CompileOptions, CompiledGraph, Context,
        GraphError, GraphOutput, Interrupt, IsLastStep, NodeError, NodeOptions, RemainingSteps,
        RunConfig, StateGraph, StreamEvent, StreamMode, END, START,
    };
    pub use graph_core::{InputSchema, OutputSchema, View};
    // The trait's methods (`state.get::<F>()`) without its name, which is the derive's.
    pub use graph_core::State as _;
    pub use graph_core::{Component, Has, NodeSet, UpdateOf};
    pub use graph_macros::{graph, node, Goto, Schema, State};
    pub use serde::{Deserialize, Serialize};

    #[cfg(feature = "agents")]
    pub use graph_agents::{add_messages, Message, MessagesState};
}

/// The code blocks of README.md, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The example of docs/concepts.md, compiled and run as a doctest.
#[doc = include_str!("../docs/concepts.md")]
#[cfg(doctest)]
pub struct ConceptsDoctests;
