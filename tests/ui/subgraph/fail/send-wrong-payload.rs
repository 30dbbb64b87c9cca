use stategraph::prelude::*;
use stategraph::Subgraph;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Child {
    topic: String,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Parent {
    topics: Vec<String>,
}

#[derive(Clone, Serialize, Deserialize)]
struct Topic(String);

fn main() {
    let child = StateGraph::<Child>::new()
        .add_node(node_fn("n", |_: &Child| {}))
        .add_edge(START, "n")
        .compile()
        .unwrap();
    let research = Subgraph::mapped(
        "research",
        child,
        |t: &Topic| Child::update().topic(t.0.clone()),
        |_: Child| Parent::update(),
    );
    // The subgraph takes a `Topic`: a `String` payload does not compile.
    let _ = send(&research, "pregel".to_string());
}
