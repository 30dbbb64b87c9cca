use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Overall {
    question: String,
}

#[derive(Schema)]
struct NoAttribute {
    question: String,
}

#[derive(Schema)]
#[schema]
struct EmptyAttribute {
    question: String,
}

#[derive(Schema)]
#[schema(crate = stategraph)]
struct NoState {
    question: String,
}

#[derive(Schema)]
#[schema(state = Overall, sate = Overall)]
struct UnknownOption {
    question: String,
}

#[derive(Schema)]
#[schema(state = Overall, state = Overall)]
struct DuplicateState {
    question: String,
}

#[derive(Schema)]
#[schema(state)]
struct StateWithoutValue {
    question: String,
}

#[derive(Schema)]
#[schema(state = 1)]
struct StateNotAType {
    question: String,
}

fn main() {}
