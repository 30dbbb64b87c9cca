// The derive that routes is Goto; on an enum, State reports that and nothing else.
use stategraph::prelude::*;

#[derive(State)]
enum Route {
    Search,
    Answer,
}

fn main() {}
