use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
enum Route<T> {
    Tools,
    Other(std::marker::PhantomData<T>),
}

fn main() {}
