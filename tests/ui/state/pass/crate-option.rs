//! Every macro takes `crate = path` for a stategraph facade under another name (here
//! an alias in scope), as a path or a string.

use stategraph as sg;
use sg::prelude::*;
use sg::agents::tool;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
#[state(crate = sg)]
struct Chat {
    #[reducer(add)]
    turns: u32,
    #[channel(topic)]
    log: Vec<String>,
}

fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[derive(Goto, Clone, Copy, Debug)]
#[goto(crate = "sg")]
enum Next {
    Speak,
    #[goto(end)]
    Done,
}

#[node(crate = sg)]
fn speak(state: &Chat) -> Command<Next> {
    if state.turns >= 2 {
        return Command::goto(Next::Done);
    }
    Command::goto(Next::Speak).update(Chat::update().turns(1).log_item("hi".into()))
}

#[node(crate = ::stategraph, state = Chat)]
fn count(n: u32) -> ChatUpdate {
    Chat::update().turns(n)
}

/// Echoes.
#[tool(crate = sg)]
fn echo(text: String) -> String {
    text
}

pub fn main() {
    let _ = sg::agents::Toolbox::new(echo);
    let _ = StateGraph::<Chat>::new()
        .add_node(speak)
        .add_node(count)
        .add_edge(START, speak)
        .compile()
        .unwrap();
}
