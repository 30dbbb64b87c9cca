//! A node's view naming a field the state lacks is reported once, at the field:
//! the node taking the view and the graph adding the node add nothing.

use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Essay {
    topic: String,
    draft: String,
}

#[derive(Schema, Clone, Serialize, Deserialize)]
#[schema(state = Essay)]
struct Plan {
    topik: String,
}

#[node]
fn write(plan: &Plan) -> EssayUpdate {
    Essay::update().draft(plan.topik.clone())
}

fn main() {
    let _ = StateGraph::<Essay>::new()
        .add_node(write)
        .add_edge(START, write)
        .compile();
}
