// After an error in a #[node] signature, the node still exists as a value with its
// input type, so `send`, `NodeSpec` and `Node` uses elsewhere report nothing more.
use stategraph::prelude::*;
use stategraph::NodeSpec;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn worker(item: u32, retries: u32) -> AgentUpdate {
    Agent::update().steps(item + retries)
}

fn main() {
    let _: stategraph::Send = send(worker, 1);
    let _: <worker as NodeSpec>::Input = 1u32;
    let _ = StateGraph::<Agent>::new().add_node(worker);
}
