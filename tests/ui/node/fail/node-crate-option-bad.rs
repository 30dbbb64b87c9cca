//! `#[node(crate = ..)]`: a bad value and a second `crate` are reported, together
//! with the other options' errors.

use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node(crate = 1)]
fn not_a_path(state: &Agent) -> AgentUpdate {
    Agent::update().steps(state.steps)
}

#[node(crate = stategraph, state = Agent, crate = "stategraph")]
fn duplicate(state: &Agent) -> AgentUpdate {
    Agent::update().steps(state.steps)
}

fn main() {
    let _ = StateGraph::<Agent>::new().add_node(not_a_path).add_node(duplicate);
}
