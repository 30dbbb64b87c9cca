use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(state: &Agent, ctx: &Context, retries: u32) -> AgentUpdate {
    let _ = (ctx, retries);
    Agent::update().steps(state.steps + 1)
}

fn main() {}
