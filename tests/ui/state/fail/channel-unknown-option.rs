use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[channel(ephemeral(gaurd = false))]
    scratch: String,
}

fn main() {}
