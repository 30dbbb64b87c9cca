use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[derive(Clone, Copy)]
enum Route {
    Tools,
}

#[node]
fn agent(_state: &Agent) -> Command<Route> {
    Command::goto(Route::Tools)
}

fn main() {}
