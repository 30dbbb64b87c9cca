use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Route {
    Tools,
    #[goto(end, name = "done")]
    Done,
}

fn main() {}
