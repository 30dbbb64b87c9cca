use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(|update| update)]
    total: u64,
}

fn main() {}
