// A generic state: the update type, channel set and builder carry the parameters,
// and each instantiation is a graph state of its own.
use stategraph::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat<M: Clone + Send + Sync + 'static> {
    #[reducer(concat)]
    log: Vec<M>,
    #[channel(topic)]
    events: Vec<M>,
    last: Option<M>,
    n: u32,
    steps: RemainingSteps,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Pair<A, B = String>
where
    A: Clone,
{
    a: A,
    #[channel(ephemeral)]
    b: B,
    // `Self` means `Pair<A, B>` in the generated types too.
    #[serde(skip)]
    #[channel(untracked)]
    me: Option<Box<Self>>,
}

fn assert_state<S: stategraph::State>() {}

pub fn main() {
    assert_state::<Chat<String>>();
    assert_state::<Chat<u64>>();
    assert_state::<Pair<u8>>();
    assert_state::<Pair<u8, Vec<u8>>>();
    let update = Chat::<String>::update()
        .log(vec!["hi".to_owned()])
        .events_item("e".to_owned())
        .n(1);
    assert_eq!(
        format!("{update:?}"),
        r#"ChatUpdate { log: ["hi"], events: One("e"), n: 1 }"#
    );
    let _input: stategraph::GraphInput<Chat<String>> = update.clone().into();
    let _: PairUpdate<u8> = Pair::<u8>::update().a(1).b("x".to_owned());
}

// A const parameter is carried like a type parameter.
#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Window<const N: usize> {
    #[reducer(concat)]
    items: Vec<u32>,
}

impl<const N: usize> Window<N> {
    #[allow(dead_code)]
    fn full(&self) -> bool {
        self.items.len() >= N
    }
}

const _: fn() = assert_state::<Window<4>>;
