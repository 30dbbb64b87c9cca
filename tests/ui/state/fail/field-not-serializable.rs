use stategraph::prelude::*;

#[derive(Clone, Default)]
struct Message {
    text: String,
}

#[derive(State, Clone, Default)]
struct Agent {
    last: Message,
    steps: u32,
}

fn main() {}
