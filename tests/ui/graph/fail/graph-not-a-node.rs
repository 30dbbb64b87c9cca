// A fn without #[node] declared as a node: reported at the node (twice: by the
// builder call and by the const check that reads its gotos).
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Ticket {
    text: String,
}

fn plain(_: &Ticket) -> TicketUpdate {
    Ticket::update()
}

fn main() {
    let _graph = graph! {
        state Ticket;
        node plain;
        START -> plain;
    };
}
