use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(async |a, b| a + b)]
    total: u64,
}

fn main() {}
