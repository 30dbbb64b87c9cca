// A field type without serde: one error per missing trait, at the field (there
// were two of each, from the channel accessors, the checkpoint visitor and the
// restore).
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
