// The `field!` macro and the `#[field]` attribute share a name; a glob import of the
// facade brings both into scope without ambiguity.
#![allow(unused_imports)]
use stategraph::prelude::*;
use stategraph::*;

field!(pub Count: u32);

#[derive(State, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Counter {
    #[field(Count)]
    count: u32,
}

fn read<S: Has<Count>>(state: &S) -> u32 {
    *state.get::<Count>()
}

pub fn main() {
    assert_eq!(read(&Counter { count: 3 }), 3);
}
