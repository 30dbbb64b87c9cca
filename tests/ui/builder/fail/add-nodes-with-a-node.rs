// add_nodes takes a NodeSet; a single node goes to add_node.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Chat {
    turns: u32,
}

#[node]
fn step(state: &Chat) -> ChatUpdate {
    Chat::update().turns(state.turns + 1)
}

fn main() {
    let _graph = StateGraph::<Chat>::new().add_nodes(step);
}
