use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Agent {
    steps: u32,
}

#[node]
struct Tools {
    name: String,
}

fn main() {
    let _ = Tools {
        name: String::new(),
    }
    .name;
}
