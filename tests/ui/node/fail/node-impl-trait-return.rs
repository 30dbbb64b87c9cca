use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &Agent) -> impl Into<AgentUpdate> {
    Agent::update().steps(state.steps)
}

fn main() {}
