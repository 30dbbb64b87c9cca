use stategraph::prelude::*;

stategraph::field!(pub Transcript: Vec<String>);

// A library's node, written once for every state with a transcript.
#[node]
fn summarise<S: Has<Transcript>>(state: &S) -> UpdateOf<S> {
    let _ = state.get::<Transcript>().len();
    UpdateOf::new()
}

// `Ticket` has notes, but does not say they are the `Transcript`.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    notes: Vec<String>,
}

fn main() {
    let _ = StateGraph::<Ticket>::new().add_node(summarise::<Ticket>);
}
