use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &Agent) -> Result<AgentUpdate, i32> {
    Ok(Agent::update().steps(state.steps))
}

fn main() {}
