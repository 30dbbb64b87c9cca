//! `#[state(private)]` belongs on a channel field and takes no value; every
//! misuse is reported at its own tokens.

use stategraph::prelude::*;

#[derive(State, Clone, Default, Serialize, Deserialize)]
#[state(private)]
struct OnTheStruct {
    steps: u32,
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct BadOptions {
    #[state(private = true)]
    with_value: u32,
    #[state(privat)]
    misspelt: u32,
    #[state]
    no_option: u32,
    #[state(private)]
    #[state(private)]
    twice: u32,
    #[state(private, private)]
    twice_in_one: u32,
    #[state(private)]
    remaining: RemainingSteps,
}

fn main() {}
