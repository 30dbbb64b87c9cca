use stategraph::prelude::*;

stategraph::field!(pub Transcript: Vec<String>);

// One error per misuse: a marker given twice, a managed field, no marker.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    #[field(Transcript)]
    notes: Vec<String>,
    #[field(Transcript)]
    more: Vec<String>,
    #[field(Transcript)]
    steps: RemainingSteps,
    #[field]
    other: u32,
}

// The errors above do not cascade to uses of the field.
fn _read(ticket: &Ticket) -> usize {
    ticket.get::<Transcript>().len()
}

fn main() {}
