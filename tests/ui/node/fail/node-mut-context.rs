use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &Agent, ctx: &mut Context) -> AgentUpdate {
    let _ = ctx;
    Agent::update().steps(state.steps)
}

fn main() {}
