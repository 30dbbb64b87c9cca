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
    // The error of a fallible router must be an error type (it becomes the
    // run's `RouterFailed` source), not a plain number.
    let _ = StateGraph::<S>::new()
        .add_node(step)
        .add_edge(START, step)
        .add_conditional_edges(step, |s: &S| -> Result<&'static str, u32> {
            if s.n > 3 {
                Err(s.n)
            } else {
                Ok("step")
            }
        });
}
