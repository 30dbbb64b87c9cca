use stategraph::prelude::*;

const LIMIT: u32 = 10;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(LIMIT)]
    total: u32,
}

fn main() {}
