//! Subgraphs: a compiled graph reused as a node, with its own typed state.
//!
//! A `research` graph (state `Research`) looks a topic up and summarises it. The
//! `report` graph (state `Report`) fans out to one `research` run per topic with
//! `send`, each run in its own checkpoint namespace, and collects the summaries
//! in topic order. The mapping between the two states is explicit and checked by
//! the compiler: the payload of `send(&research, ..)` must be a `Topic`, and the
//! child's result becomes an update of `Report`.
//!
//! A research run that finds nothing hands control back to the parent with
//! `Command::to_parent()`: it routes the *parent* to `flag` and updates the
//! parent's state (typed as the parent's update).
//!
//! The run is streamed with the `updates` and `values` modes, subgraphs
//! included: every event of a child comes with its namespace
//! (`research:<task id>`). The task id tells the runs apart but means nothing to
//! a reader, so the example labels each run by its topic, which the run's own
//! state holds from its first `values` event on.
//!
//! Run it with `cargo run --example subgraph`.

use futures::StreamExt;
use stategraph::checkpoint::InMemorySaver;
use stategraph::prelude::*;
use stategraph::{IntoNodeOutput, Namespace, NodeOutput, ParentCommand, StreamModes, Subgraph};
use std::collections::HashMap;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// The child's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Research {
    topic: String,
    #[reducer(concat)]
    notes: Vec<String>,
    summary: String,
}

/// The parent's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Report {
    topics: Vec<String>,
    #[reducer(concat)]
    summaries: Vec<String>,
    #[reducer(concat)]
    flagged: Vec<String>,
}

/// What the parent sends to each research run.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Topic(String);

/// A stand-in for a search tool.
fn search_index(topic: &str) -> Vec<String> {
    match topic {
        "pregel" => vec!["supersteps".into(), "message passing".into()],
        "reducers" => vec!["fold writes".into(), "fn(T, T) -> T".into()],
        _ => Vec::new(),
    }
}

#[node]
fn search(r: &Research) -> ResearchUpdate {
    Research::update().notes(search_index(&r.topic))
}

/// Summarises the notes, or, with nothing found, asks the parent to flag the
/// topic: a command for the parent graph, with the parent's update type.
#[node]
fn summarize(r: &Research) -> Result<NodeOutput<Research>, NodeError> {
    if r.notes.is_empty() {
        let to_parent: ParentCommand<&'static str, ReportUpdate> = Command::goto("flag")
            .update(Report::update().flagged(vec![r.topic.clone()]))
            .to_parent();
        return to_parent.into_output();
    }
    Ok(
        NodeOutput::new().with_update(Research::update().summary(format!(
            "{}: {}",
            r.topic,
            r.notes.join(", ")
        ))),
    )
}

#[node]
fn flag(report: &Report) -> ReportUpdate {
    println!("  (flag) no sources for {:?}", report.flagged);
    Report::update()
}

#[tokio::main]
async fn main() -> Result<(), GraphError> {
    let research = StateGraph::<Research>::new()
        .add_sequence((search, summarize))
        .add_edge(START, search)
        .compile()?;

    // The child as a node of the parent: input from a `Topic` payload, output
    // to the parent's summaries.
    let research = Subgraph::mapped(
        "research",
        research,
        |t: &Topic| Research::update().topic(t.0.clone()),
        |done: Research| Report::update().summaries(vec![done.summary]),
    );
    let fan_out = {
        let research = research.clone();
        move |r: &Report| {
            r.topics
                .iter()
                .map(|t| send(&research, Topic(t.clone())))
                .collect::<Vec<_>>()
        }
    };
    let report = StateGraph::<Report>::new()
        .add_node(research)
        .add_node(flag)
        .add_conditional_edges(START, fan_out)
        .compile_with(InMemorySaver::new())?;

    let topics = vec!["pregel".into(), "unicorns".into(), "reducers".into()];
    let config = RunConfig::thread("report-1");
    let modes = StreamModes::from([StreamMode::Updates, StreamMode::Values]).subgraphs();
    let mut events = report.stream(Report::update().topics(topics), &config, modes);
    // Each research run's topic, by the namespace its events come with.
    let mut topic_of: HashMap<Namespace, String> = HashMap::new();
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::Updates { node, .. } => println!("[report] {node} done"),
            StreamEvent::Subgraph { namespace, event } => match event.downcast::<Research>() {
                // After the child's first step (its input), its state names the topic.
                Ok(StreamEvent::Values(state)) => {
                    topic_of
                        .entry(namespace)
                        .or_insert_with(|| state.topic.clone());
                }
                Ok(StreamEvent::Updates { node, .. }) => {
                    let topic = topic_of.get(&namespace).map_or("?", String::as_str);
                    println!("[research {topic:?}] {node} done");
                }
                _ => {}
            },
            _ => {}
        }
    }

    let state = report.get_state(&config).await?.values;
    println!("\nsummaries (in topic order):");
    for s in &state.summaries {
        println!("  {s}");
    }
    println!("flagged: {:?}", state.flagged);
    Ok(())
}
