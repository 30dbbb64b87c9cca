//! One library, two applications: `component_library`'s `Research` component and
//! `Summarise` node set, used by a support desk and by an essay writer whose
//! states have nothing in common but the fields the parts need — under their own
//! names, with their own channels (the desk's citations accumulate through a
//! reducer, the essay's are replaced).
//!
//! The compiler checks each fit: remove `#[field(Citations)]` from `Ticket` and
//! `research.mount::<Ticket>()` stops compiling with "the component `Research`
//! cannot be mounted in a graph of `Ticket`" (the trait `Has<Citations>` is not
//! implemented for `Ticket`).
//!
//! Run it with `cargo run -p component-library --example app`.

use component_library::fields::{Answer, Citations, Question, Summary, Transcript};
use component_library::{Document, Research, Summarise};
use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

/// The support desk's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Ticket {
    customer: String,
    #[field(Question)]
    message: String,
    #[field(Answer)]
    reply: String,
    /// Every source ever cited on this ticket.
    #[reducer(concat)]
    #[field(Citations)]
    sources: Vec<String>,
    #[reducer(concat)]
    #[field(Transcript)]
    log: Vec<String>,
    #[field(Summary)]
    handover: String,
}

/// The essay writer's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Essay {
    #[field(Question)]
    topic: String,
    #[field(Answer)]
    body: String,
    #[field(Citations)]
    bibliography: Vec<String>,
    #[reducer(concat)]
    #[field(Transcript)]
    notes: Vec<String>,
    #[field(Summary)]
    abstract_: String,
    words: usize,
}

fn corpus() -> Vec<Document> {
    vec![
        Document::new(
            "refunds",
            "Refunds are paid within five days of the return.",
        ),
        Document::new(
            "returns",
            "Returns are accepted for thirty days after delivery.",
        ),
        Document::new(
            "borrow",
            "The borrow checker rejects data races at compile time.",
        ),
        Document::new(
            "traits",
            "Traits describe what a type can do; the compiler checks them.",
        ),
    ]
}

async fn support_desk(research: &Research) -> Result<Ticket, GraphError> {
    let research = research.mount::<Ticket>();
    let desk = StateGraph::<Ticket>::new()
        .add_node(research.clone())
        .add_node(node_fn("reply", |t: &Ticket| {
            Ticket::update().log(vec![format!("agent: {}", t.reply)])
        }))
        .add_nodes(Summarise::last(2))
        .add_edge(START, &research)
        .add_edge(&research, "reply")
        .add_edge("reply", Summarise::ENTRY)
        .add_edge(Summarise::EXIT, END)
        .compile()?;

    let message = "How many days until refunds are paid after a return?";
    let out = desk
        .invoke(
            Ticket::update()
                .customer("ada".into())
                .message(message.into())
                .sources(vec!["ticket-42".into()])
                .log(vec![format!("ada: {message}")]),
            &RunConfig::new(),
        )
        .await?;
    Ok(out.into_state())
}

async fn essay_writer(research: &Research) -> Result<Essay, GraphError> {
    let research = research.mount::<Essay>();
    let writer = StateGraph::<Essay>::new()
        .add_node(research.clone())
        .add_node(node_fn("count", |e: &Essay| {
            let words = e.body.split_whitespace().count();
            Essay::update().words(words).notes(vec![format!(
                "{words} words, {} sources",
                e.bibliography.len()
            )])
        }))
        .add_nodes(Summarise::last(1))
        .add_edge(START, &research)
        .add_edge(&research, "count")
        .add_edge("count", Summarise::ENTRY)
        .compile()?;
    let out = writer
        .invoke(
            Essay::update().topic("Why does the compiler reject data races?".into()),
            &RunConfig::new(),
        )
        .await?;
    Ok(out.into_state())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), GraphError> {
    let research = Research::new(corpus())?;

    let ticket = support_desk(&research).await?;
    println!("support desk ({}):", ticket.customer);
    println!("  reply:    {}", ticket.reply);
    println!("  sources:  {}", ticket.sources.join(", "));
    println!("  handover: {}", ticket.handover);

    let essay = essay_writer(&research).await?;
    println!("essay writer:");
    println!("  body:     {}", essay.body);
    println!("  sources:  {}", essay.bibliography.join(", "));
    println!("  words:    {}", essay.words);
    println!("  abstract: {}", essay.abstract_);
    Ok(())
}
