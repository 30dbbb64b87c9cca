//! `#[node]` on generic fns: a node written once (by a library) for every state with
//! the fields it needs, added to a graph as `add_node(take_turn::<Chat>)`.

use stategraph::prelude::*;

stategraph::field! {
    pub Transcript: Vec<String>;
    pub Turns: u32;
}

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// Appends a line to the transcript and counts the turn.
#[node]
async fn take_turn<S>(state: &S, ctx: &Context) -> UpdateOf<S>
where
    S: Has<Transcript> + Has<Turns>,
{
    let turn = state.get::<Turns>() + 1;
    UpdateOf::new()
        .set::<Transcript>(vec![format!("turn {turn} at step {}", ctx.step())])
        .set::<Turns>(turn)
}

#[derive(Goto, Clone, Copy, Debug)]
enum Next {
    TakeTurn,
    #[goto(end)]
    Stop,
}

/// Loops back to `take_turn` until `LIMIT` turns were taken.
#[node]
fn check_turns<S: Has<Turns>, const LIMIT: u32>(state: &S) -> Command<Next> {
    if *state.get::<Turns>() < LIMIT {
        Command::goto(Next::TakeTurn)
    } else {
        Command::goto(Next::Stop)
    }
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(concat)]
    #[field(Transcript)]
    log: Vec<String>,
    #[field(Turns)]
    turns: u32,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Meeting {
    #[reducer(concat)]
    #[field(Transcript)]
    minutes: Vec<String>,
    #[field(Turns)]
    speakers: u32,
    room: String,
}

#[tokio::test]
async fn one_generic_node_runs_in_two_states() {
    let chat = StateGraph::<Chat>::new()
        .add_node(take_turn::<Chat>)
        .add_node(check_turns::<Chat, 2>)
        .add_edge(START, take_turn::<Chat>)
        .add_edge(take_turn::<Chat>, check_turns::<Chat, 2>)
        .compile()
        .unwrap();
    let out = chat
        .invoke(Chat::update(), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.log, ["turn 1 at step 1", "turn 2 at step 3"]);
    assert_eq!(out.turns, 2);

    // The state is inferred from the graph the node is added to.
    let meeting = StateGraph::<Meeting>::new()
        .add_node(take_turn)
        .add_edge(START, "take_turn")
        .compile()
        .unwrap();
    let out = meeting
        .invoke(Meeting::update().room("A".into()), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.minutes, ["turn 1 at step 1"]);
    assert_eq!((out.speakers, out.room.as_str()), (1, "A"));
}

#[test]
fn a_generic_node_body_is_callable_and_its_gotos_are_declared() {
    let chat = Chat {
        log: Vec::new(),
        turns: 5,
    };
    let command = check_turns::<Chat, 5>::call(&chat);
    assert!(format!("{command:?}").contains("Stop"), "{command:?}");
    let node: take_turn<Meeting> = Default::default();
    assert_eq!(format!("{node:?}"), "take_turn");
}
