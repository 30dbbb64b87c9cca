use stategraph::prelude::*;

#[derive(State, Clone, Default)]
struct Agent {
    #[reducer("concat")]
    log: Vec<String>,
    #[channel(bogus)]
    scratch: String,
    #[channel(topic, ephemeral)]
    events: Vec<String>,
    steps: u32,
}

fn main() {}
