use stategraph::prelude::*;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer("concat")]
    log: Vec<String>,
}

fn main() {}
