use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent<S: Clone>(state: &S) -> AgentUpdate {
    let _ = state.clone();
    Agent::update()
}

fn main() {}
