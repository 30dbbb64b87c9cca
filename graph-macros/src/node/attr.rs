//! The arguments of `#[node(..)]`.

use crate::crate_path;
use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, STATE};
use proc_macro2::TokenStream;
use syn::parse::Parser;

pub(crate) struct NodeArgs {
    /// `state = Path`: the graph state, for nodes whose input is not the state.
    pub(crate) state: Option<syn::Path>,
    /// `crate = path`: the stategraph facade, for a renamed dependency.
    pub(crate) krate: Option<syn::Path>,
}

pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> NodeArgs {
    let mut state: Option<syn::Path> = None;
    let mut krate: Option<syn::Path> = None;
    let mut errors = Vec::new();
    let parser = syn::meta::parser(|meta| {
        if meta.path == CRATE {
            crate_path::parse_option(&meta, &mut krate, "node", &mut errors)
        } else if meta.path == STATE {
            let path: syn::Path = meta.value()?.parse()?;
            if state.is_some() {
                return Err(meta.error("duplicate `state` option of #[node]; remove one"));
            }
            state = Some(path);
            Ok(())
        } else {
            let key = match meta.path.get_ident() {
                Some(ident) => format!(" `{ident}`"),
                None => String::new(),
            };
            Err(meta.error(format!(
                "unknown #[node] option{key}; the options are `state`, as in \
                 #[node(state = MyState)], and `crate`, as in #[node(crate = sg)]"
            )))
        }
    });
    let result = parser.parse2(args);
    for err in errors.into_iter().chain(result.err()) {
        cx.syn_error(err);
    }
    NodeArgs { state, krate }
}
