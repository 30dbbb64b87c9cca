//! `fanout_100`: a parent fans out with `Send` to 100 runs of a compiled subgraph
//! with its own state, input and output (LangGraph's "fanout to subgraph").

use super::{runtime, stream_values};
use crate::harness::{expect, Workload};
use serde::{Deserialize, Serialize};
use stategraph::{node_fn, send, State, StateGraph, Subgraph, END, START};

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Overall {
    subjects: Vec<String>,
    #[reducer(concat)]
    jokes: Vec<String>,
}

/// The subgraph's state: both fields LastValue (no reducer inside).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct JokeState {
    subject: String,
    jokes: Vec<String>,
}

/// The subgraph's input schema: `{subject}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct JokeInput {
    subject: String,
}

const BUMPS: &str = " a a a a a a a a a a";

pub fn build(n: usize, checkpointed: bool) -> Workload {
    let sub = StateGraph::<JokeState>::new()
        .add_node(node_fn("edit", |s: &JokeState| {
            JokeState::update().subject(format!("{} - hohoho", s.subject))
        }))
        .add_node(node_fn("generate", |s: &JokeState| {
            JokeState::update().jokes(vec![format!("Joke about {}", s.subject)])
        }))
        .add_node(node_fn("bump", |s: &JokeState| {
            let first = s.jokes.first().map_or("", String::as_str);
            JokeState::update().jokes(vec![format!("{first} a")])
        }))
        .add_edge(START, "edit")
        .add_edge("edit", "generate")
        .add_edge("generate", "bump")
        .add_edge("generate", END)
        .add_conditional_edges("bump", |s: &JokeState| {
            if s.jokes.first().is_some_and(|j| j.ends_with(BUMPS)) {
                END
            } else {
                "bump"
            }
        })
        .compile()
        .unwrap_or_else(|e| panic!("fanout subgraph: {e}"));
    // Output schema `{jokes}`: only the jokes go back to the parent.
    let joke = Subgraph::mapped(
        "generate_joke",
        sub,
        |i: &JokeInput| JokeState::update().subject(i.subject.clone()),
        |done: JokeState| Overall::update().jokes(done.jokes),
    );
    let target = joke.clone();
    let graph = StateGraph::<Overall>::new()
        .add_node(joke)
        .add_conditional_edges(START, move |s: &Overall| {
            s.subjects
                .iter()
                .map(|subject| {
                    send(
                        &target,
                        JokeInput {
                            subject: subject.clone(),
                        },
                    )
                })
                .collect::<Vec<_>>()
        })
        .add_edge("generate_joke", END);
    let memory = std::sync::Arc::new(stategraph::checkpoint::InMemorySaver::new());
    let graph = if checkpointed {
        graph.compile_with(std::sync::Arc::clone(&memory)
            as std::sync::Arc<dyn stategraph::checkpoint::Checkpointer>)
    } else {
        graph.compile()
    }
    .unwrap_or_else(|e| panic!("fanout graph: {e}"));

    let subjects: Vec<String> = (0..n)
        .map(|_| (0..1000).map(|_| fastrand::lowercase()).collect())
        .collect();
    let expected: Vec<String> = subjects
        .iter()
        .map(|s| format!("Joke about {s} - hohoho{BUMPS}"))
        .collect();
    let rt = runtime();
    let input_subjects = subjects.clone();
    let workload = Workload::new(
        move || {
            let input = Overall::update().subjects(input_subjects.clone());
            rt.block_on(stream_values(&graph, input))
        },
        move |(last, chunks)| {
            expect(last.jokes.len() == n, || {
                format!("len(jokes)={}", last.jokes.len())
            })?;
            expect(last.jokes == expected, || {
                "jokes differ from expected (content/order)".to_owned()
            })?;
            expect(last.subjects == subjects, || "subjects changed".to_owned())?;
            expect(chunks == 2, || {
                format!("expected 2 values chunks, got {chunks}")
            })
        },
    );
    if checkpointed {
        workload.with_stored(crate::harness::memory_stored(memory))
    } else {
        workload
    }
}
