use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent(Vec<String>, u32);

fn main() {}
