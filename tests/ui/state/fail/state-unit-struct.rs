use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent;

fn main() {}
