use stategraph::prelude::*;

fn merge(a: Vec<String>, b: Vec<String>, _c: Vec<String>) -> Vec<String> {
    [a, b].concat()
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(merge)]
    log: Vec<String>,
}

fn main() {}
