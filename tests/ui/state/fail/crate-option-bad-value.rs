//! `#[state(crate = ..)]` takes the path of the stategraph crate (or a string holding
//! one); every bad value is reported, each at its own tokens, and the derive's
//! stand-in keeps the uses of the state free of follow-up errors.

use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate = 1)]
struct NotAPath {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate = "not a path")]
struct StringNotAPath {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate = stategraph::<u8>)]
struct GenericArguments {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate)]
struct NoValue {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(krate = stategraph)]
struct UnknownOption {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state]
struct NoOption {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct OnAField {
    #[state(crate = stategraph)]
    steps: u32,
}

fn main() {
    let _ = NotAPath::update().steps(1);
    let _ = OnAField::update().steps(1);
}
