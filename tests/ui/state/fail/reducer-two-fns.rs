use stategraph::prelude::*;

fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(add, add)]
    total: u32,
}

fn main() {}
