use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Overall {
    question: String,
}

#[derive(Schema)]
#[schema(state = Overall)]
struct Tuple(String);

#[derive(Schema)]
#[schema(state = Overall)]
struct Unit;

#[derive(Schema)]
#[schema(state = Overall)]
enum Either {
    Question(String),
}

fn main() {}
