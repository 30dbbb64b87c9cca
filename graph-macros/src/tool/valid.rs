//! Checks of a `#[tool]` fn that rustc would report less clearly, or not at all.

use super::ast::ToolFn;
use crate::ctxt::Ctxt;
use syn::Type;

pub(crate) fn check(cx: &Ctxt, tool: &ToolFn) {
    let sig = &tool.item.sig;
    if !sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &sig.generics.params,
            "#[tool] fns cannot be generic: the model sends JSON for one concrete argument \
             type; use concrete types",
        );
    } else if let Some(where_clause) = &sig.generics.where_clause {
        cx.error_spanned_by(where_clause, "#[tool] fns cannot have a where clause");
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(
            unsafety,
            "#[tool] fns cannot be `unsafe`: the model calls them; make the fn safe and use an \
             `unsafe` block inside",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "#[tool] fns cannot be variadic");
    }
    if tool.description.is_none() {
        cx.error_spanned_by(
            &sig.ident,
            "a tool needs a description for the model: add a doc comment (`/// Searches the \
             web`) or #[tool(description = \"...\")]",
        );
    }
    for param in &tool.params {
        check_param_type(cx, param.ty);
    }
}

fn check_param_type(cx: &Ctxt, ty: &Type) {
    match ty {
        Type::Reference(r) => {
            let owned = match &*r.elem {
                Type::Path(p) if p.path.is_ident("str") => "String".to_owned(),
                Type::Slice(s) => {
                    let elem = &s.elem;
                    format!("Vec<{}>", quote::quote!(#elem))
                }
                other => quote::quote!(#other).to_string(),
            };
            cx.error_spanned_by(
                ty,
                format!(
                    "#[tool] arguments are deserialised from the model's JSON, so they must be \
                     owned: take `{owned}` instead of a reference"
                ),
            );
        }
        Type::ImplTrait(_) => cx.error_spanned_by(
            ty,
            "#[tool] arguments need a concrete type (the JSON schema the model sees is derived \
             from it), not `impl Trait`",
        ),
        Type::Group(g) => check_param_type(cx, &g.elem),
        Type::Paren(p) => check_param_type(cx, &p.elem),
        _ => {}
    }
}
