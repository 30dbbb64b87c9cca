//! The engine keeps one copy of the state and mutates it in place: a superstep
//! costs what it changes, not the size of the state (DESIGN.md, "Reading state
//! without copying it"). A field type that counts its clones makes this visible.

use futures::StreamExt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use stategraph::prelude::*;
use std::cell::Cell;

thread_local! {
    // Per test thread: tests run in parallel, each on its own current-thread runtime.
    static CLONES: Cell<usize> = const { Cell::new(0) };
}

fn clones() -> usize {
    CLONES.with(Cell::get)
}

/// A large value that counts how often it is cloned.
#[derive(Debug, Default)]
struct Big(Vec<u64>);

impl Clone for Big {
    fn clone(&self) -> Self {
        CLONES.with(|c| c.set(c.get() + 1));
        Big(self.0.clone())
    }
}

impl Serialize for Big {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Big {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::deserialize(d).map(Big)
    }
}

fn grow(mut a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    a.extend(b);
    a
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Loop {
    big: Big,
    #[reducer(grow)]
    history: Vec<u64>,
    turns: u32,
}

#[derive(Goto, Clone, Copy, Debug)]
enum Again {
    Step,
    #[goto(end)]
    Stop,
}

#[node]
fn step(s: &Loop) -> Command<Again> {
    let next = if s.turns + 1 == 200 {
        Again::Stop
    } else {
        Again::Step
    };
    Command::goto(next).update(
        Loop::update()
            .history(vec![u64::from(s.turns)])
            .turns(s.turns + 1),
    )
}

fn app() -> CompiledGraph<Loop> {
    StateGraph::<Loop>::new()
        .add_node(step)
        .add_edge(START, step)
        .add_conditional_edges(step, |s: &Loop| {
            // A router reads the state after its node's writes.
            if s.history.len() == s.turns as usize {
                vec![]
            } else {
                vec![Again::Stop]
            }
        })
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_long_loop_never_copies_the_state() {
    let input = Loop::update().big(Big(vec![7; 100_000]));
    let before = clones();
    let out = app().invoke(input, &RunConfig::new()).await.unwrap();
    let copies = clones() - before;
    assert_eq!(out.turns, 200);
    assert_eq!(out.history.len(), 200);
    // The input is copied once into the `__start__` task; no step copies the state.
    assert!(
        copies <= 1,
        "the state was copied {copies} times in 201 supersteps"
    );
}

#[tokio::test]
async fn a_values_stream_shares_the_state_instead_of_copying_it() {
    let input = Loop::update().big(Big(vec![7; 100_000]));
    let before = clones();
    let mut stream = app().stream(input, &RunConfig::new(), StreamMode::Values);
    let mut events = 0;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Values(state) = event.unwrap() {
            assert_eq!(state.big.0.len(), 100_000);
            events += 1;
        }
    }
    let copies = clones() - before;
    assert_eq!(events, 201);
    assert!(copies <= 1, "the state was copied {copies} times");
}
