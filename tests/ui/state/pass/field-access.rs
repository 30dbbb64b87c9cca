// `#[field(Marker)]` implements `Has<Marker>`: a fn generic over `S: Has<..>` reads
// and writes the field of any state that provides it, generic states included.
use stategraph::prelude::*;

stategraph::field! {
    /// A transcript.
    pub Transcript: Vec<String>;
    pub Turns: u32;
}

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

fn take_turn<S: Has<Transcript> + Has<Turns>>(state: &S) -> UpdateOf<S> {
    let turn = state.get::<Turns>() + 1;
    let said = state.get::<Transcript>().len();
    UpdateOf::new()
        .set::<Transcript>(vec![format!("turn {turn} after {said}")])
        .set::<Turns>(turn)
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(concat)]
    #[field(Transcript)]
    log: Vec<String>,
    #[field(Turns)]
    n: u32,
}

// A topic provides its list; a generic state provides its fields too.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Tagged<T: Clone + Send + Sync + 'static> {
    #[channel(topic)]
    #[field(Transcript)]
    lines: Vec<String>,
    #[field(Turns)]
    turns: u32,
    tag: T,
}

pub fn main() {
    let chat = Chat {
        log: vec!["hi".into()],
        n: 1,
    };
    assert_eq!(chat.get::<Turns>(), &1);
    let update = take_turn(&chat).into_inner();
    assert_eq!(update.n, Some(2));
    assert_eq!(
        format!("{update:?}"),
        r#"ChatUpdate { log: ["turn 2 after 1"], n: 2 }"#
    );

    let tagged = Tagged::<u8>::default();
    let update = take_turn(&tagged).into_inner();
    assert_eq!(
        format!("{update:?}"),
        r#"TaggedUpdate { lines: ["turn 1 after 0"], turns: 1 }"#
    );
}
