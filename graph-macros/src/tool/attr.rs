//! The arguments of `#[tool(..)]`.

use crate::crate_path;
use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, DESCRIPTION, NAME};
use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::LitStr;

#[derive(Default)]
pub(crate) struct ToolArgs {
    /// `name = "..."`: the name the model calls the tool by (default: the fn's).
    pub(crate) name: Option<LitStr>,
    /// `description = "..."`: what the tool does (default: the doc comment).
    pub(crate) description: Option<LitStr>,
    /// `crate = path`: the stategraph facade, for a renamed dependency.
    pub(crate) krate: Option<syn::Path>,
}

pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> ToolArgs {
    let mut out = ToolArgs::default();
    let mut errors = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let slot = if meta.path == CRATE {
            return crate_path::parse_option(&meta, &mut out.krate, "tool", &mut errors);
        } else if meta.path == NAME {
            &mut out.name
        } else if meta.path == DESCRIPTION {
            &mut out.description
        } else {
            let key = match meta.path.get_ident() {
                Some(ident) => format!(" `{ident}`"),
                None => String::new(),
            };
            return Err(meta.error(format!(
                "unknown #[tool] option{key}; the options are `name` and `description`, as in \
                 #[tool(name = \"web_search\", description = \"Searches the web\")], and \
                 `crate`, as in #[tool(crate = sg)]"
            )));
        };
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let value: LitStr = meta.value()?.parse().map_err(|e| {
            syn::Error::new(e.span(), format!("expected a string: {key} = \"...\""))
        })?;
        if slot.is_some() {
            return Err(meta.error(format!("duplicate `{key}` option of #[tool]; remove one")));
        }
        *slot = Some(value);
        Ok(())
    });
    let result = parser.parse2(args);
    for err in errors.into_iter().chain(result.err()) {
        cx.syn_error(err);
    }
    out
}
