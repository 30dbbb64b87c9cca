use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Overall {
    question: String,
    answer: String,
}

// `questin` is not a field of `Overall`.
#[derive(Schema)]
#[schema(state = Overall)]
struct In {
    questin: String,
}

fn main() {}
