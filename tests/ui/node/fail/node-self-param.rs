use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

struct Nodes;

impl Nodes {
    #[node]
    fn agent(&self, state: &Agent) -> AgentUpdate {
        Agent::update().steps(state.steps)
    }
}

fn main() {}
