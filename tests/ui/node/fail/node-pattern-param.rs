use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(Agent { steps }: &Agent) -> AgentUpdate {
    Agent::update().steps(steps + 1)
}

fn main() {}
