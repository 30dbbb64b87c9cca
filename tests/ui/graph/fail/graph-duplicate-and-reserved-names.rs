// Two nodes with one name, and names the graph reserves.
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
        node triage, answer, triage;
        node START = answer;
        node configurable = answer;

        START -> triage -> answer;
    };
}
