use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

struct WorkItem {
    id: u32,
}

#[node]
fn worker(item: WorkItem) -> AgentUpdate {
    Agent::update().steps(item.id)
}

fn main() {}
