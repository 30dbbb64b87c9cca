// The same for a typed router of a conditional edge: a variant of its return
// type that names no declared node is reported at the router.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[node]
fn triage(_: &Ticket) {}

#[node]
fn answer(_: &Ticket) {}

#[derive(Goto, Clone, Copy)]
enum AfterAnswer {
    Review,
    #[goto(end)]
    Done,
}

fn after_answer(_: &Ticket) -> AfterAnswer {
    AfterAnswer::Done
}

fn main() {
    let _graph = graph! {
        state Ticket;
        node triage, answer;

        START -> triage -> answer -> match after_answer;
    };
}
