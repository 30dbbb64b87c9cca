use stategraph::prelude::*;

#[derive(Goto, Clone)]
enum Route {
    Tools(String),
    Search {
        query: String,
    },
    #[goto(end)]
    Done,
}

fn main() {}
