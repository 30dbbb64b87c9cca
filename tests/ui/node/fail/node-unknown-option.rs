use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node(name = "agent")]
fn agent(state: &Agent) -> AgentUpdate {
    Agent::update().steps(state.steps)
}

fn main() {}
