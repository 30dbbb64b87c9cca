//! The expansion of a valid `graph!`: the `StateGraph` builder calls the
//! declaration stands for, in its order (so the graph, its `compile()` and its
//! drawing are those of the same calls written by hand), after a const item
//! that checks what only types can tell.

use super::ast::{Endpoint, Graph, Head, NodeDecl, NodeValue, PathMapDecl, Tail};
use super::valid::name_of;
use crate::crate_path::CratePath;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Expr, LitStr};

pub(crate) fn graph(graph: &Graph, state: &syn::Type, sg: &CratePath) -> TokenStream {
    let ctor = constructor(graph, state, sg);
    let nodes = graph.nodes.iter().map(|node| add_node(node, sg));
    let edges = graph.edges.iter().flat_map(|edge| edge_calls(edge, sg));
    let check = const_check(graph, state, sg);
    quote! {
        {
            #check
            #ctor
                #(#nodes)*
                #(#edges)*
        }
    }
}

/// The empty graph of the declared state and context.
pub(crate) fn constructor(graph: &Graph, state: &syn::Type, sg: &CratePath) -> TokenStream {
    match &graph.context {
        Some(context) => quote!(#sg::StateGraph::<#state, #context>::with_context_schema()),
        None => quote!(#sg::StateGraph::<#state>::new()),
    }
}

fn add_node(node: &NodeDecl, sg: &CratePath) -> TokenStream {
    let value = match &node.value {
        NodeValue::Path(path) => path.to_token_stream(),
        NodeValue::Expr(expr) => expr.to_token_stream(),
    };
    let options = &node.options;
    let mut calls = Vec::new();
    if let NodeValue::Expr(_) = &node.value {
        let name = LitStr::new(&name_of(&node.name), node.name.span());
        calls.push(quote!(.name(#name)));
    }
    if options.defer.is_some() {
        calls.push(quote!(.defer(true)));
    }
    if let Some(retry) = &options.retry {
        calls.push(quote!(.retry(#retry)));
    }
    if let Some(timeout) = &options.timeout {
        calls.push(quote!(.timeout(#timeout)));
    }
    if let Some(cache) = &options.cache {
        calls.push(quote!(.cache(#cache)));
    }
    // The call is spanned at the node, where rustc reports a node for another
    // state or a value that is no node.
    let span = value.span();
    if calls.is_empty() {
        quote_spanned!(span=> .add_node(#value))
    } else {
        let sgs = sg.spanned(span);
        quote_spanned!(span=> .add_node_with(#value, #sgs::NodeOptions::new() #(#calls)*))
    }
}

/// `START`, `END`, or the node's name as a string (spanned at the user's token).
fn endpoint(endpoint: &Endpoint, sg: &CratePath) -> TokenStream {
    match endpoint {
        Endpoint::Start(token) => {
            let sgs = sg.spanned(token.span());
            quote_spanned!(token.span()=> #sgs::START)
        }
        Endpoint::End(token) => {
            let sgs = sg.spanned(token.span());
            quote_spanned!(token.span()=> #sgs::END)
        }
        Endpoint::Node(ident) => LitStr::new(&name_of(ident), ident.span()).to_token_stream(),
    }
}

fn edge_calls(edge: &super::ast::EdgeStmt, sg: &CratePath) -> Vec<TokenStream> {
    let mut calls = Vec::new();
    // The source of the next edge: one endpoint, or a join's list.
    let mut source = match &edge.head {
        Head::One(first) => endpoint(first, sg),
        Head::Join { sources, .. } => {
            let sources = sources.iter().map(|s| endpoint(s, sg));
            quote!([#(#sources),*])
        }
    };
    for step in &edge.steps {
        let target = endpoint(step, sg);
        calls.push(quote!(.add_edge(#source, #target)));
        source = target;
    }
    match &edge.tail {
        None => {}
        Some(Tail::Match { router, map, .. }) => match map {
            None => calls.push(quote!(.add_conditional_edges(#source, #router))),
            Some(PathMapDecl::List(targets)) => {
                let targets = targets.iter().map(|t| endpoint(t, sg));
                calls.push(quote! {
                    .add_conditional_edges_with(#source, #router, #sg::PathMap::from([#(#targets),*]))
                });
            }
            Some(PathMapDecl::Keyed(entries)) => {
                let entries = entries.iter().map(|(key, target)| {
                    let target = endpoint(target, sg);
                    quote!((#key, #target))
                });
                calls.push(quote! {
                    .add_conditional_edges_with(#source, #router, #sg::PathMap::from([#(#entries),*]))
                });
            }
        },
        Some(Tail::Send { targets, .. }) => {
            let targets = targets.iter().map(|t| endpoint(t, sg));
            calls.push(quote!(.destinations(#source, [#(#targets),*])));
        }
    }
    calls
}

/// The const item that checks, when the crate is checked, what the declaration's
/// tokens cannot tell: that every node a node's goto type or a typed router names
/// is declared (the message names the variant and the node), and that every node
/// is reached from START by an edge, a goto, a router's route or a declared send.
fn const_check(graph: &Graph, state: &syn::Type, sg: &CratePath) -> TokenStream {
    let names: Vec<String> = graph.nodes.iter().map(|n| name_of(&n.name)).collect();
    let index = |ident: &syn::Ident| names.iter().position(|n| *n == name_of(ident));
    let context = match &graph.context {
        Some(context) => context.to_token_stream(),
        None => quote!(#sg::context::Untyped),
    };
    let check = quote!(#sg::__private::graph_check);
    let start = quote!(#check::START);

    let mut entries: Vec<usize> = Vec::new();
    let mut edges: Vec<(TokenStream, usize)> = Vec::new();
    let mut routes: Vec<TokenStream> = Vec::new();
    let mut undeclared: Vec<TokenStream> = Vec::new();

    for (i, node) in graph.nodes.iter().enumerate() {
        if node.options.dynamic.is_some() {
            entries.push(i);
        }
        let path = match &node.value {
            NodeValue::Path(path) => Some(path.to_token_stream()),
            NodeValue::Expr(expr) => match &**expr {
                Expr::Path(path) => Some(path.to_token_stream()),
                _ => None,
            },
        };
        if let Some(path) = path {
            let span = path.span();
            let sgs = sg.spanned(span);
            let of = quote_spanned!(span=> #sgs::__private::graph_check::node_routes(&#path));
            routes.push(quote!((#i, #of)));
            undeclared.push(panic_if_undeclared(&of, span, sg));
        }
    }

    let source_of = |endpoint: &Endpoint| -> Option<TokenStream> {
        match endpoint {
            Endpoint::Start(_) => Some(start.clone()),
            Endpoint::End(_) => None,
            Endpoint::Node(ident) => index(ident).map(|i| quote!(#i)),
        }
    };
    for edge in &graph.edges {
        let mut sources: Vec<&Endpoint> = match &edge.head {
            Head::One(first) => vec![first],
            Head::Join { sources, .. } => sources.iter().collect(),
        };
        for step in &edge.steps {
            if let Endpoint::Node(ident) = step {
                if let Some(target) = index(ident) {
                    for source in &sources {
                        if let Some(source) = source_of(source) {
                            edges.push((source, target));
                        }
                    }
                }
            }
            sources = vec![step];
        }
        // A tail leaves the last endpoint (a join's tail is an error of `valid`).
        let Some(source) = sources.first().and_then(|s| source_of(s)) else {
            continue;
        };
        let targets: Vec<&Endpoint> = match &edge.tail {
            None => Vec::new(),
            Some(Tail::Send { targets, .. }) => targets.iter().collect(),
            Some(Tail::Match {
                map: Some(PathMapDecl::List(list)),
                ..
            }) => list.iter().collect(),
            Some(Tail::Match {
                map: Some(PathMapDecl::Keyed(entries)),
                ..
            }) => entries.iter().map(|(_, t)| t).collect(),
            Some(Tail::Match {
                router, map: None, ..
            }) => {
                // A typed router: its routes are its return type's, when the
                // router is named by a path (a closure's type cannot be named).
                if let Expr::Path(path) = &**router {
                    let span = path.span();
                    let sgs = sg.spanned(span);
                    let of = quote_spanned! {span=>
                        &[#sgs::__private::graph_check::router_routes::<#state, #context, _, _>(&#path)]
                    };
                    routes.push(quote!((#source, #of)));
                    undeclared.push(panic_if_undeclared(&of, span, sg));
                }
                Vec::new()
            }
        };
        for target in targets {
            if let Endpoint::Node(ident) = target {
                if let Some(target) = index(ident) {
                    edges.push((source.clone(), target));
                }
            }
        }
    }
    // An edge from START makes its target an entry.
    let mut inner_edges = Vec::new();
    for (source, target) in edges {
        if source.to_string() == start.to_string() {
            entries.push(target);
        } else {
            inner_edges.push(quote!((#source, #target)));
        }
    }

    let count = names.len();
    let unreached = graph.nodes.iter().enumerate().map(|(i, node)| {
        let name = name_of(&node.name);
        let message = format!(
            "the node `{name}` is not reached from START: no edge, conditional edge, goto or \
             send of this graph leads to it; add an edge to it, or mark it #[dynamic] if it is \
             reached in a way the declaration does not show (a router returning node names as \
             strings, a Send without `-> send {name}`)"
        );
        let span = node.name.span();
        quote_spanned!(span=> if !__REACHED[#i] { ::core::panic!(#message) })
    });
    quote! {
        #[allow(clippy::all)]
        const _: () = {
            const __NAMES: [&str; #count] = [#(#names),*];
            #(#undeclared)*
            const __REACHED: [bool; #count] = #check::reached(
                &__NAMES,
                &[#(#entries),*],
                &[#(#inner_edges),*],
                &[#(#routes),*],
            );
            #(#unreached)*
        };
    }
}

/// Panics in the const item, at `span`, with the message of the first route of
/// `routes` the graph does not declare.
fn panic_if_undeclared(routes: &TokenStream, span: Span, sg: &CratePath) -> TokenStream {
    let sgs = sg.spanned(span);
    quote_spanned! {span=>
        if let ::core::option::Option::Some(__missing) =
            #sgs::__private::graph_check::undeclared(&__NAMES, #routes)
        {
            ::core::panic!("{}", __missing)
        }
    }
}
