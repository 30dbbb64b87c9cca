//! Checks that need the whole model: attributes on managed fields, and builder
//! method names that would collide.

use super::ast::{vec_elem, Channel, Field, FieldKind, Input, Managed};
use super::attr::ChannelKind;
use crate::ctxt::Ctxt;
use crate::symbol::REDUCER;
use std::collections::BTreeMap;

pub(crate) fn check(cx: &Ctxt, input: &Input) {
    for field in &input.fields {
        if let FieldKind::Managed(managed) = field.kind {
            check_managed(cx, field, managed);
        }
    }
    check_builder_names(cx, input);
    check_markers(cx, input);
    for (field, _, kind) in input.channels() {
        if let Channel::Kind(ChannelKind::Topic { .. }) = kind {
            if vec_elem(&field.ty).is_none() {
                cx.error_spanned_by(
                    &field.ty,
                    "#[channel(topic)] needs a field of type `Vec<T>`: a topic collects the \
                     items `T` published to it",
                );
            }
        }
    }
}

fn check_managed(cx: &Ctxt, field: &Field, managed: Managed) {
    let ty = match managed {
        Managed::RemainingSteps => "RemainingSteps",
        Managed::IsLastStep => "IsLastStep",
    };
    for (attr, _) in &field.attrs.markers {
        cx.error_spanned_by(
            attr,
            format!(
                "#[field] is not allowed on a managed field; `{ty}` is filled in by the engine \
                 and nodes cannot write it, mark a channel field instead"
            ),
        );
    }
    if let Some(attr) = field.attrs.private {
        cx.error_spanned_by(
            attr,
            format!(
                "#[state(private)] is not allowed on a managed field; `{ty}` is not a channel \
                 and is never part of the graph's input or output, remove this attribute"
            ),
        );
    }
    for attr in &field.attrs.all {
        let name = if attr.path() == REDUCER {
            "reducer"
        } else {
            "channel"
        };
        cx.error_spanned_by(
            attr,
            format!(
                "#[{name}] is not allowed on a managed field; `{ty}` is not a channel (the \
                 engine fills it in before each superstep), remove this attribute"
            ),
        );
    }
}

/// Each channel field gets a setter named after it, and reducer and topic fields get
/// a second one (`x_overwrite`, `x_item`); no two may share a name.
fn check_builder_names(cx: &Ctxt, input: &Input) {
    let mut taken: BTreeMap<String, &Field> = BTreeMap::new();
    for (field, _, _) in input.channels() {
        taken.insert(field.name.clone(), field);
    }
    for (field, _, kind) in input.channels() {
        let (suffix, attr) = match kind {
            Channel::Reducer(_) => ("overwrite", "#[reducer]"),
            Channel::Kind(ChannelKind::Topic { .. }) => ("item", "#[channel(topic)]"),
            Channel::Kind(_) => continue,
        };
        let method = format!("{}_{suffix}", field.name);
        if let Some(other) = taken.get(&method) {
            cx.error_spanned_by(
                other.ident,
                format!(
                    "the field `{method}` clashes with the builder method `{method}` that \
                     {attr} generates for the field `{}`; rename one of the two fields",
                    field.name
                ),
            );
        }
        taken.insert(method, field);
    }
}

/// A state provides each field marker once: two fields with `#[field(Messages)]`
/// would leave `state.get::<Messages>()` without one answer.
fn check_markers(cx: &Ctxt, input: &Input) {
    let mut seen: BTreeMap<String, &Field> = BTreeMap::new();
    // Markers on managed fields are reported by `check_managed`.
    for (field, _, _) in input.channels() {
        for (attr, marker) in &field.attrs.markers {
            let key = quote::quote!(#marker).to_string();
            match seen.get(&key) {
                Some(first) if first.ident == field.ident => cx.error_spanned_by(
                    attr,
                    format!(
                        "duplicate #[field({})] on this field; remove one",
                        key.replace(' ', "")
                    ),
                ),
                Some(first) => cx.error_spanned_by(
                    attr,
                    format!(
                        "the field `{}` already provides `{}`; a state provides each field \
                         marker once, remove one of the two #[field] attributes",
                        first.name,
                        key.replace(' ', "")
                    ),
                ),
                None => {
                    seen.insert(key, field);
                }
            }
        }
    }
}
