use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
fn agent(ctx: &Context) -> AgentUpdate {
    Agent::update().steps(ctx.step() as u32)
}

fn main() {}
