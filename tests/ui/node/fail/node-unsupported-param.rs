use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &mut Agent) -> AgentUpdate {
    state.steps += 1;
    Agent::update()
}

fn main() {}
