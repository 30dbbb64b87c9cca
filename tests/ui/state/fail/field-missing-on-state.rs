use stategraph::prelude::*;

stategraph::field!(pub Transcript: Vec<String>);

fn summarise<S: Has<Transcript>>(state: &S) -> usize {
    state.get::<Transcript>().len()
}

// `Ticket` has a `notes` list, but does not say it is a `Transcript`.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    notes: Vec<String>,
}

fn main() {
    summarise(&Ticket::default());
}
