// A `#[derive(Goto)]` variant of a node's `Command<G>` that names a node the
// graph does not declare fails the build, naming the variant and the node.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[derive(Goto, Clone, Copy)]
enum Triage {
    Answer,
    Escalate,
    #[goto(end)]
    Drop,
}

#[node]
fn triage(_: &Ticket) -> Command<Triage> {
    Command::goto(Triage::Answer)
}

#[node]
fn answer(_: &Ticket) {}

fn main() {
    let _graph = graph! {
        state Ticket;
        node triage, answer;

        START -> triage;
    };
}
