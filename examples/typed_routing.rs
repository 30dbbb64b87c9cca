//! Typed routing: where a node may go is a Rust type, checked twice.
//!
//! `triage` returns `Command<Triage>`: its possible destinations are the variants
//! of `#[derive(Goto)] enum Triage`, and the router after `answer` returns
//! `AfterAnswer`. The compiler rejects a route that is not a variant (no typo'd
//! node names), and `compile()` rejects a graph that lacks a node one of those
//! types names — shown below with a graph that forgot `escalate`. The drawing
//! (`draw_mermaid`) lists every declared route, which LangGraph cannot know.
//!
//! The end of `main` declares the same graph with `graph!`: there rustc itself
//! checks the variants, so the graph without `escalate` would not build at all.
//!
//! Run it with `cargo run --example typed_routing`.

use stategraph::prelude::*;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
    reply: String,
    #[reducer(concat_names)]
    handled_by: Vec<String>,
}

/// Where `triage` may send a ticket. Variants name nodes (snake_case).
#[derive(Goto, Clone, Copy, Debug)]
enum Triage {
    Answer,
    Escalate,
    /// Spam ends the run.
    #[goto(end)]
    Drop,
}

/// Where the router after `answer` may go.
#[derive(Goto, Clone, Copy, Debug)]
enum AfterAnswer {
    Escalate,
    #[goto(end)]
    Done,
}

#[node]
fn triage(t: &Ticket) -> Command<Triage> {
    let route = if t.text.contains("win a prize") {
        Triage::Drop
    } else if t.text.contains("lawyer") {
        Triage::Escalate
    } else {
        Triage::Answer
    };
    Command::goto(route).update(Ticket::update().handled_by(vec!["triage".into()]))
}

#[node]
fn answer(t: &Ticket) -> TicketUpdate {
    let reply = if t.text.contains("refund") {
        "Refunds take 5 days."
    } else {
        "I don't know."
    };
    Ticket::update()
        .reply(reply.into())
        .handled_by(vec!["answer".into()])
}

#[node]
fn escalate(_: &Ticket) -> TicketUpdate {
    Ticket::update()
        .reply("A human will call you.".into())
        .handled_by(vec!["escalate".into()])
}

fn after_answer(t: &Ticket) -> AfterAnswer {
    if t.reply == "I don't know." {
        AfterAnswer::Escalate
    } else {
        AfterAnswer::Done
    }
}

fn concat_names(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[tokio::main]
async fn main() -> Result<(), GraphError> {
    let app = StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(answer)
        .add_node(escalate)
        .add_edge(START, triage)
        .add_conditional_edges(answer, after_answer)
        .compile()?;

    for text in [
        "How do I get a refund?",
        "My lawyer will call you",
        "Click here to win a prize",
        "What is the meaning of life?",
    ] {
        let out = app
            .invoke(Ticket::update().text(text.into()), &RunConfig::new())
            .await?;
        println!(
            "{text:<32} -> {:?} (via {})",
            out.reply,
            out.handled_by.join(" -> ")
        );
    }

    // A graph that forgot `escalate`: both `Triage` and `AfterAnswer` name it.
    let err = StateGraph::<Ticket>::new()
        .add_node(triage)
        .add_node(answer)
        .add_edge(START, triage)
        .add_conditional_edges(answer, after_answer)
        .compile()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    println!("\ncompile() without `escalate`:\n{err}");

    // The same graph declared with `graph!`: rustc checks its shape, so the
    // graph without `escalate` above would not build (`Triage::Escalate` and
    // `AfterAnswer::Escalate` name it), and the drawing is the builder's.
    let declared = graph! {
        state Ticket;
        node triage, answer, escalate;

        START -> triage;
        answer -> match after_answer;
    }
    .compile()?;
    let out = declared
        .invoke(
            Ticket::update().text("How do I get a refund?".into()),
            &RunConfig::new(),
        )
        .await?;
    println!(
        "\ngraph! version: {:?} (via {})",
        out.reply,
        out.handled_by.join(" -> ")
    );
    assert_eq!(declared.draw_mermaid(), app.draw_mermaid());

    println!("\n{}", app.draw_mermaid());
    Ok(())
}
