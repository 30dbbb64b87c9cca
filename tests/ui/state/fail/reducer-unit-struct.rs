use stategraph::prelude::*;

struct Concat;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(Concat)]
    log: Vec<String>,
}

fn main() {}
