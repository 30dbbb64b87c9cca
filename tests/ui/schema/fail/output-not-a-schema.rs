use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Overall {
    answer: String,
}

// Forgot `#[derive(Schema)]`.
struct Out {
    answer: String,
}

fn main() {
    let app = StateGraph::<Overall>::new()
        .add_node(node_fn("a", |_: &Overall| ()))
        .add_edge(START, "a")
        .compile()
        .unwrap();
    let _ = app.with_output::<Out>();
}
