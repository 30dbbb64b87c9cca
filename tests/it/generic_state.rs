//! `#[derive(State)]` on a generic struct (issue 11): one state definition, two
//! instantiations, each a graph of its own that runs, checkpoints and resumes.

use serde::de::DeserializeOwned;
use stategraph::checkpoint::InMemorySaver;
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
    seen: Vec<M>,
    turns: u32,
}

/// A node written once for every message type that can be made from a turn number.
fn speak<M>(state: &Chat<M>) -> ChatUpdate<M>
where
    M: From<u32> + Clone + Send + Sync + 'static,
{
    let turn = state.turns + 1;
    Chat::update()
        .log(vec![M::from(turn)])
        .seen_item(M::from(turn * 10))
        .turns(turn)
}

fn graph<M>() -> CompiledGraph<Chat<M>>
where
    M: From<u32> + Clone + Default + Send + Sync + Serialize + DeserializeOwned + 'static,
{
    StateGraph::<Chat<M>>::new()
        .add_node(node_fn("speak", speak::<M>))
        .add_edge(START, "speak")
        .add_edge("speak", END)
        .compile_with(InMemorySaver::new())
        .unwrap()
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Text(String);

impl From<u32> for Text {
    fn from(n: u32) -> Self {
        Text(format!("#{n}"))
    }
}

#[tokio::test]
async fn two_instantiations_run_as_two_graphs() {
    let config = RunConfig::thread("numbers");
    let numbers = graph::<u64>();
    numbers.invoke(Chat::update(), &config).await.unwrap();
    let out = numbers.invoke(Chat::update(), &config).await.unwrap();
    assert_eq!(out.log, [1, 2]);
    assert_eq!(out.turns, 2);

    let config = RunConfig::thread("texts");
    let texts = graph::<Text>();
    let out = texts
        .invoke(Chat::update().log(vec![Text("hello".into())]), &config)
        .await
        .unwrap();
    assert_eq!(out.log, [Text("hello".into()), Text("#1".into())]);
    assert_eq!(out.seen, [Text("#10".into())]);
}

#[tokio::test]
async fn a_generic_state_round_trips_through_its_checkpoint() {
    let config = RunConfig::thread("t");
    let texts = graph::<Text>();
    texts.invoke(Chat::update(), &config).await.unwrap();
    let saved = texts.get_state(&config).await.unwrap();
    assert_eq!(saved.values.log, [Text("#1".into())]);
    assert_eq!(saved.values.turns, 1);
}

// A node written once against field markers (issue 11, part 2), run in graphs over
// two unrelated states.

stategraph::field! {
    /// What was said.
    pub Transcript: Vec<String>;
    /// How many turns were taken.
    pub Turns: u32;
}

fn take_turn<S: Has<Transcript> + Has<Turns>>(state: &S) -> UpdateOf<S> {
    let turn = state.get::<Turns>() + 1;
    UpdateOf::new()
        .set::<Transcript>(vec![format!("turn {turn}")])
        .set::<Turns>(turn)
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Support {
    #[reducer(concat)]
    #[field(Transcript)]
    notes: Vec<String>,
    #[field(Turns)]
    replies: u32,
    customer: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Game<P: Clone + Send + Sync + 'static> {
    #[channel(topic(accumulate))]
    #[field(Transcript)]
    moves: Vec<String>,
    #[field(Turns)]
    round: u32,
    player: P,
}

// `node_fn` takes the state as the node's input, which is serialisable.
fn twice<S>() -> CompiledGraph<S>
where
    S: Has<Transcript> + Has<Turns> + Serialize + DeserializeOwned,
{
    StateGraph::<S>::new()
        .add_node(node_fn("first", take_turn::<S>))
        .add_node(node_fn("second", take_turn::<S>))
        .add_edge(START, "first")
        .add_edge("first", "second")
        .add_edge("second", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn one_field_generic_node_runs_over_two_states() {
    let out = twice::<Support>()
        .invoke(Support::update().customer("ada".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.notes, ["turn 1", "turn 2"]);
    assert_eq!((out.replies, out.customer.as_str()), (2, "ada"));

    let out = twice::<Game<u8>>()
        .invoke(Game::update().player(7), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.moves, ["turn 1", "turn 2"]);
    assert_eq!((out.round, out.player), (2, 7));
}
