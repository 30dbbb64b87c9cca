// Every edge, join source, path-map target and send target must name a declared
// node: each unknown name is reported at its token, with the closest declared
// name when it looks like a typo.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

#[node]
fn triage(_: &Ticket) {}

#[node]
fn answer(_: &Ticket) {}

fn route(_: &Ticket) -> &'static str {
    "answer"
}

fn main() {
    let _graph = graph! {
        state Ticket;
        node triage, answer;

        START -> triage -> anser;
        (triage, review) -> answer;
        answer -> match route { "again" => triage, "human" => escalate };
        triage -> send worker;
    };
}
