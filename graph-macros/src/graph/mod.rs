//! `graph!`: a whole graph declared in one macro, its shape checked by rustc.
//!
//! Parse ([`ast`]) -> validate what the tokens decide ([`valid`]) -> expand to
//! the `StateGraph` builder calls and a const item that checks what only types
//! can tell ([`expand`]).

mod ast;
mod expand;
mod valid;

use crate::crate_path::{CratePath, Needs};
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let graph = match syn::parse2::<ast::Graph>(input) {
        Ok(graph) => graph,
        // The parser recovers statement by statement; this is not reached.
        Err(err) => return fallback(err, None),
    };
    let cx = Ctxt::new();
    for err in &graph.errors {
        cx.syn_error(err.clone());
    }
    valid::check(&cx, &graph);
    let sg = CratePath::new(graph.krate.clone(), Needs::Core);
    match (cx.check(), &graph.state) {
        (Ok(()), Some(state)) => expand::graph(&graph, state, &sg),
        (Ok(()), None) => quote!(),
        (Err(err), state) => fallback(err, state.as_ref().map(|s| (s, &graph, &sg))),
    }
}

/// The errors, and an empty graph of the declared state and context so that code
/// using the result is not reported too.
fn fallback(err: syn::Error, graph: Option<(&syn::Type, &ast::Graph, &CratePath)>) -> TokenStream {
    let err = err.into_compile_error();
    match graph {
        Some((state, graph, sg)) => {
            let ctor = match &graph.context {
                Some(context) => quote!(#sg::StateGraph::<#state, #context>::with_context_schema()),
                None => quote!(#sg::StateGraph::<#state>::new()),
            };
            quote!({ #err #ctor })
        }
        None => quote!({ #err loop {} }),
    }
}
