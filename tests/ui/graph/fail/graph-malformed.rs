// Malformed declarations: each statement that does not parse is reported and
// the rest is still read, so one build shows every mistake.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[node]
fn triage(_: &Ticket) {}

#[node]
fn answer(_: &Ticket) {}

fn main() {
    let _graph = graph! {
        stat Ticket;
        node triage, answer;
        #[deferred]
        node answer2 = answer;
        #[retry]
        node answer3 = answer;

        START -> triage ->;
        triage answer;
        answer -> match;
        (triage, answer) -> match router;
    };
}
