// A graph with no edge from START would never run a node.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[node]
fn triage(_: &Ticket) {}

#[node]
fn answer(_: &Ticket) {}

fn main() {
    let _graph = graph! {
        state Ticket;
        node triage, answer;

        triage -> answer;
    };
}
