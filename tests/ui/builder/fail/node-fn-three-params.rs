// A closure of three parameters given to node_fn: a node takes its input and,
// optionally, the context.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Chat {
    turns: u32,
}

fn main() {
    let _graph = StateGraph::<Chat>::new().add_node(node_fn(
        "step",
        |state: &Chat, _ctx: &Context, _extra: u32| Chat::update().turns(state.turns + 1),
    ));
}
