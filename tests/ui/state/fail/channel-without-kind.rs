use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[channel]
    scratch: String,
}

fn main() {}
