use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    steps: u32,
    #[channel(last_value)]
    remaining: RemainingSteps,
}

fn main() {}
