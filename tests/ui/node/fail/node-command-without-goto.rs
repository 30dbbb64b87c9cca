use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &Agent) -> Command {
    Command::update_only(Agent::update().steps(state.steps + 1))
}

fn main() {}
