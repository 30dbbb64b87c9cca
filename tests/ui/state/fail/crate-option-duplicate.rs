//! One `crate = ..` per derive: a second one is reported, in the same attribute or
//! in another `#[state]`, and so is a bad value next to it.

use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate = stategraph, crate = stategraph)]
struct SameAttribute {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate = stategraph)]
#[state(crate = "stategraph")]
struct TwoAttributes {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(crate = 1, crate = stategraph, crate = stategraph)]
struct BadAndDuplicate {
    steps: u32,
}

fn main() {}
