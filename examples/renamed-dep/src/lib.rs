//! The README's tour, written against the stategraph facade renamed to `sg` in
//! Cargo.toml (`sg = { package = "stategraph", .. }`). No macro here says where the
//! facade is: they read Cargo.toml. `tests/tour.rs` runs the graph, and repeats it
//! with every macro told `crate = sg` explicitly.
//!
//! The macros also resolve the renamed facade in doctests:
//!
//! ```
//! use sg::prelude::*;
//!
//! #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
//! struct Counter {
//!     n: u32,
//! }
//!
//! #[node]
//! fn bump(c: &Counter) -> CounterUpdate {
//!     Counter::update().n(c.n + 1)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), GraphError> {
//! let app = StateGraph::<Counter>::new().add_node(bump).add_edge(START, bump).compile()?;
//! assert_eq!(app.invoke(Counter::update().n(1), &RunConfig::new()).await?.n, 2);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

use sg::agents::tool;
use sg::prelude::*;

/// The reducer of [`Essay::drafts`].
pub fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// The tour's state: a last-value field, a reducer field and a topic.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Essay {
    pub topic: String,
    #[reducer(append)]
    pub drafts: Vec<String>,
    #[channel(topic(accumulate))]
    pub reviews: Vec<String>,
}

/// Where [`write`](struct@write) goes next.
#[derive(Goto, Clone, Copy, Debug)]
pub enum Next {
    Write,
    #[goto(name = "fan_out")]
    Review,
    #[goto(end)]
    Done,
}

/// Writes drafts until there are two, then has them reviewed.
#[node]
pub async fn write(essay: &Essay) -> Command<Next> {
    if essay.drafts.len() == 2 {
        return Command::goto(Next::Review);
    }
    let draft = format!("draft {} on {}", essay.drafts.len() + 1, essay.topic);
    Command::goto(Next::Write).update(Essay::update().drafts(vec![draft]))
}

/// Sends each draft to [`review`](struct@review).
#[node]
pub fn fan_out(essay: &Essay) -> Vec<sg::Send> {
    essay
        .drafts
        .iter()
        .map(|draft| send(review, draft.clone()))
        .collect()
}

/// Reviews one draft, reached by `send`.
#[node(state = Essay)]
pub fn review(draft: String) -> EssayUpdate {
    let words = count_words::call(draft.clone());
    Essay::update().reviews_item(format!("{draft}: {words} words"))
}

/// Counts the words of a text.
#[tool]
pub fn count_words(
    /// The text to count.
    text: String,
) -> usize {
    text.split_whitespace().count()
}

/// The tour's graph: `write` loops, then `fan_out` sends every draft to `review`.
pub fn graph() -> Result<CompiledGraph<Essay>, GraphError> {
    StateGraph::<Essay>::new()
        .add_node(write)
        .add_node(fan_out)
        .add_node(review)
        .add_edge(START, write)
        .add_edge(review, END)
        .compile()
}

/// The same graph declared with `graph!`, which finds `sg` in Cargo.toml too.
pub fn declared_graph() -> Result<CompiledGraph<Essay>, GraphError> {
    graph! {
        state Essay;
        node write, fan_out, review;

        START -> write;
        fan_out -> send review;
        review -> END;
    }
    .compile()
}
