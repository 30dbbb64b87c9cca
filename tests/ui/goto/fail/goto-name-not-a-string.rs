use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Route {
    #[goto(name = tools)]
    Tools,
}

fn main() {}
