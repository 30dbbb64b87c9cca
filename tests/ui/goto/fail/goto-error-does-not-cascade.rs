// After an error in a #[derive(Goto)] enum, it still implements `GotoTarget`, so the
// nodes that route with it report nothing more.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[derive(Goto, Clone, Copy)]
enum Route {
    Agent,
    #[goto(name = "")]
    Nowhere,
}

#[node]
fn agent(state: &Agent) -> Command<Route> {
    if state.steps > 3 {
        Command::goto(Route::Nowhere)
    } else {
        Command::goto(Route::Agent)
    }
}

fn main() {}
