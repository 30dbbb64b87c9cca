use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &Agent, retries: u32) -> AgentUpdate {
    Agent::update().steps(state.steps + retries)
}

fn main() {}
