// A node set added to a graph whose state lacks a field its nodes use.
use serde::de::DeserializeOwned;
use stategraph::prelude::*;
use stategraph::StateGraph as Graph;

stategraph::field! {
    pub Draft: String;
    pub Revisions: u32;
}

pub struct Polish;

fn polish<S: Has<Draft> + Has<Revisions>>(state: &S) -> UpdateOf<S> {
    UpdateOf::new()
        .set::<Draft>(format!("{}!", state.get::<Draft>()))
        .set::<Revisions>(state.get::<Revisions>() + 1)
}

impl<S> NodeSet<S> for Polish
where
    S: Has<Draft> + Has<Revisions> + Serialize + DeserializeOwned,
{
    fn add_to(self, graph: Graph<S>) -> Graph<S> {
        graph.add_node(node_fn("polish", polish::<S>))
    }
}

// No `Revisions` here.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Post {
    #[field(Draft)]
    body: String,
}

fn main() {
    let _graph = StateGraph::<Post>::new().add_nodes(Polish);
}
