use stategraph::prelude::*;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default)]
#[reducer(concat)]
struct Agent {
    log: Vec<String>,
}

fn main() {}
