//! The arguments of `#[node(..)]`.

use crate::ctxt::Ctxt;
use crate::symbol::STATE;
use proc_macro2::TokenStream;
use syn::parse::Parser;

pub(crate) struct NodeArgs {
    /// `state = Path`: the graph state, for nodes whose input is not the state.
    pub(crate) state: Option<syn::Path>,
}

pub(crate) fn parse(cx: &Ctxt, args: TokenStream) -> NodeArgs {
    let mut state: Option<syn::Path> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path == STATE {
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
                "unknown #[node] option{key}; the only option is `state`, as in \
                 #[node(state = MyState)]"
            )))
        }
    });
    if let Err(err) = parser.parse2(args) {
        cx.syn_error(err);
    }
    NodeArgs { state }
}
