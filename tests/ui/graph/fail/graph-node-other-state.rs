// A node written for another state: reported at the node in the declaration,
// naming the graph's state and the one the node is for.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[node]
fn triage(_: &Ticket) {}

#[node]
fn answer(_: &Ticket) {}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Search {
    query: String,
}

#[node]
fn search(s: &Search) -> SearchUpdate {
    Search::update().query(s.query.clone())
}

fn main() {
    let _graph = graph! {
        state Ticket;
        node triage, search;

        START -> triage -> search;
    };
}
