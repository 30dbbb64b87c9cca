// A closure reducer is typed as `fn(T, T) -> T` with the field's type.
use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(|a: u32, b: u32| a + b)]
    total: u64,
    #[reducer(|a, b| a + b)]
    log: Vec<String>,
}

fn main() {}
