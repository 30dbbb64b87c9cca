use stategraph::prelude::*;

#[derive(State, Clone, Default)]
enum Agent {
    #[default]
    Idle,
    Busy,
}

fn main() {}
