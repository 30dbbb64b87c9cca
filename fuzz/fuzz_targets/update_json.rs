//! The JSON form of a state update, as it arrives from a checkpoint's pending
//! writes or from `update_state` with JSON: one field's write per input (the first
//! byte picks the field), for a state with every channel kind. A value or an
//! error, never a panic; and a write that decodes is applied to a state without a
//! panic either.

#![no_main]

use libfuzzer_sys::fuzz_target;
use stategraph::state::FieldSet;
use stategraph::{State, StateUpdate};
use stategraph_fuzz::{field, Doc, DocUpdate};

fuzz_target!(|data: &[u8]| {
    let Some((&byte, json)) = data.split_first() else {
        return;
    };
    let mut de = serde_json::Deserializer::from_slice(json);
    let Ok(update) = DocUpdate::from_field_write(field(byte), &mut de) else {
        return;
    };
    // Applying what decoded goes through the channel's own checks.
    let mut state = Doc::default();
    let mut channels = Doc::new_channels();
    let mut changed = FieldSet::with_capacity(Doc::FIELDS.len());
    let _ = state.apply_updates(&mut channels, &mut [update], &mut changed);
});
