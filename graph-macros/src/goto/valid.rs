//! Node names a goto enum may not produce.

use super::ast::{Destination, Input};
use super::attr::GotoAttr;
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, input: &Input) {
    for variant in &input.variants {
        let Destination::Node(name) = &variant.destination else {
            continue;
        };
        let reserved = name.chars().find(|c| matches!(c, '|' | ':'));
        let problem = if name.is_empty() {
            "a node name cannot be empty".to_owned()
        } else if name == "__start__" {
            "cannot route to `__start__` (START): it is the graph's entry, not a node".to_owned()
        } else if name == "__end__" {
            "use #[goto(end)] to route to END instead of its name `__end__`".to_owned()
        } else if let Some(c) = reserved {
            format!("a node name cannot contain `{c}` (it is reserved for namespaces of subgraphs)")
        } else {
            continue;
        };
        match &variant.attr {
            Some(GotoAttr::Name(lit)) => cx.error_spanned_by(lit, problem),
            _ => cx.error_spanned_by(variant.ident, problem),
        }
    }
}
