use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Overall {
    question: String,
    answer: String,
}

// `answer` is a `String` in `Overall`.
#[derive(Schema)]
#[schema(state = Overall)]
struct Out {
    answer: u32,
}

fn main() {}
