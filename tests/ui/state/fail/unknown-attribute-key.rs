use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[channel(bogus)]
    scratch: String,
}

fn main() {}
