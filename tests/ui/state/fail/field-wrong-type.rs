use stategraph::prelude::*;

stategraph::field!(pub Transcript: Vec<String>);

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    #[field(Transcript)]
    notes: Vec<u32>,
}

fn main() {}
