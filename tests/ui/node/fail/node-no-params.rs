use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent() -> AgentUpdate {
    Agent::update().steps(1)
}

fn main() {}
