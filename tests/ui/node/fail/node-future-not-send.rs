use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

use std::rc::Rc;

async fn tick() {}

#[node]
async fn agent(state: &Agent) -> AgentUpdate {
    let local = Rc::new(state.steps);
    tick().await;
    Agent::update().steps(*local)
}

fn main() {}
