// A plain fn passed to add_node: it needs #[node] (or node_fn).
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Chat {
    turns: u32,
}

fn step(state: &Chat) -> ChatUpdate {
    Chat::update().turns(state.turns + 1)
}

fn main() {
    let _graph = StateGraph::<Chat>::new().add_node(step);
}
