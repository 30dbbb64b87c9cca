use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Overall {
    question: String,
}

#[derive(Schema)]
#[schema(state = Overall)]
struct In {
    #[schema(state = Overall)]
    question: String,
}

fn main() {}
