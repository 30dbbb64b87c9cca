//! Procedural macros of stategraph. Use them through the `stategraph` crate, which
//! documents them; everything here expands to paths of that facade, as the user's
//! crate names it: `crate = path` in the macro's arguments, else the `stategraph`
//! dependency found in Cargo.toml under any name, else `stategraph-core` (or
//! `stategraph-agents` for `#[tool]`) for crates that depend on those directly
//! (`crate_path.rs`).

#![forbid(unsafe_code)]

mod case;
mod crate_path;
mod ctxt;
mod fallback;
mod func;
mod goto;
mod graph;
mod node;
mod schema;
mod state;
mod symbol;
mod tool;

use proc_macro::TokenStream;
use syn::{parse_macro_input, DeriveInput};

#[proc_macro_derive(State, attributes(state, reducer, channel, field))]
pub fn derive_state(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    debug("derive(State)", &input.ident, state::derive(&input))
}

#[proc_macro_derive(Schema, attributes(schema))]
pub fn derive_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    debug("derive(Schema)", &input.ident, schema::derive(&input))
}

#[proc_macro_derive(Goto, attributes(goto))]
pub fn derive_goto(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    debug("derive(Goto)", &input.ident, goto::derive(&input))
}

/// Declares a whole graph, its shape checked at compile time: see `stategraph::graph!`.
#[proc_macro]
pub fn graph(input: TokenStream) -> TokenStream {
    let tokens = graph::expand(input.into());
    debug("graph!", &"graph", tokens)
}

#[proc_macro_attribute]
pub fn node(args: TokenStream, item: TokenStream) -> TokenStream {
    let (name, tokens) = node::expand(args.into(), item.into());
    debug("#[node]", &name, tokens)
}

/// Makes a fn a task of the Functional API: see `stategraph::func`.
#[proc_macro_attribute]
pub fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    let (name, tokens) = func::task(args.into(), item.into());
    debug("#[task]", &name, tokens)
}

/// Makes an async fn an entrypoint of the Functional API: see `stategraph::func`.
#[proc_macro_attribute]
pub fn entrypoint(args: TokenStream, item: TokenStream) -> TokenStream {
    let (name, tokens) = func::entrypoint(args.into(), item.into());
    debug("#[entrypoint]", &name, tokens)
}

#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let (name, tokens) = tool::expand(args.into(), item.into());
    debug("#[tool]", &name, tokens)
}

/// Prints the expansion to stderr when `GRAPH_MACROS_DEBUG` is set: `1` prints every
/// expansion, any other value only those of the items with that name
/// (`GRAPH_MACROS_DEBUG=Agent cargo check`).
fn debug(
    macro_name: &str,
    item: &dyn std::fmt::Display,
    tokens: proc_macro2::TokenStream,
) -> TokenStream {
    if let Ok(filter) = std::env::var("GRAPH_MACROS_DEBUG") {
        let item = item.to_string();
        if filter == "1" || filter == item {
            eprintln!("// {macro_name} on `{item}`\n{tokens}\n");
        }
    }
    tokens.into()
}
