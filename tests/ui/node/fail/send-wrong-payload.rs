// A Send's payload is checked against the input type of the node it starts.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Jobs {
    done: u32,
}

#[node]
fn square(n: u32) -> JobsUpdate {
    Jobs::update().done(n * n)
}

fn main() {
    let _ = send(square, "three");
}
