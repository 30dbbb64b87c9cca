use stategraph::prelude::*;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

fn keep_last(_: Vec<String>, b: Vec<String>) -> Vec<String> {
    b
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(concat)]
    #[reducer(keep_last)]
    log: Vec<String>,
}

fn main() {}
