// A join cannot wait for START or END nor lead to START; START is no target and
// END no source.
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
        state Ticket;
        node triage, answer;

        START -> triage -> answer;
        (triage, END) -> answer;
        (START, triage) -> answer;
        (triage, answer) -> START;
        answer -> START;
        END -> triage;
    };
}
