// A state without Default: one error, at the struct, not one per generated impl.
use stategraph::prelude::*;

#[derive(State, Clone)]
struct Agent {
    turns: u32,
}

fn main() {}
