use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
#[goto(end)]
enum Route {
    Tools,
}

fn main() {}
