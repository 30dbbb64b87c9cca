use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Route {
    #[goto(name = "")]
    Empty,
    #[goto(name = "tools|search")]
    Pipe,
    #[goto(name = "sub:node")]
    Colon,
    #[goto(name = "__start__")]
    Start,
    #[goto(name = "__end__")]
    End,
}

fn main() {}
