use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
struct Route {
    next: &'static str,
}

fn main() {}
