// The schema reads the state's fields: they must be visible where it is
// declared (the same module, or `pub` fields).
mod state {
    use stategraph::prelude::*;

    #[derive(State, Clone, Default, Serialize, Deserialize)]
    pub struct Overall {
        answer: String,
    }
}

use stategraph::prelude::*;

#[derive(Schema)]
#[schema(state = state::Overall)]
struct Out {
    answer: String,
}

fn main() {}
