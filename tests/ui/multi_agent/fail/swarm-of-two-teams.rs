// The default agent of a typed swarm is a member of the same team.
use stategraph::agents::create_react_agent;
use stategraph::agents::model::FakeChatModel;
use stategraph::agents::multi_agent::{create_swarm_of, SwarmState};
use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Team {
    Alice,
}

#[derive(Goto, Clone, Copy)]
enum Other {
    Bob,
}

fn main() {
    let alice = create_react_agent(FakeChatModel::new(vec![]), ()).with_state::<SwarmState>();
    let _ = create_swarm_of([(Team::Alice, alice)], Other::Bob);
}
