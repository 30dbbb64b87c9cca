// A field type without Default: one error from the derive, at the field (the
// second is rustc's own derive(Default) on the struct).
use stategraph::prelude::*;

#[derive(Clone, Serialize, Deserialize)]
struct Message {
    text: String,
}

#[derive(State, Clone, Default)]
struct Agent {
    last: Message,
    steps: u32,
}

fn main() {}
