use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[derive(Goto, Clone, Copy)]
enum Route {
    Agent,
}

#[node]
fn worker(item: &u32) -> Command<Route> {
    Command::goto(Route::Agent).update(Agent::update().steps(*item))
}

fn main() {}
