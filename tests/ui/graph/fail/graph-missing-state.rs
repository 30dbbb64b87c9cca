// A declaration without its state type.
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
        node triage;
        START -> triage;
    };
}
