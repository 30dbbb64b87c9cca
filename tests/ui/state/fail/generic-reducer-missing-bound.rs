use stategraph::prelude::*;

fn add<T: std::ops::Add<Output = T>>(a: T, b: T) -> T {
    a + b
}

// The reducer is checked once for every instantiation, against the struct's bounds:
// `N` must be declared addable.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Counter<N: Clone + Send + Sync + 'static> {
    #[reducer(add)]
    total: N,
}

fn main() {}
