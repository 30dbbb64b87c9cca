use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer]
    log: Vec<String>,
}

fn main() {}
