//! Signature checks that do not depend on the parameters.

use super::ast::{NodeFn, GENERIC_INPUT};
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, node: &NodeFn) {
    let sig = &node.item.sig;
    let generics = &sig.generics;
    if !generics.params.is_empty() {
        cx.error_spanned_by(&generics.params, GENERIC_INPUT);
    } else if let Some(where_clause) = &generics.where_clause {
        cx.error_spanned_by(where_clause, GENERIC_INPUT);
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(
            unsafety,
            "#[node] fns cannot be `unsafe`: the graph calls them with no way to uphold their \
             safety contract; make the fn safe and use an `unsafe` block inside",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "#[node] fns cannot be variadic");
    }
}
