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
        // `valid::check` reports a missing state.
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
            let ctor = expand::constructor(graph, state, sg);
            quote!({ #err #ctor })
        }
        None => quote!({ #err loop {} }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
        state Ticket;
        context Settings;
        crate sg;
        node triage, answer, summarise::<Ticket>;
        #[defer]
        #[retry(RetryPolicy::new())]
        node collect;
        node research = Subgraph::new("research", child.clone());
        #[dynamic]
        node human;

        START -> triage -> answer;
        (answer, research) -> collect -> END;
        answer -> match after_answer;
        triage -> match route { "yes" => research, "no" => END };
        research -> match by_name { human, END };
        collect -> send [summarise];
        summarise -> END;
    "#;

    fn errors(source: &str) -> Vec<String> {
        let tokens: TokenStream = source.parse().expect("test input tokenizes");
        let graph = syn::parse2::<ast::Graph>(tokens).expect("the parser recovers");
        let cx = Ctxt::new();
        for err in &graph.errors {
            cx.syn_error(err.clone());
        }
        valid::check(&cx, &graph);
        match cx.check() {
            Ok(()) => Vec::new(),
            Err(err) => err.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn parses_every_statement() {
        assert_eq!(errors(FULL), Vec::<String>::new());
        let graph: ast::Graph = syn::parse_str(FULL).unwrap();
        assert_eq!(graph.nodes.len(), 6);
        assert_eq!(graph.edges.len(), 7);
        assert!(graph.nodes[3].options.defer.is_some());
        assert!(graph.nodes[5].options.dynamic.is_some());
        // The expansion is the builder calls, in the declaration's order.
        let state = graph.state.clone().unwrap();
        let out = expand::graph(&graph, &state, &CratePath::stategraph()).to_string();
        let first = out.find(". add_node (triage)").unwrap();
        let edge = out
            .find(". add_edge (:: stategraph :: START , \"triage\")")
            .unwrap();
        assert!(first < edge, "{out}");
        assert!(out.contains(". add_node_with (collect , :: stategraph :: NodeOptions :: new () . defer (true) . retry (RetryPolicy :: new ()))"), "{out}");
        assert!(
            out.contains(". add_edge ([\"answer\" , \"research\"] , \"collect\")"),
            "{out}"
        );
        assert!(
            out.contains(". destinations (\"collect\" , [\"summarise\"])"),
            "{out}"
        );
    }

    #[test]
    fn accumulates_errors_statement_by_statement() {
        let errs = errors(
            "stat Ticket; node a; #[deferred] node b; START -> a ->; a b; a -> match; \
             a -> nope;",
        );
        assert_eq!(errs.len(), 7, "{errs:#?}");
        assert!(errs
            .iter()
            .any(|e| e.contains("needs the graph's state type")));
        assert!(errs.iter().any(|e| e.contains("trailing `->`")));
        assert!(errs.iter().any(|e| e.contains("declares no node `nope`")));
    }

    /// Every prefix of a valid declaration is reported, never a panic.
    #[test]
    fn never_panics_on_truncated_input() {
        let tokens: Vec<proc_macro2::TokenTree> =
            FULL.parse::<TokenStream>().unwrap().into_iter().collect();
        for end in 0..tokens.len() {
            let prefix: TokenStream = tokens[..end].iter().cloned().collect();
            let _ = errors(&prefix.to_string());
        }
    }
}
