//! The state the fuzz targets decode into: one field of every channel kind.

use stategraph::prelude::*;

fn concat(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// A state with a LastValue, a reducer, plain and accumulating topics, an
/// optional value and an ephemeral one.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Doc {
    pub title: String,
    #[reducer(concat)]
    pub lines: Vec<String>,
    #[channel(topic)]
    pub events: Vec<u32>,
    #[channel(topic(accumulate))]
    pub log: Vec<String>,
    pub count: Option<i64>,
    #[channel(ephemeral)]
    pub scratch: Option<f64>,
}

/// The field an input's first byte picks (one index past the end, too).
pub fn field(byte: u8) -> usize {
    usize::from(byte) % (Doc::FIELDS.len() + 1)
}
