use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Chat<M: Clone + Send + Sync + 'static> {
    #[reducer(concat)]
    log: Vec<M>,
}

#[derive(Clone, Default)]
struct Opaque;

fn main() {
    // `Chat<M>` is a state only for an `M` its channels can checkpoint.
    let _ = StateGraph::<Chat<Opaque>>::new();
}
