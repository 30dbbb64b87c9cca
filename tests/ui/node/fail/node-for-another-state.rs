// A node written for one state, added to the graph of another: reported at the
// node's parameter, with the graph's state.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Chat {
    turns: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Search {
    query: String,
}

#[node]
fn step(state: &Search) -> SearchUpdate {
    Search::update().query(format!("{}!", state.query))
}

fn main() {
    let _graph = StateGraph::<Chat>::new().add_node(step);
}
