//! A schema of a generic state, with a renamed crate path, and a schema used as
//! both input and output.

use stategraph as sg;
use sg::prelude::*;

fn concat<T>(mut a: Vec<T>, b: Vec<T>) -> Vec<T> {
    a.extend(b);
    a
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Chat<M: Clone + Send + Sync + 'static> {
    #[reducer(concat)]
    messages: Vec<M>,
    #[channel(topic)]
    events: Vec<String>,
    turns: u32,
}

#[derive(Schema)]
#[schema(state = Chat<M>, crate = sg)]
struct Messages<M: Clone + Default + Send + Sync + Serialize + serde::de::DeserializeOwned + 'static> {
    messages: Vec<M>,
    events: Vec<String>,
}

pub fn main() {
    let chat = Chat::<u8> {
        messages: vec![1],
        events: vec!["e".into()],
        turns: 2,
    };
    let out: Messages<u8> = OutputSchema::from_state(&chat);
    let update = InputSchema::<Chat<u8>>::into_update(out);
    assert!(update.turns.is_none());
    let _input: sg::GraphInput<Chat<u8>> = Messages::<u8> {
        messages: vec![],
        events: vec![],
    }
    .into();
}
