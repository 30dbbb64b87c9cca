use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(|a, b| a + b)]
    total: u32,
}

fn main() {}
