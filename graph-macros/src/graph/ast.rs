//! The model of a `graph!` declaration and its parser.
//!
//! A declaration is a list of statements, each ending with `;`:
//!
//! ```text
//! state Ticket;                       // the graph's state (required)
//! context Settings;                   // its context type (optional)
//! crate sg;                           // the facade's path (optional)
//! node triage, answer;                // #[node] fns, named by their fn
//! node research = research_graph();   // a node value, under the name `research`
//! #[defer] node collect;              // options: defer, dynamic, retry(..), timeout(..), cache(..)
//! START -> triage;                    // edges, chained: a -> b -> c
//! (research, write) -> collect;       // a join
//! answer -> match after_answer;       // a conditional edge with a typed router
//! write -> match ok { "yes" => publish, "no" => write };   // .. with a path map
//! split -> send worker;               // `Send` destinations
//! ```
//!
//! A statement that does not parse is reported and skipped up to its `;`, so every
//! mistake in a declaration is reported by one build.

use crate::symbol::Symbol;
use proc_macro2::{Span, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, bracketed, parenthesized, Attribute, Expr, ExprPath, Ident, LitStr, Token};

const STATE: Symbol = Symbol("state");
const CONTEXT: Symbol = Symbol("context");
const NODE: Symbol = Symbol("node");
const SEND: Symbol = Symbol("send");

pub(crate) struct Graph {
    pub(crate) state: Option<syn::Type>,
    pub(crate) context: Option<syn::Type>,
    pub(crate) krate: Option<syn::Path>,
    pub(crate) nodes: Vec<NodeDecl>,
    pub(crate) edges: Vec<EdgeStmt>,
    /// Every statement that did not parse.
    pub(crate) errors: Vec<syn::Error>,
}

/// One declared node.
pub(crate) struct NodeDecl {
    /// The token that names it (the fn's name, or the name before `=`).
    pub(crate) name: Ident,
    pub(crate) value: NodeValue,
    pub(crate) options: NodeOptions,
}

pub(crate) enum NodeValue {
    /// `node agent;`: a `#[node]` fn (possibly `summarise::<S>`), under its own name.
    Path(ExprPath),
    /// `node name = expr;`: any node value, registered under `name`.
    Expr(Box<Expr>),
}

#[derive(Default, Clone)]
pub(crate) struct NodeOptions {
    pub(crate) defer: Option<Span>,
    /// Reached at run time in ways the declaration does not show (a string
    /// route, an undeclared `Send`): exempt from the reachability check.
    pub(crate) dynamic: Option<Span>,
    pub(crate) retry: Option<Expr>,
    pub(crate) timeout: Option<Expr>,
    pub(crate) cache: Option<Expr>,
}

/// `START`, `END`, or a node, as an edge names it.
#[derive(Clone)]
pub(crate) enum Endpoint {
    Start(Ident),
    End(Ident),
    Node(Ident),
}

impl Endpoint {
    pub(crate) fn ident(&self) -> &Ident {
        match self {
            Endpoint::Start(i) | Endpoint::End(i) | Endpoint::Node(i) => i,
        }
    }
}

/// The first element of an edge statement: one endpoint or a join's sources.
pub(crate) enum Head {
    One(Endpoint),
    Join { paren: Span, sources: Vec<Endpoint> },
}

/// `head -> a -> b -> tail;`
pub(crate) struct EdgeStmt {
    pub(crate) head: Head,
    pub(crate) steps: Vec<Endpoint>,
    pub(crate) tail: Option<Tail>,
}

/// How an edge statement may end, from its last endpoint.
pub(crate) enum Tail {
    /// `-> match router` with an optional path map.
    Match {
        token: Token![match],
        router: Box<Expr>,
        map: Option<PathMapDecl>,
    },
    /// `-> send worker` or `-> send [a, b]`.
    Send {
        token: Ident,
        targets: Vec<Endpoint>,
    },
}

pub(crate) enum PathMapDecl {
    /// `{ a, b, END }`: each name maps to itself.
    List(Vec<Endpoint>),
    /// `{ "key" => node, .. }`.
    Keyed(Vec<(LitStr, Endpoint)>),
}

const STATEMENTS: &str = "`state MyState;`, `context MyContext;`, \
                          `crate path;`, `node a, b;`, `node name = value;`, or an edge: \
                          `a -> b;`, `(a, b) -> c;`, `a -> match router;`, `a -> send b;`";

impl Parse for Graph {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut graph = Graph {
            state: None,
            context: None,
            krate: None,
            nodes: Vec::new(),
            edges: Vec::new(),
            errors: Vec::new(),
        };
        while !input.is_empty() {
            if let Err(err) = graph.statement(input) {
                graph.errors.push(err);
                skip_statement(input);
            }
        }
        Ok(graph)
    }
}

/// Skips tokens through the next top-level `;` (or to the end).
fn skip_statement(input: ParseStream) {
    let _ = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            rest = next;
            if let TokenTree::Punct(p) = &tree {
                if p.as_char() == ';' {
                    break;
                }
            }
        }
        Ok(((), rest))
    });
}

impl Graph {
    fn statement(&mut self, input: ParseStream) -> syn::Result<()> {
        let attrs = input.call(Attribute::parse_outer)?;
        let keyword = declaration_keyword(input);
        if !attrs.is_empty() && !matches!(&keyword, Some(k) if k == NODE) {
            return Err(syn::Error::new_spanned(
                &attrs[0],
                "options belong to a node declaration: `#[defer] node collect;`",
            ));
        }
        match keyword {
            Some(k) if k == STATE => {
                let token: Ident = input.parse()?;
                let ty: syn::Type = input.parse()?;
                end_statement(input)?;
                if self.state.is_some() {
                    return Err(syn::Error::new(
                        token.span(),
                        "a graph has one state type; remove this `state`",
                    ));
                }
                self.state = Some(ty);
            }
            Some(k) if k == CONTEXT => {
                let token: Ident = input.parse()?;
                let ty: syn::Type = input.parse()?;
                end_statement(input)?;
                if self.context.is_some() {
                    return Err(syn::Error::new(
                        token.span(),
                        "a graph has one context type; remove this `context`",
                    ));
                }
                self.context = Some(ty);
            }
            Some(_) => {
                input.parse::<Ident>()?;
                let options = NodeOptions::from_attrs(&attrs)?;
                let entries = Punctuated::<NodeEntry, Token![,]>::parse_separated_nonempty(input)?;
                end_statement(input)?;
                for entry in entries {
                    self.nodes.push(NodeDecl {
                        name: entry.name,
                        value: entry.value,
                        options: options.clone(),
                    });
                }
            }
            None if input.peek(Token![crate]) => {
                let token: Token![crate] = input.parse()?;
                let path = input.call(syn::Path::parse_mod_style)?;
                end_statement(input)?;
                if self.krate.is_some() {
                    return Err(syn::Error::new(
                        token.span,
                        "a graph has one crate path; remove this `crate`",
                    ));
                }
                self.krate = Some(path);
            }
            None => {
                let edge = input.parse::<EdgeStmt>()?;
                self.edges.push(edge);
            }
        }
        Ok(())
    }
}

/// `state`, `context` or `node` when the statement is that declaration: the word
/// is not followed by `->` or `,` (which would make it a node of that name in an
/// edge).
fn declaration_keyword(input: ParseStream) -> Option<Ident> {
    let fork = input.fork();
    let ident: Ident = fork.parse().ok()?;
    if !(ident == STATE || ident == CONTEXT || ident == NODE) {
        return None;
    }
    if fork.peek(Token![->]) || fork.peek(Token![,]) || fork.peek(Token![;]) {
        return None;
    }
    Some(ident)
}

fn end_statement(input: ParseStream) -> syn::Result<()> {
    if input.is_empty() {
        return Err(input.error("expected `;` to end the statement"));
    }
    input.parse::<Token![;]>().map(drop)
}

struct NodeEntry {
    name: Ident,
    value: NodeValue,
}

impl Parse for NodeEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(Ident)
            && input.peek2(Token![=])
            && !input.peek2(Token![==])
            && !input.peek2(Token![=>])
        {
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let value: Expr = input.parse()?;
            return Ok(NodeEntry {
                name,
                value: NodeValue::Expr(Box::new(value)),
            });
        }
        let path: ExprPath = input.parse().map_err(|err| {
            syn::Error::new(
                err.span(),
                "expected a node: the name of a #[node] fn (`node agent;`), or a name and a \
                 node value (`node research = research_graph();`)",
            )
        })?;
        let Some(last) = path.path.segments.last() else {
            return Err(syn::Error::new_spanned(
                &path,
                "expected the path of a #[node] fn",
            ));
        };
        Ok(NodeEntry {
            name: last.ident.clone(),
            value: NodeValue::Path(path),
        })
    }
}

const OPTIONS: &str = "the options of a node are #[defer], #[dynamic], #[retry(policy)], \
                       #[timeout(duration)] and #[cache(policy)]";

impl NodeOptions {
    fn from_attrs(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut options = NodeOptions::default();
        let mut errors: Option<syn::Error> = None;
        let mut push = |err: syn::Error| match &mut errors {
            Some(first) => first.combine(err),
            None => errors = Some(err),
        };
        for attr in attrs {
            let Some(key) = attr.path().get_ident() else {
                push(syn::Error::new_spanned(
                    attr.path(),
                    format!("unknown node option; {OPTIONS}"),
                ));
                continue;
            };
            let key_name = key.to_string();
            match key_name.as_str() {
                "defer" | "dynamic" => {
                    if let Err(err) = attr.meta.require_path_only() {
                        push(syn::Error::new(
                            err.span(),
                            format!("#[{key_name}] takes no value; write #[{key_name}]"),
                        ));
                        continue;
                    }
                    let slot = if key_name == "defer" {
                        &mut options.defer
                    } else {
                        &mut options.dynamic
                    };
                    if slot.is_some() {
                        push(syn::Error::new_spanned(
                            attr,
                            format!("duplicate #[{key_name}]; remove one"),
                        ));
                    }
                    *slot = Some(key.span());
                }
                "retry" | "timeout" | "cache" => {
                    let value = match attr.parse_args::<Expr>() {
                        Ok(value) => value,
                        Err(_) => {
                            let example = match key_name.as_str() {
                                "retry" => "#[retry(RetryPolicy::new())]",
                                "timeout" => "#[timeout(Duration::from_secs(5))]",
                                _ => "#[cache(CachePolicy::new())]",
                            };
                            push(syn::Error::new_spanned(
                                attr,
                                format!("#[{key_name}] takes one value, as in {example}"),
                            ));
                            continue;
                        }
                    };
                    let slot = match key_name.as_str() {
                        "retry" => &mut options.retry,
                        "timeout" => &mut options.timeout,
                        _ => &mut options.cache,
                    };
                    if slot.is_some() {
                        push(syn::Error::new_spanned(
                            attr,
                            format!("duplicate #[{key_name}]; remove one"),
                        ));
                    }
                    *slot = Some(value);
                }
                _ => push(syn::Error::new_spanned(
                    attr.path(),
                    format!("unknown node option `{key_name}`; {OPTIONS}"),
                )),
            }
        }
        match errors {
            Some(err) => Err(err),
            None => Ok(options),
        }
    }
}

const AFTER_ARROW: &str = "expected a node, START or END, `match router` or `send node` after `->`";

impl Parse for Endpoint {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let ident = input
            .call(Ident::parse_any)
            .map_err(|err| syn::Error::new(err.span(), "expected a node name, START or END"))?;
        if is_keyword(&ident) {
            return Err(syn::Error::new(
                ident.span(),
                "expected a node name, START or END",
            ));
        }
        Ok(if ident == "START" {
            Endpoint::Start(ident)
        } else if ident == "END" {
            Endpoint::End(ident)
        } else {
            Endpoint::Node(ident)
        })
    }
}

/// A Rust keyword, which `Ident::parse_any` accepts but no node is called.
fn is_keyword(ident: &Ident) -> bool {
    syn::parse2::<Ident>(quote::quote!(#ident)).is_err()
}

impl Parse for EdgeStmt {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let head = if input.peek(syn::token::Paren) {
            let content;
            let paren = parenthesized!(content in input);
            let sources = Punctuated::<Endpoint, Token![,]>::parse_terminated(&content)?;
            if sources.is_empty() {
                return Err(syn::Error::new(
                    paren.span.join(),
                    "a join names its sources: `(a, b) -> c;`",
                ));
            }
            Head::Join {
                paren: paren.span.join(),
                sources: sources.into_iter().collect(),
            }
        } else {
            let first: Endpoint = input.parse().map_err(|err| {
                syn::Error::new(
                    err.span(),
                    format!("expected a graph! statement: {STATEMENTS}"),
                )
            })?;
            Head::One(first)
        };
        if !input.peek(Token![->]) {
            if let Head::One(first) = &head {
                // `stat Ticket;`, `nodes a;`: a word that is no statement.
                if !input.is_empty() && !input.peek(Token![;]) {
                    return Err(syn::Error::new(
                        first.ident().span(),
                        format!(
                            "expected `->` after `{}` (an edge), or a statement: {STATEMENTS}",
                            first.ident()
                        ),
                    ));
                }
            }
            return Err(match &head {
                Head::One(first) => syn::Error::new(
                    first.ident().span(),
                    format!(
                        "expected `->` after `{}`: an edge is `a -> b;`",
                        first.ident()
                    ),
                ),
                Head::Join { paren, .. } => syn::Error::new(
                    *paren,
                    "expected `->` after the join's sources: `(a, b) -> c;`",
                ),
            });
        }
        let mut steps = Vec::new();
        let mut tail = None;
        while input.peek(Token![->]) {
            let arrow: Token![->] = input.parse()?;
            if input.is_empty() || input.peek(Token![;]) {
                return Err(syn::Error::new_spanned(
                    arrow,
                    format!("{AFTER_ARROW}; remove the trailing `->`"),
                ));
            }
            if input.peek(Token![match]) {
                tail = Some(parse_match(input)?);
                break;
            }
            if input.peek(Ident)
                && input.fork().parse::<Ident>().is_ok_and(|i| i == SEND)
                && !input.peek2(Token![->])
                && !input.peek2(Token![;])
            {
                let token: Ident = input.parse()?;
                let targets = endpoint_list(input)?;
                tail = Some(Tail::Send { token, targets });
                break;
            }
            let step: Endpoint = input
                .parse()
                .map_err(|err| syn::Error::new(err.span(), AFTER_ARROW))?;
            steps.push(step);
        }
        if !input.is_empty() && !input.peek(Token![;]) {
            let what = if tail.is_some() {
                "expected `;` after the conditional edge or send"
            } else {
                "expected `->` or `;`"
            };
            return Err(input.error(what));
        }
        end_statement(input)?;
        Ok(EdgeStmt { head, steps, tail })
    }
}

fn parse_match(input: ParseStream) -> syn::Result<Tail> {
    let token: Token![match] = input.parse()?;
    if input.is_empty() || input.peek(Token![;]) {
        return Err(syn::Error::new(
            token.span,
            "expected the router after `match`: `a -> match router;`",
        ));
    }
    let router = Expr::parse_without_eager_brace(input)?;
    let map = if input.peek(syn::token::Brace) {
        let content;
        let brace = braced!(content in input);
        Some(path_map(&content, brace.span.join())?)
    } else {
        None
    };
    Ok(Tail::Match {
        token,
        router: Box::new(router),
        map,
    })
}

/// `{ a, b, END }` or `{ "key" => node, .. }`.
fn path_map(content: ParseStream, span: Span) -> syn::Result<PathMapDecl> {
    if content.is_empty() {
        return Err(syn::Error::new(
            span,
            "an empty path map; list the targets (`{ a, b, END }`) or map keys to them \
             (`{ \"yes\" => a, \"no\" => b }`), or remove the braces",
        ));
    }
    if content.peek(LitStr) {
        let entries = Punctuated::<KeyedTarget, Token![,]>::parse_terminated(content)?;
        return Ok(PathMapDecl::Keyed(
            entries.into_iter().map(|e| (e.key, e.target)).collect(),
        ));
    }
    let targets = Punctuated::<Endpoint, Token![,]>::parse_terminated(content)?;
    Ok(PathMapDecl::List(targets.into_iter().collect()))
}

struct KeyedTarget {
    key: LitStr,
    target: Endpoint,
}

impl Parse for KeyedTarget {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: LitStr = input.parse().map_err(|err| {
            syn::Error::new(
                err.span(),
                "a keyed path map maps every key: `\"key\" => node`",
            )
        })?;
        input.parse::<Token![=>]>()?;
        let target = input.parse()?;
        Ok(KeyedTarget { key, target })
    }
}

/// `worker` or `[a, b]`.
fn endpoint_list(input: ParseStream) -> syn::Result<Vec<Endpoint>> {
    if input.peek(syn::token::Bracket) {
        let content;
        bracketed!(content in input);
        let list = Punctuated::<Endpoint, Token![,]>::parse_terminated(&content)?;
        return Ok(list.into_iter().collect());
    }
    Ok(vec![input.parse()?])
}
