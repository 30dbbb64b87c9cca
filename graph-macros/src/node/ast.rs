//! The model of a `#[node]` fn: its input, its optional context, and its return type
//! with every `Command<G>` completed to `Command<G, <S as State>::Update>`.

use crate::crate_path::CratePath;
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, GenericArgument, ItemFn, Pat, PathArguments, ReturnType, Type, TypePath,
};

pub(crate) struct NodeFn<'a> {
    pub(crate) item: &'a ItemFn,
    /// Doc comments, moved to the unit struct.
    pub(crate) docs: Vec<Attribute>,
    /// `#[cfg]`s, repeated on every generated item.
    pub(crate) cfgs: Vec<Attribute>,
    /// Every other attribute, kept on the `call` fn.
    pub(crate) other_attrs: Vec<Attribute>,
    pub(crate) input: Option<InputParam<'a>>,
    pub(crate) ctx: Option<CtxParam<'a>>,
    /// The completed return type (`()` when there is none).
    pub(crate) ret: Type,
    /// The return type with each goto type replaced by `NoGoto`: checked against
    /// `IntoNodeOutput` without reporting goto types twice (they have their own check).
    pub(crate) ret_without_gotos: Type,
    /// The goto type of each `Command<G>` in the return type.
    pub(crate) gotos: Vec<Type>,
    /// `state = ..` of the attribute.
    pub(crate) state_arg: Option<&'a syn::Path>,
    /// `S: State` for the state `S` that a `Command<G>` was completed with, spanned at
    /// the first such `Command`; see `NodeFn::from_syn`.
    pub(crate) state_bound: Option<TokenStream>,
}

pub(crate) struct InputParam<'a> {
    /// The input type, without the leading `&`.
    pub(crate) ty: &'a Type,
    pub(crate) passing: Passing,
}

/// The context parameter: `ctx: &Context`, `ctx: &Context<UserCtx>`, or by value.
#[derive(Clone, Copy)]
pub(crate) struct CtxParam<'a> {
    /// The context type, without the leading `&` (`Context<UserCtx>`).
    pub(crate) ty: &'a Type,
    pub(crate) passing: Passing,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passing {
    ByRef,
    ByValue,
}

const EXTRA_PARAM: &str =
    "#[node] fns take the state (or a payload) and optionally `ctx: &Context`; remove this \
     parameter";

impl<'a> NodeFn<'a> {
    pub(crate) fn from_syn(
        cx: &Ctxt,
        item: &'a ItemFn,
        state_arg: Option<&'a syn::Path>,
        sg: &CratePath,
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

        let sig = &item.sig;
        let mut input = None;
        let mut ctx = None;
        for (position, arg) in sig.inputs.iter().enumerate() {
            let typed = match arg {
                // `expand` reports methods before building the model.
                FnArg::Receiver(_) => continue,
                FnArg::Typed(typed) => typed,
            };
            if position > 1 {
                cx.error_spanned_by(typed, EXTRA_PARAM);
                continue;
            }
            check_pattern(cx, &typed.pat);
            let ty = ungroup(&typed.ty);
            if position == 0 {
                input = input_param(cx, ty);
            } else if is_context(ty) || matches!(ty, Type::Reference(r) if is_context(&r.elem)) {
                ctx = ctx_param(cx, ty);
            } else {
                cx.error_spanned_by(typed, EXTRA_PARAM);
            }
        }
        if sig.inputs.is_empty() {
            cx.error_at(
                sig.paren_token.span.join(),
                "#[node] fns take their input as the first parameter: the state, as in \
                 `fn agent(state: &MyState)`, or a payload sent with `send`",
            );
        }

        let state: Option<TokenStream> = match (state_arg, &input) {
            (Some(path), _) => Some(path.to_token_stream()),
            (None, Some(input)) => Some(input.ty.to_token_stream()),
            (None, None) => None,
        };
        let mut ret = match &sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let mut gotos = Vec::new();
        let mut completed = None;
        complete(cx, sg, &mut ret, state.as_ref(), &mut gotos, &mut completed);
        // `<S as State>::Update` appears in several generated items. When `S` is not a
        // state (a payload node returning `Command<G>` without `state = ..`), each of
        // them would report it. A `where S: State` on each item reports it once per
        // item instead, always at the same span, so rustc shows it once.
        let state_bound = completed.and_then(|span| {
            let state = respan(state.clone()?, span);
            let sgs = sg.spanned(span);
            Some(quote::quote_spanned!(span=> #state: #sgs::State))
        });
        let mut ret_without_gotos = ret.clone();
        replace_gotos(sg, &mut ret_without_gotos);

        NodeFn {
            item,
            docs,
            cfgs,
            other_attrs,
            input,
            ctx,
            ret,
            ret_without_gotos,
            gotos,
            state_arg,
            state_bound,
        }
    }
}

fn ungroup(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

fn check_pattern(cx: &Ctxt, pat: &Pat) {
    match pat {
        Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {}
        Pat::Wild(_) => {}
        other => cx.error_spanned_by(
            other,
            "#[node] parameters must be plain names (or `_`); bind the value to a name and \
             destructure it in the body",
        ),
    }
}

/// `Context` or `Context<UserCtx>` (at the end of any path).
fn is_context(ty: &Type) -> bool {
    match ungroup(ty) {
        Type::Path(TypePath { qself: None, path }) => path.segments.last().is_some_and(|s| {
            s.ident == "Context"
                && matches!(
                    s.arguments,
                    PathArguments::None | PathArguments::AngleBracketed(_)
                )
        }),
        _ => false,
    }
}

fn input_param<'a>(cx: &Ctxt, ty: &'a Type) -> Option<InputParam<'a>> {
    let (inner, passing) = match ty {
        Type::Reference(reference) => {
            if let Some(mutability) = &reference.mutability {
                let and = &reference.and_token;
                cx.error_spanned_by(
                    quote!(#and #mutability),
                    format!(
                        "a node cannot take its input by `&mut`; take `&{}` and return an \
                         update of the fields to change",
                        reference
                            .elem
                            .to_token_stream()
                            .to_string()
                            .replace(' ', "")
                    ),
                );
                return None;
            }
            (ungroup(&reference.elem), Passing::ByRef)
        }
        other => (other, Passing::ByValue),
    };
    if is_context(inner) {
        cx.error_spanned_by(
            ty,
            "the first parameter of a #[node] fn is its input (the state or a payload); take \
             the context second: `fn agent(state: &MyState, ctx: &Context)`",
        );
        return None;
    }
    if let Type::ImplTrait(_) = inner {
        cx.error_spanned_by(inner, IMPL_TRAIT_INPUT);
        return None;
    }
    Some(InputParam { ty: inner, passing })
}

const IMPL_TRAIT_INPUT: &str =
    "a #[node] input cannot be `impl Trait`: name the type with a parameter, as in \
     `fn summarise<S: Has<Messages>>(state: &S)`, so the node can be added with \
     `add_node(summarise::<MyState>)`";

/// A parameter whose type is `Context`, `&Context` or `&mut Context` (each with
/// or without a context type argument).
fn ctx_param<'a>(cx: &Ctxt, ty: &'a Type) -> Option<CtxParam<'a>> {
    match ty {
        Type::Reference(reference) if is_context(&reference.elem) => {
            if let Some(mutability) = &reference.mutability {
                let and = &reference.and_token;
                cx.error_spanned_by(
                    quote!(#and #mutability),
                    "the context is shared: take it as `ctx: &Context`, not `&mut Context`",
                );
                return None;
            }
            Some(CtxParam {
                ty: ungroup(&reference.elem),
                passing: Passing::ByRef,
            })
        }
        _ => Some(CtxParam {
            ty,
            passing: Passing::ByValue,
        }),
    }
}

/// Completes each `Command<G>` in `ty` (at any depth of generic arguments: `Result`,
/// `Vec`, `Option`..) to `Command<G, <S as State>::Update>`, collects the goto types,
/// and rejects `Command` without arguments and `impl Trait`.
fn complete(
    cx: &Ctxt,
    sg: &CratePath,
    ty: &mut Type,
    state: Option<&TokenStream>,
    gotos: &mut Vec<Type>,
    completed: &mut Option<proc_macro2::Span>,
) {
    match ty {
        Type::Path(TypePath { qself, path }) => {
            if let Some(qself) = qself {
                complete(cx, sg, &mut qself.ty, state, gotos, completed);
            }
            for segment in path.segments.iter_mut() {
                if let PathArguments::AngleBracketed(args) = &mut segment.arguments {
                    for arg in args.args.iter_mut() {
                        if let GenericArgument::Type(arg) = arg {
                            complete(cx, sg, arg, state, gotos, completed);
                        }
                    }
                }
            }
            let Some(last) = path.segments.last_mut() else {
                return;
            };
            if last.ident != "Command" {
                return;
            }
            match &mut last.arguments {
                PathArguments::None => cx.error_spanned_by(
                    &last.ident,
                    "Command needs a goto type: write Command<Route> where `Route` derives Goto \
                     (or Command<NoGoto> for a command that only updates or sends)",
                ),
                PathArguments::AngleBracketed(args) => {
                    let types: Vec<&Type> = args
                        .args
                        .iter()
                        .filter_map(|arg| match arg {
                            GenericArgument::Type(ty) => Some(ty),
                            _ => None,
                        })
                        .collect();
                    if let Some(goto) = types.first() {
                        gotos.push((*goto).clone());
                    }
                    if types.len() == 1 && args.args.len() == 1 {
                        if let Some(state) = state {
                            // Every token at `Command`: if the state is not a `State`, the
                            // uses of this type report one error there, deduplicated.
                            let span = last.ident.span();
                            let state = respan(state.clone(), span);
                            let sgs = sg.spanned(span);
                            let update: Type = syn::parse_quote_spanned! {span=>
                                <#state as #sgs::State>::Update
                            };
                            args.args.push(GenericArgument::Type(update));
                            completed.get_or_insert(span);
                        }
                    }
                }
                PathArguments::Parenthesized(_) => {}
            }
        }
        Type::Reference(reference) => {
            // A node's output must be `'static`: `&str` in a return type can only be
            // `&'static str`, and elided lifetimes are not allowed in the where clauses
            // the expansion repeats the type in.
            if reference.lifetime.as_ref().is_none_or(|l| l.ident == "_") {
                reference.lifetime = Some(syn::Lifetime::new("'static", reference.and_token.span));
            }
            complete(cx, sg, &mut reference.elem, state, gotos, completed);
        }
        Type::Paren(inner) => complete(cx, sg, &mut inner.elem, state, gotos, completed),
        Type::Group(inner) => complete(cx, sg, &mut inner.elem, state, gotos, completed),
        Type::Array(inner) => complete(cx, sg, &mut inner.elem, state, gotos, completed),
        Type::Slice(inner) => complete(cx, sg, &mut inner.elem, state, gotos, completed),
        Type::Tuple(tuple) => {
            for elem in tuple.elems.iter_mut() {
                complete(cx, sg, elem, state, gotos, completed);
            }
        }
        Type::ImplTrait(impl_trait) => cx.error_spanned_by(
            &*impl_trait,
            "#[node] fns cannot return `impl Trait`; name the return type (a state update, \
             `Command<G>`, `Vec<Send>`, `()` or a `Result` of one of these)",
        ),
        _ => {}
    }
}

/// Replaces the goto type of each (completed) `Command` with `NoGoto`.
fn replace_gotos(sg: &CratePath, ty: &mut Type) {
    match ty {
        Type::Path(TypePath { qself, path }) => {
            if let Some(qself) = qself {
                replace_gotos(sg, &mut qself.ty);
            }
            let is_command = path.segments.last().is_some_and(|s| s.ident == "Command");
            let count = path.segments.len();
            for (i, segment) in path.segments.iter_mut().enumerate() {
                if let PathArguments::AngleBracketed(args) = &mut segment.arguments {
                    for (j, arg) in args.args.iter_mut().enumerate() {
                        if let GenericArgument::Type(arg) = arg {
                            if is_command && i + 1 == count && j == 0 {
                                let span = arg.span();
                                let sgs = sg.spanned(span);
                                *arg = syn::parse_quote_spanned!(span=> #sgs::NoGoto);
                            } else {
                                replace_gotos(sg, arg);
                            }
                        }
                    }
                }
            }
        }
        Type::Reference(inner) => replace_gotos(sg, &mut inner.elem),
        Type::Paren(inner) => replace_gotos(sg, &mut inner.elem),
        Type::Group(inner) => replace_gotos(sg, &mut inner.elem),
        Type::Array(inner) => replace_gotos(sg, &mut inner.elem),
        Type::Slice(inner) => replace_gotos(sg, &mut inner.elem),
        Type::Tuple(tuple) => tuple
            .elems
            .iter_mut()
            .for_each(|elem| replace_gotos(sg, elem)),
        _ => {}
    }
}

/// `tokens` with every span, also inside groups, set to `span`.
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = proc_macro2::TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn completed(ty: Type) -> (String, Vec<String>, syn::Result<()>) {
        let cx = Ctxt::new();
        let mut ty = ty;
        let mut gotos = Vec::new();
        let state = quote!(Agent);
        complete(
            &cx,
            &CratePath::stategraph(),
            &mut ty,
            Some(&state),
            &mut gotos,
            &mut None,
        );
        let gotos = gotos.iter().map(|g| quote!(#g).to_string()).collect();
        (quote!(#ty).to_string(), gotos, cx.check())
    }

    #[test]
    fn completes_command_at_any_depth() {
        let update = "< Agent as :: stategraph :: State > :: Update";
        for (input, expected) in [
            (
                parse_quote!(Command<Route>),
                format!("Command < Route , {update} >"),
            ),
            (
                parse_quote!(Result<Command<Route>, MyError>),
                format!("Result < Command < Route , {update} > , MyError >"),
            ),
            (
                parse_quote!(Vec<stategraph::Command<Route>>),
                format!("Vec < stategraph :: Command < Route , {update} > >"),
            ),
            (
                parse_quote!(Option<Command<Route>>),
                format!("Option < Command < Route , {update} > >"),
            ),
        ] {
            let (ty, gotos, result) = completed(input);
            assert_eq!(ty, expected);
            assert_eq!(gotos, ["Route"]);
            assert!(result.is_ok());
        }
    }

    #[test]
    fn leaves_other_types_alone() {
        for input in [
            parse_quote!(Command<Route, OtherUpdate>),
            parse_quote!(AgentUpdate),
            parse_quote!(()),
            parse_quote!(Vec<stategraph::Send>),
        ] {
            let expected = quote!(#input).to_string();
            let (ty, _, result) = completed(input);
            assert_eq!(ty, expected);
            assert!(result.is_ok());
        }
    }

    #[test]
    fn string_targets_are_static() {
        let (ty, gotos, _) = completed(parse_quote!(Command<&str>));
        assert!(ty.starts_with("Command < & 'static str ,"), "{ty}");
        assert_eq!(gotos, ["& 'static str"]);
    }

    #[test]
    fn rejects_command_without_goto_and_impl_trait() {
        for input in [
            parse_quote!(Command),
            parse_quote!(Result<Command, E>),
            parse_quote!(impl Into<AgentUpdate>),
        ] {
            let (_, _, result) = completed(input);
            assert!(result.is_err());
        }
    }

    #[test]
    fn replaces_gotos_for_the_output_check() {
        let mut ty: Type = parse_quote!(Result<Vec<Command<Route, U>>, E>);
        replace_gotos(&CratePath::stategraph(), &mut ty);
        assert_eq!(
            quote!(#ty).to_string(),
            "Result < Vec < Command < :: stategraph :: NoGoto , U > > , E >"
        );
    }

    fn model(item: ItemFn) -> (Option<(String, bool)>, Option<Passing>, usize) {
        let cx = Ctxt::new();
        let node = NodeFn::from_syn(&cx, &item, None, &CratePath::stategraph());
        let input = node.input.as_ref().map(|i| {
            let ty = i.ty;
            (quote!(#ty).to_string(), i.passing == Passing::ByRef)
        });
        let ctx = node.ctx.map(|c| c.passing);
        let errors = match cx.check() {
            Ok(()) => 0,
            Err(err) => err.into_iter().count(),
        };
        (input, ctx, errors)
    }

    #[test]
    fn classifies_parameters() {
        let (input, ctx, errors) = model(parse_quote!(
            fn a(s: &Agent) {}
        ));
        assert_eq!(input, Some(("Agent".to_owned(), true)));
        assert!(ctx.is_none());
        assert_eq!(errors, 0);

        let (input, ctx, errors) = model(parse_quote!(
            fn a(item: WorkItem, ctx: Context) {}
        ));
        assert_eq!(input, Some(("WorkItem".to_owned(), false)));
        assert!(ctx == Some(Passing::ByValue));
        assert_eq!(errors, 0);

        let (_, ctx, errors) = model(parse_quote!(
            fn a(_: &Agent, c: &stategraph::Context) {}
        ));
        assert!(ctx == Some(Passing::ByRef));
        assert_eq!(errors, 0);

        let (_, ctx, errors) = model(parse_quote!(
            fn a(_: &Agent, c: &Context<UserCtx>) {}
        ));
        assert!(ctx == Some(Passing::ByRef));
        assert_eq!(errors, 0);
    }

    #[test]
    fn reports_each_bad_parameter() {
        let (_, _, errors) = model(parse_quote!(
            fn a(s: &mut Agent, n: u32, m: u32) {}
        ));
        assert_eq!(errors, 3);
        let (_, _, errors) = model(parse_quote!(
            fn a() {}
        ));
        assert_eq!(errors, 1);
        let (_, _, errors) = model(parse_quote!(
            fn a((x, y): (u32, u32)) {}
        ));
        assert_eq!(errors, 1);
    }
}
