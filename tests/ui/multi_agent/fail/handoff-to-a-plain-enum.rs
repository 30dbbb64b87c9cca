// A team is a `#[derive(Goto)]` enum: its variants name the agents.
use stategraph::agents::multi_agent::handoff_to;

#[derive(Clone, Copy)]
enum Team {
    Alice,
}

fn main() {
    let _ = handoff_to(Team::Alice);
}
