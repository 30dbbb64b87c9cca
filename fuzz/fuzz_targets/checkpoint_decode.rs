//! What a run reads from a database file: a stored value's bytes under each type
//! tag LangGraph writes (`json`, `msgpack`, `null`, ones we refuse), as Python's
//! `JsonPlusSerializer` or a corrupt file left them, decoded by graph-sqlite and
//! restored into a state's field as a checkpoint restore does. A value or an error
//! naming the problem, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stategraph::State;
use stategraph_fuzz::{field, Doc};

const TYPES: [&str; 5] = ["json", "msgpack", "null", "bytes", "pickle"];

fuzz_target!(|data: &[u8]| {
    let [tag, byte, bytes @ ..] = data else {
        return;
    };
    let type_ = TYPES.get(usize::from(*tag) % (TYPES.len() + 1)).copied();
    let Ok(blob) = graph_sqlite::fuzzing::decode_stored(type_, bytes) else {
        return;
    };
    let mut state = Doc::default();
    let mut channels = Doc::new_channels();
    let mut de = serde_json::Deserializer::from_str(blob.as_str());
    let _ = state.restore_field(&mut channels, field(*byte), Some(&mut de));
});
