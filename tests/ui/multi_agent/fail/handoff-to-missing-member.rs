// A handoff to an agent the team does not have is a rustc error, not only a
// compile() one.
use stategraph::agents::multi_agent::handoff_to;
use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Team {
    Alice,
    Bob,
}

fn main() {
    let _ = handoff_to(Team::Alice);
    let _ = handoff_to(Team::Carol);
}
