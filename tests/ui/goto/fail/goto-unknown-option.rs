use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Route {
    Tools,
    #[goto(ned)]
    Done,
}

fn main() {}
