//! The model of a `#[tool]` fn: its arguments (with their docs), its description,
//! and its return type.

use super::attr::ToolArgs;
use crate::ctxt::Ctxt;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, Pat, ReturnType, Type};

pub(crate) struct ToolFn<'a> {
    pub(crate) item: &'a ItemFn,
    /// Doc comments of the fn, kept on the generated unit struct.
    pub(crate) docs: Vec<Attribute>,
    /// `#[cfg]`s, repeated on every generated item.
    pub(crate) cfgs: Vec<Attribute>,
    /// Every other attribute, kept on the `call` fn.
    pub(crate) other_attrs: Vec<Attribute>,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) ret: Option<&'a Type>,
}

pub(crate) struct Param<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    pub(crate) docs: Vec<Attribute>,
}

/// Removes the doc attributes of each parameter, returning them in order.
pub(crate) fn take_param_docs(function: &mut ItemFn) -> Vec<Vec<Attribute>> {
    function
        .sig
        .inputs
        .iter_mut()
        .map(|arg| match arg {
            FnArg::Typed(typed) => {
                let (docs, rest) = typed
                    .attrs
                    .drain(..)
                    .partition(|a: &Attribute| a.path().is_ident("doc"));
                typed.attrs = rest;
                docs
            }
            FnArg::Receiver(_) => Vec::new(),
        })
        .collect()
}

/// The text of doc attributes, lines trimmed and joined (rustdoc's summary form).
pub(crate) fn doc_text(docs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = docs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

impl<'a> ToolFn<'a> {
    pub(crate) fn from_syn(
        cx: &Ctxt,
        item: &'a ItemFn,
        args: &ToolArgs,
        param_docs: Vec<Vec<Attribute>>,
    ) -> Self {
        let mut docs = Vec::new();
        let mut cfgs = Vec::new();
        let mut other_attrs = Vec::new();
        for attr in &item.attrs {
            if attr.path().is_ident("doc") {
                docs.push(attr.clone());
            } else if attr.path().is_ident("cfg") {
                cfgs.push(attr.clone());
            } else {
                other_attrs.push(attr.clone());
            }
        }
        let name = args
            .name
            .as_ref()
            .map(syn::LitStr::value)
            .unwrap_or_else(|| syn::ext::IdentExt::unraw(&item.sig.ident).to_string());
        if let Some(lit) = &args.name {
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                cx.error_spanned_by(
                    lit,
                    "a tool name may use only letters, digits, `_` and `-` (what model APIs \
                     accept), and cannot be empty",
                );
            }
        }
        let description = args
            .description
            .as_ref()
            .map(syn::LitStr::value)
            .or_else(|| doc_text(&docs));

        let mut params = Vec::new();
        for (arg, docs) in item.sig.inputs.iter().zip(param_docs) {
            let FnArg::Typed(typed) = arg else { continue };
            let ident = match &*typed.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => &p.ident,
                other => {
                    cx.error_spanned_by(
                        other,
                        "#[tool] parameters must be plain names: each becomes an argument of \
                         the tool, named after it (write `query: String`)",
                    );
                    continue;
                }
            };
            params.push(Param {
                ident,
                ty: &typed.ty,
                docs,
            });
        }
        let ret = match &item.sig.output {
            ReturnType::Default => {
                cx.error_at(
                    item.sig.paren_token.span.join(),
                    "a #[tool] fn must return what the model reads: a `String`, another \
                     serializable value, or a `Result` of one (add `-> String`)",
                );
                None
            }
            ReturnType::Type(_, ty) => Some(&**ty),
        };
        let _ = item.sig.span();
        ToolFn {
            item,
            docs,
            cfgs,
            other_attrs,
            name,
            description,
            params,
            ret,
        }
    }
}
