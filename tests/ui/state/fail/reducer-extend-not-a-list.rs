// `extend` is the reducer of a list field; on a field of another type the error
// says so.
use stategraph::channels::extend;
use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Counter {
    #[reducer(extend)]
    total: u32,
}

fn main() {}
