use stategraph::prelude::*;

fn keep(current: Vec<String>) -> Vec<String> {
    current
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(keep)]
    log: Vec<String>,
}

fn main() {}
