//! What goes into a run ([`GraphInput`]) and what comes out ([`GraphOutput`]).

use crate::command::{Command, CommandGraph, Route};
use crate::interrupt::{Breakpoint, Interrupt, Resume};
use crate::state::State;

/// The input of `invoke` / `stream`: new state values, nothing (resume a paused or
/// failed thread), or a [`Command`] that resumes, updates and routes a thread.
///
/// You rarely name this type: `invoke` takes anything that converts into it —
/// the state's update type (`S::update()...`), `None`, or `Command::resume(..)`,
/// `Command::goto("node")`, `Command::update_only(..)` and their combinations (as
/// graph input, a `Command` routes by node name). In code generic over the state,
/// build one with [`GraphInput::update`] or [`GraphInput::none`].
pub struct GraphInput<S: State> {
    pub(crate) kind: InputKind<S>,
}

pub(crate) enum InputKind<S: State> {
    None,
    Update(S::Update),
    Command(InputCommand<S>),
}

/// A `Command` given as graph input.
pub(crate) struct InputCommand<S: State> {
    pub(crate) parent: bool,
    pub(crate) update: Option<S::Update>,
    pub(crate) goto: Vec<Route<&'static str>>,
    pub(crate) resume: Option<Resume>,
}

impl<S: State> GraphInput<S> {
    /// No input: continue the thread from its checkpoint.
    pub fn none() -> Self {
        GraphInput {
            kind: InputKind::None,
        }
    }

    /// New values for the state, written through `START`.
    pub fn update(update: S::Update) -> Self {
        GraphInput {
            kind: InputKind::Update(update),
        }
    }
}

impl<S: State> std::fmt::Debug for GraphInput<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            InputKind::None => f.write_str("GraphInput::None"),
            InputKind::Update(_) => f.write_str("GraphInput::Update(..)"),
            InputKind::Command(c) => f
                .debug_struct("GraphInput::Command")
                .field("update", &c.update.is_some())
                .field("goto", &c.goto)
                .field("resume", &c.resume)
                .finish(),
        }
    }
}

impl<S: State> From<crate::field::UpdateOf<S>> for GraphInput<S> {
    fn from(update: crate::field::UpdateOf<S>) -> Self {
        GraphInput::update(update.into_inner())
    }
}

impl<S: State> From<Option<S::Update>> for GraphInput<S> {
    fn from(update: Option<S::Update>) -> Self {
        match update {
            Some(update) => GraphInput::update(update),
            None => GraphInput::none(),
        }
    }
}

impl<S: State> From<Command<&'static str, S::Update>> for GraphInput<S> {
    fn from(cmd: Command<&'static str, S::Update>) -> Self {
        GraphInput {
            kind: InputKind::Command(InputCommand {
                parent: cmd.graph == CommandGraph::Parent,
                update: cmd.update,
                goto: cmd.goto,
                resume: cmd.resume,
            }),
        }
    }
}

/// What `invoke` returns: the state, and why the run paused if it did.
///
/// It dereferences to the state, so `output.field` reads a field directly.
///
/// A run that finished has no interrupts and no breakpoint. A run paused by
/// [`Context::interrupt`](crate::Context::interrupt) lists the questions in
/// `interrupts` (resume with `Command::resume`, or `Command::resume_map` by id); a
/// run stopped at a static breakpoint says where in `breakpoint` (resume with
/// `invoke(None, ..)`). The state then includes the writes of the tasks of the
/// paused superstep that completed.
///
/// ```
/// use stategraph::checkpoint::InMemorySaver;
/// use stategraph::prelude::*;
///
/// #[derive(State, Clone, Default, Serialize, Deserialize)]
/// struct Draft { text: String, approved: bool }
///
/// #[node]
/// fn review(d: &Draft, ctx: &Context) -> Result<DraftUpdate, NodeError> {
///     let approved: bool = ctx.interrupt(format!("publish {:?}?", d.text))?;
///     Ok(Draft::update().approved(approved))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), GraphError> {
/// let app = StateGraph::<Draft>::new()
///     .add_node(review)
///     .add_edge(START, review)
///     .compile_with(InMemorySaver::new())?;
/// let thread = RunConfig::thread("t1");
///
/// let out = app.invoke(Draft::update().text("hello".into()), &thread).await?;
/// assert!(out.is_interrupted());
/// assert_eq!(out.interrupts[0].value, stategraph::json!("publish \"hello\"?"));
/// assert_eq!(out.text, "hello"); // it dereferences to the state
///
/// let out = app.invoke(Command::resume(true), &thread).await?;
/// assert!(!out.is_interrupted());
/// assert!(out.approved);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct GraphOutput<S> {
    /// The state at the end of the run.
    pub state: S,
    /// The interrupts the run paused at, in task order (empty if it did not).
    pub interrupts: Vec<Interrupt>,
    /// The static breakpoint the run stopped at, if any.
    pub breakpoint: Option<Breakpoint>,
}

impl<S> GraphOutput<S> {
    pub(crate) fn finished(state: S) -> Self {
        GraphOutput {
            state,
            interrupts: Vec::new(),
            breakpoint: None,
        }
    }

    /// Whether the run paused (an interrupt or a breakpoint) instead of finishing.
    pub fn is_interrupted(&self) -> bool {
        !self.interrupts.is_empty() || self.breakpoint.is_some()
    }

    /// The state, dropping the rest.
    pub fn into_state(self) -> S {
        self.state
    }
}

/// The state and the interrupts, with the breakpoint only when the run stopped
/// at one: `GraphOutput { state: Draft { .. }, interrupts: [Interrupt { value:
/// "publish?", id: ".." }] }`.
impl<S: std::fmt::Debug> std::fmt::Debug for GraphOutput<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("GraphOutput");
        out.field("state", &self.state);
        out.field("interrupts", &self.interrupts);
        if let Some(breakpoint) = &self.breakpoint {
            out.field("breakpoint", breakpoint);
        }
        out.finish()
    }
}

impl<S> std::ops::Deref for GraphOutput<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.state
    }
}

/// A graph's input schema (LangGraph's `input_schema`): a struct of some of the
/// state's fields, written to the state when it is the input of a run. Fields of
/// the state it does not name are not written, whatever they held.
///
/// Implemented by `#[derive(Schema)]` with `#[schema(state = S)]`, which checks
/// at compile time that each field of the struct is a field of `S` with the same
/// type, and makes the struct a graph input: `app.invoke(Question { .. }, ..)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input schema of the state `{S}`",
    label = "`{Self}` has no `#[derive(Schema)]` with `#[schema(state = {S})]`",
    note = "add `#[derive(Schema)]` and `#[schema(state = {S})]` to the struct `{Self}`; its fields must be fields of `{S}`"
)]
pub trait InputSchema<S: State> {
    /// The update that writes this struct's fields to the state (a reducer field
    /// folds the value in, a topic publishes the items).
    fn into_update(self) -> S::Update;
}

/// A graph's output schema (LangGraph's `output_schema`): a struct of some of the
/// state's fields, what [`CompiledGraph::with_output`](crate::CompiledGraph::with_output)
/// returns instead of the whole state.
///
/// Implemented by `#[derive(Schema)]` with `#[schema(state = S)]`, which checks
/// at compile time that each field of the struct is a field of `S` with the same
/// type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an output schema of the state `{S}`",
    label = "`{Self}` has no `#[derive(Schema)]` with `#[schema(state = {S})]`",
    note = "add `#[derive(Schema)]` and `#[schema(state = {S})]` to the struct `{Self}`; its fields must be fields of `{S}`"
)]
pub trait OutputSchema<S: State>: Sized {
    /// This struct's fields, cloned from `state`.
    fn from_state(state: &S) -> Self;
}

impl<S> GraphOutput<S> {
    /// The output with its state mapped by `f`; the interrupts and the breakpoint
    /// are kept.
    pub(crate) fn map<T>(self, f: impl FnOnce(S) -> T) -> GraphOutput<T> {
        GraphOutput {
            state: f(self.state),
            interrupts: self.interrupts,
            breakpoint: self.breakpoint,
        }
    }
}
