// `#[reducer(|current, update| ..)]`: a closure is the field's `fn(T, T) -> T`.
use stategraph::prelude::*;

#[derive(State, Clone, Default, Debug)]
struct Agent {
    #[reducer(|a, b| a + b)]
    total: u64,
    #[reducer(|mut log: Vec<String>, more| {
        log.extend(more);
        log
    })]
    log: Vec<String>,
}

#[derive(State, Clone, Default, Debug, Serialize, Deserialize)]
struct Generic<T: Clone + Send + Sync + 'static> {
    #[reducer(|mut a: Vec<T>, b| {
        a.extend(b);
        a
    })]
    items: Vec<T>,
}

pub fn main() {
    let _ = Agent::update().total(1).log(vec!["a".to_owned()]);
    let _ = Generic::<u8>::update().items(vec![1]);
}
