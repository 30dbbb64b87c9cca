use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent<T> {
    items: Vec<T>,
}

fn main() {}
