//! Signature checks that do not depend on the parameters.

use super::ast::NodeFn;
use crate::ctxt::Ctxt;
use syn::GenericParam;

pub(crate) fn check(cx: &Ctxt, node: &NodeFn) {
    let sig = &node.item.sig;
    for param in &sig.generics.params {
        if let GenericParam::Lifetime(lifetime) = param {
            cx.error_spanned_by(
                lifetime,
                "#[node] fns cannot have lifetime parameters: the engine keeps a node's input \
                 for the whole task, so it is `'static`; take it as `&S` with the lifetime \
                 elided",
            );
        }
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
