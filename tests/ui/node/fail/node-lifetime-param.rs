use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

// The input lives in the engine for the whole task: no borrowed lifetimes.
#[node]
fn agent<'a>(state: &'a Agent) -> AgentUpdate {
    Agent::update().steps(state.steps + 1)
}

fn main() {
    let _ = StateGraph::<Agent>::new().add_node(agent);
}
