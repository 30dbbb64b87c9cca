use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &impl Clone) -> AgentUpdate {
    let _ = state.clone();
    Agent::update()
}

fn main() {}
