// A reducer takes the current value and one write: a three-argument fn is not one.
use stategraph::prelude::*;
use std::collections::BTreeMap;

fn cheapest3(
    a: BTreeMap<String, u32>,
    _b: BTreeMap<String, u32>,
    _c: BTreeMap<String, u32>,
) -> BTreeMap<String, u32> {
    a
}

#[derive(State, Clone, Default, Serialize, Deserialize)]
struct Trip {
    #[reducer(cheapest3)]
    quotes: BTreeMap<String, u32>,
}

fn main() {}
