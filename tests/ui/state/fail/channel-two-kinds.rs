use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[channel(ephemeral, any_value)]
    scratch: String,
}

fn main() {}
