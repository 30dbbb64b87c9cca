//! The `#[goto(..)]` attribute of `#[derive(Goto)]`.

use crate::crate_path;
use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, END, GOTO, NAME};
use syn::{Attribute, LitStr, Meta};

/// What a variant's `#[goto]` says.
pub(crate) enum GotoAttr {
    /// `#[goto(end)]`.
    End,
    /// `#[goto(name = "x")]`.
    Name(LitStr),
}

const USAGE: &str = "write #[goto(end)] to route to END, or #[goto(name = \"node\")] to route to \
                     the node with that name";

/// The `#[goto]` of a variant; the first one wins, a second one is an error.
pub(crate) fn variant_attr(cx: &Ctxt, attrs: &[Attribute]) -> Option<GotoAttr> {
    let mut seen: Option<&Attribute> = None;
    let mut out = None;
    for attr in attrs.iter().filter(|a| a.path() == GOTO) {
        if seen.is_some() {
            cx.error_spanned_by(
                attr,
                "duplicate #[goto] attribute; a variant routes to one place, remove one of them",
            );
            continue;
        }
        seen = Some(attr);
        out = parse(cx, attr);
    }
    out
}

/// The enum's `#[goto(crate = path)]`, if any; rejects the options of a variant
/// (`end`, `name`) on the enum itself.
pub(crate) fn container_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Option<syn::Path> {
    let mut krate = None;
    for attr in attrs.iter().filter(|a| a.path() == GOTO) {
        let Meta::List(list) = &attr.meta else {
            cx.error_spanned_by(attr, ON_THE_ENUM);
            continue;
        };
        if list.tokens.is_empty() {
            cx.error_spanned_by(attr, ON_THE_ENUM);
            continue;
        }
        let mut errors = Vec::new();
        let mut variant_option = false;
        let result = attr.parse_nested_meta(|meta| {
            if meta.path == CRATE {
                return crate_path::parse_option(&meta, &mut krate, "goto", &mut errors);
            }
            if meta.path == END || meta.path == NAME {
                // A variant's option: reported once for the attribute, below.
                variant_option = true;
                if meta.input.peek(syn::Token![=]) {
                    meta.value()?.parse::<syn::Expr>()?;
                } else if meta.input.peek(syn::token::Paren) {
                    meta.input.parse::<proc_macro2::Group>()?;
                }
                return Ok(());
            }
            let key = match meta.path.get_ident() {
                Some(ident) => format!(" `{ident}`"),
                None => String::new(),
            };
            Err(meta.error(format!(
                "unknown #[goto] option{key} on the enum; the enum takes only `crate`, as in \
                 #[goto(crate = sg)], and a variant takes `end` or `name = \"..\"`"
            )))
        });
        if variant_option {
            cx.error_spanned_by(attr, ON_THE_ENUM);
        }
        for err in errors.into_iter().chain(result.err()) {
            cx.syn_error(err);
        }
    }
    krate
}

const ON_THE_ENUM: &str = "not expected here; the #[goto] attribute belongs on a variant";

fn parse(cx: &Ctxt, attr: &Attribute) -> Option<GotoAttr> {
    match &attr.meta {
        Meta::List(list) if !list.tokens.is_empty() => {}
        _ => {
            cx.error_spanned_by(attr, format!("expected an argument; {USAGE}"));
            return None;
        }
    }
    let mut out: Option<GotoAttr> = None;
    let result = attr.parse_nested_meta(|meta| {
        let parsed = if meta.path == END {
            if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
                return Err(meta.error("#[goto(end)] takes no value; write #[goto(end)]"));
            }
            GotoAttr::End
        } else if meta.path == NAME {
            let value: syn::Expr = meta.value()?.parse()?;
            match value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(name),
                    ..
                }) => GotoAttr::Name(name),
                other => {
                    let hint = match &other {
                        syn::Expr::Path(path) => quote::quote!(#path).to_string(),
                        _ => "node".to_owned(),
                    };
                    return Err(syn::Error::new_spanned(
                        other,
                        format!("expected the node name as a string: #[goto(name = \"{hint}\")]"),
                    ));
                }
            }
        } else if meta.path == CRATE {
            return Err(meta.error(
                "`crate` is an option of the enum, not of a variant; write #[goto(crate = sg)] \
                 above the enum",
            ));
        } else {
            let key = match meta.path.get_ident() {
                Some(ident) => format!(" `{ident}`"),
                None => String::new(),
            };
            return Err(meta.error(format!("unknown #[goto] option{key}; {USAGE}")));
        };
        if out.is_some() {
            return Err(
                meta.error("#[goto] takes one of `end` or `name = \"..\"`; remove one of them")
            );
        }
        out = Some(parsed);
        Ok(())
    });
    match result {
        Ok(()) => out,
        Err(err) => {
            cx.syn_error(err);
            None
        }
    }
}
