use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent<'a, T> {
    name: &'a str,
    items: Vec<T>,
}

fn main() {}
