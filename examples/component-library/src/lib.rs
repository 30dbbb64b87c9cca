//! A small library of typed workflow parts, written for states it has never seen:
//! what a crate publishing agents on top of stategraph looks like.
//!
//! - [`fields`]: the field markers the parts exchange with their users' states;
//! - [`Research`]: a [component](stategraph::Component) — a compiled graph with its
//!   own state that answers a [`Question`] from a corpus, handing
//!   back an [`Answer`] and its [`Citations`];
//! - [`Summarise`]: a [node set](stategraph::NodeSet) — two nodes added to the
//!   user's own graph, summarising its [`Transcript`] into a
//!   [`Summary`] and noting it in the transcript.
//!
//! A user's state provides the fields under its own names; the compiler checks the
//! fit when a part is mounted (`examples/app.rs` uses both parts with two states).
//!
//! ```
//! use component_library::fields::{Answer, Citations, Question};
//! use component_library::{Document, Research};
//! use stategraph::prelude::*;
//!
//! #[derive(State, Clone, Default, Serialize, Deserialize)]
//! struct Faq {
//!     #[field(Question)]
//!     asked: String,
//!     #[field(Answer)]
//!     said: String,
//!     #[field(Citations)]
//!     refs: Vec<String>,
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let research = Research::new(vec![Document::new("d1", "Rust checks types at compile time.")])?;
//! let node = research.mount::<Faq>();
//! let app = StateGraph::<Faq>::new().add_node(node.clone()).add_edge(START, &node).compile()?;
//! let out = app.invoke(Faq::update().asked("When are types checked?".into()), &RunConfig::new()).await?;
//! assert_eq!(out.refs, ["d1"]);
//! # Ok::<(), GraphError>(())
//! # }).unwrap();
//! ```

#![forbid(unsafe_code)]

use serde::de::DeserializeOwned;
use stategraph::prelude::*;
use stategraph::CompiledGraph;

/// The fields the parts of this library read and write.
pub mod fields {
    stategraph::field! {
        /// What the user asked.
        pub Question: String;
        /// The answer to the [`Question`].
        pub Answer: String;
        /// Ids of the documents an answer is based on.
        pub Citations: Vec<String>;
        /// The conversation or working notes, one line per entry.
        pub Transcript: Vec<String>;
        /// A short summary of the [`Transcript`].
        pub Summary: String;
    }
}

use fields::{Answer, Citations, Question, Summary, Transcript};

/// A document of the corpus [`Research`] searches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The id cited in answers.
    pub id: String,
    /// The text, one or more sentences.
    pub text: String,
}

impl Document {
    /// A document with an id and a text.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Document {
            id: id.into(),
            text: text.into(),
        }
    }
}

/// A document that matched a question, with how many of its words it shares.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Passage {
    /// The document's id.
    pub id: String,
    /// The document's text.
    pub text: String,
    /// Words of the question found in the text.
    pub score: usize,
}

/// The state [`Research`] runs on. Only [`Question`] comes in and only
/// [`Answer`] and [`Citations`] go back out; `passages` stays inside.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct ResearchState {
    /// The question, copied from the parent.
    #[field(Question)]
    pub question: String,
    /// What retrieval found, best first.
    pub passages: Vec<Passage>,
    /// The composed answer.
    #[field(Answer)]
    pub answer: String,
    /// The ids of the passages used.
    #[field(Citations)]
    pub citations: Vec<String>,
}

/// Where the research graph goes after retrieval.
#[derive(Goto, Clone, Copy, Debug)]
enum AfterRetrieve {
    Compose,
    NothingFound,
}

/// Answers a question from a fixed corpus: retrieves the documents sharing the
/// most words with it, then composes an answer citing them (or says that nothing
/// was found). Mount it with [`Component::mount`].
#[derive(Clone)]
pub struct Research {
    graph: CompiledGraph<ResearchState>,
}

impl Component for Research {
    type State = ResearchState;
    type Input = (Question,);
    type Output = (Answer, Citations);
    const NAME: &'static str = "research";

    fn graph(&self) -> &CompiledGraph<ResearchState> {
        &self.graph
    }
}

impl Research {
    /// How many passages an answer uses at most.
    pub const TOP_K: usize = 2;

    /// A research component over `corpus`.
    pub fn new(corpus: Vec<Document>) -> Result<Self, GraphError> {
        let graph = StateGraph::<ResearchState>::new()
            .add_node(node_fn("retrieve", move |s: &ResearchState| {
                ResearchState::update().passages(retrieve(&corpus, &s.question))
            }))
            .add_node(node_fn("compose", |s: &ResearchState| {
                let sentences: Vec<&str> = s.passages.iter().map(|p| p.text.as_str()).collect();
                ResearchState::update()
                    .answer(sentences.join(" "))
                    .citations(s.passages.iter().map(|p| p.id.clone()).collect())
            }))
            .add_node(node_fn("nothing_found", |s: &ResearchState| {
                ResearchState::update()
                    .answer(format!("I found nothing about {:?}.", s.question))
                    .citations(Vec::new())
            }))
            .add_edge(START, "retrieve")
            .add_conditional_edges("retrieve", |s: &ResearchState| {
                if s.passages.is_empty() {
                    AfterRetrieve::NothingFound
                } else {
                    AfterRetrieve::Compose
                }
            })
            .compile()?;
        Ok(Research { graph })
    }
}

/// The words of `text` that carry meaning: lowercase, letters only, longer than
/// three characters.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 3)
        .map(str::to_lowercase)
}

/// The [`Research::TOP_K`] documents sharing the most words with `question`.
fn retrieve(corpus: &[Document], question: &str) -> Vec<Passage> {
    let asked: Vec<String> = words(question).collect();
    let mut found: Vec<Passage> = corpus
        .iter()
        .map(|doc| Passage {
            id: doc.id.clone(),
            text: doc.text.clone(),
            score: words(&doc.text).filter(|w| asked.contains(w)).count(),
        })
        .filter(|p| p.score > 0)
        .collect();
    // Stable: equal scores keep corpus order.
    found.sort_by_key(|p| std::cmp::Reverse(p.score));
    found.truncate(Research::TOP_K);
    found
}

/// Summarises the user's [`Transcript`] into its [`Summary`], then notes the
/// summary in the transcript: two nodes, [`ENTRY`](Summarise::ENTRY) →
/// [`EXIT`](Summarise::EXIT), added with `StateGraph::add_nodes` to any graph
/// whose state has both fields.
#[derive(Debug, Clone, Copy)]
pub struct Summarise {
    lines: usize,
}

impl Summarise {
    /// The node to route to.
    pub const ENTRY: &'static str = "summarise";
    /// The node to route from.
    pub const EXIT: &'static str = "note_summary";

    /// A summary of the last `lines` lines of the transcript.
    pub fn last(lines: usize) -> Self {
        Summarise { lines }
    }
}

impl<S> NodeSet<S> for Summarise
where
    S: Has<Transcript> + Has<Summary> + Serialize + DeserializeOwned,
{
    fn add_to(self, graph: StateGraph<S>) -> StateGraph<S> {
        let lines = self.lines;
        graph
            .add_node(node_fn(Self::ENTRY, move |s: &S| {
                let transcript = s.get::<Transcript>();
                let start = transcript.len().saturating_sub(lines);
                UpdateOf::<S>::new().set::<Summary>(transcript[start..].join(" / "))
            }))
            .add_node(node_fn(Self::EXIT, |s: &S| {
                let note = format!("(summary: {})", s.get::<Summary>());
                UpdateOf::<S>::new().set::<Transcript>(vec![note])
            }))
            .add_edge(Self::ENTRY, Self::EXIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retrieval_ranks_by_shared_words_and_keeps_the_top_k() {
        let corpus = vec![
            Document::new("a", "Tokio runs futures."),
            Document::new("b", "Serde serialises data; serde derives code."),
            Document::new("c", "Serde and tokio together: serialises futures data."),
        ];
        let found = retrieve(&corpus, "How does serde serialise data with tokio futures?");
        let ids: Vec<&str> = found.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["c", "b"]);
        assert!(retrieve(&corpus, "nothing here").is_empty());
    }
}
