use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

#[node]
fn step(s: &S) -> SUpdate {
    S::update().n(s.n + 1)
}

fn main() {
    // A router returns routes (or a Result of them), not a number.
    let _ = StateGraph::<S>::new()
        .add_node(step)
        .add_edge(START, step)
        .add_conditional_edges(step, |s: &S| s.n);
}
