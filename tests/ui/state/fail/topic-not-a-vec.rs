use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[channel(topic)]
    events: String,
}

fn main() {}
