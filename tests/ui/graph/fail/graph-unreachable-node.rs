// A node nothing reaches from START (no edge, goto, route or send) is reported
// at its declaration, unless it is marked #[dynamic].
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[node]
fn triage(_: &Ticket) {}

#[node]
fn answer(_: &Ticket) {}

#[node]
fn archive(_: &Ticket) {}

#[node]
fn fallback(_: &Ticket) {}

fn main() {
    let _graph = graph! {
        state Ticket;
        node triage, answer, archive;
        #[dynamic]
        node fallback;

        START -> triage -> answer;
    };
}
