use stategraph::prelude::*;

fn count(a: Vec<String>, b: Vec<String>) -> usize {
    a.len() + b.len()
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(count)]
    log: Vec<String>,
}

fn main() {}
