// After an attribute error, the derive still provides `State`, the update type and
// a lenient builder, so the only error is the one about the attribute: not
// "`Agent` is not a graph state" at every use.
use stategraph::prelude::*;
use stategraph::State;

#[derive(State, Clone, Default)]
struct Agent {
    #[channel(bogus)]
    log: Vec<String>,
    steps: u32,
}

#[derive(Goto, Clone, Copy)]
enum Route {
    Next,
    #[goto(end)]
    Done,
}

#[node]
fn next(state: &Agent) -> Command<Route> {
    Command::goto(Route::Done).update(Agent::update().steps(state.steps + 1).log(vec![]))
}

#[node]
fn plain(_state: &Agent) -> AgentUpdate {
    Agent::update().log_item(1)
}

fn requires_state<S: State>() {}

fn main() {
    requires_state::<Agent>();
    let _ = Route::Next;
}
