// One error per field whose type cannot be checkpointed, whatever its channel.
use stategraph::prelude::*;

#[derive(Clone, Default)]
struct Message {
    text: String,
}

fn keep_last(_: Message, b: Message) -> Message {
    b
}

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer(keep_last)]
    last: Message,
    #[channel(topic)]
    inbox: Vec<Message>,
    // Never checkpointed: no serde needed.
    #[channel(untracked)]
    scratch: Message,
}

fn main() {}
