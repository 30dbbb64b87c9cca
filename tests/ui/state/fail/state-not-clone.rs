// A state without Clone: one error, at the struct.
use stategraph::prelude::*;

#[derive(State, Default)]
struct Agent {
    turns: u32,
}

fn main() {}
