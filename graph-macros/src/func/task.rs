//! `#[task]`: a fn whose calls return a `TaskFuture` and are saved by call order.

use crate::crate_path::{CratePath, Needs};
use crate::ctxt::Ctxt;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, LitStr, Pat, ReturnType, Type};

/// `#[task(..)]`'s arguments.
#[derive(Default)]
struct Args {
    name: Option<LitStr>,
    retry: Option<Expr>,
    timeout: Option<Expr>,
    cache_policy: Option<Expr>,
    krate: Option<syn::Path>,
}

fn parse_args(cx: &Ctxt, args: TokenStream) -> Args {
    let mut out = Args::default();
    let mut errors = Vec::new();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            out.name = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("retry") {
            out.retry = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("timeout") {
            out.timeout = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("cache_policy") {
            out.cache_policy = Some(meta.value()?.parse()?);
        } else if meta.path.is_ident("crate") {
            crate::crate_path::parse_option(&meta, &mut out.krate, "task", &mut errors)?;
        } else {
            return Err(meta.error(
                "unknown #[task] argument: expected `name = \"..\"`, `retry = <RetryPolicy>`, \
                 `timeout = <Duration>`, `cache_policy = <CachePolicy>` or `crate = path`",
            ));
        }
        Ok(())
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, args) {
        cx.syn_error(e);
    }
    errors.into_iter().for_each(|e| cx.syn_error(e));
    out
}

/// One argument of the task: its name and type.
struct Param<'a> {
    ident: &'a Ident,
    ty: &'a Type,
}

/// Expands `#[task(args)] item`; also returns the item's name for debug output.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> (Ident, TokenStream) {
    let function = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let err = syn::Error::new(
                Span::call_site(),
                "#[task] goes on a fn (async or not) whose arguments and result are serde types",
            )
            .into_compile_error();
            return (Ident::new("task", Span::call_site()), quote!(#err #item));
        }
    };
    let name = function.sig.ident.clone();
    let cx = Ctxt::new();
    let args = parse_args(&cx, args);
    let params = check(&cx, &function);
    let tokens = match cx.check() {
        Ok(()) => expand_task(&function, &params, &args),
        Err(err) => {
            let err = err.into_compile_error();
            quote!(#err #function)
        }
    };
    (name, tokens)
}

/// Validates the signature: no receiver, no generics, plain named arguments of
/// owned types.
fn check<'a>(cx: &Ctxt, f: &'a ItemFn) -> Vec<Param<'a>> {
    let mut params = Vec::new();
    if !f.sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &f.sig.generics,
            "a #[task] cannot be generic: its result is saved and read back by type, so write \
             one task per type",
        );
    }
    for arg in &f.sig.inputs {
        match arg {
            FnArg::Receiver(r) => cx.error_spanned_by(
                r,
                "a #[task] cannot take `self`: write it as a free fn and pass what it needs as \
                 arguments",
            ),
            FnArg::Typed(t) => {
                let Pat::Ident(pat) = &*t.pat else {
                    cx.error_spanned_by(
                        &t.pat,
                        "a #[task] argument must be a plain name (`x: T`), not a pattern",
                    );
                    continue;
                };
                if matches!(&*t.ty, Type::Reference(_)) {
                    cx.error_spanned_by(
                        &t.ty,
                        "a #[task] argument is moved into the task, which may outlive the \
                         caller's borrow: take an owned type (`String`, not `&str`)",
                    );
                    continue;
                }
                if matches!(&*t.ty, Type::ImplTrait(_)) {
                    cx.error_spanned_by(
                        &t.ty,
                        "a #[task] argument must have a concrete serde type, not `impl Trait`",
                    );
                    continue;
                }
                params.push(Param {
                    ident: &pat.ident,
                    ty: &t.ty,
                });
            }
        }
    }
    params
}

fn expand_task(f: &ItemFn, params: &[Param<'_>], args: &Args) -> TokenStream {
    let krate = CratePath::new(args.krate.clone(), Needs::Core);
    let func = quote!(#krate::func);
    let vis = &f.vis;
    let ident = &f.sig.ident;
    let attrs = &f.attrs;
    let name = match &args.name {
        Some(lit) => lit.value(),
        None => ident.to_string(),
    };
    let (ok_ty, fallible) = match &f.sig.output {
        ReturnType::Default => (syn::parse_quote!(()), false),
        ReturnType::Type(_, ty) => match super::result_ok(ty) {
            Some(ok) => ((*ok).clone(), true),
            None => ((**ty).clone(), false),
        },
    };
    let output = &f.sig.output;
    let asyncness = &f.sig.asyncness;
    let block = &f.block;
    let idents: Vec<&Ident> = params.iter().map(|p| p.ident).collect();
    let tys: Vec<&Type> = params.iter().map(|p| p.ty).collect();
    // Each check at the span of the type it checks, reported once there.
    let hash_args = params.iter().map(|p| {
        let (ident, ty) = (p.ident, p.ty);
        quote_spanned!(ty.span()=> __args.add::<#ty>(&#ident);)
    });
    let codec = quote_spanned!(ok_ty.span()=> #func::__task_result::<#ok_ty>());
    let awaited = if asyncness.is_some() {
        quote!(__task_body(#(#idents),*).await)
    } else {
        quote!(__task_body(#(#idents),*))
    };
    let result = if fallible {
        quote!(match #awaited {
            ::core::result::Result::Ok(v) => ::core::result::Result::Ok(v),
            ::core::result::Result::Err(e) => ::core::result::Result::Err(::core::convert::Into::into(e)),
        })
    } else {
        quote!(::core::result::Result::Ok(#awaited))
    };
    let mut options = quote!(#func::TaskOptions::new());
    if let Some(retry) = &args.retry {
        options = quote!(#options.retry(#retry));
    }
    if let Some(timeout) = &args.timeout {
        options = quote!(#options.timeout(#timeout));
    }
    if let Some(policy) = &args.cache_policy {
        options = quote!(#options.cache_policy(#policy));
    }
    // A sync body with a timeout runs on tokio's blocking pool, so that the
    // timeout fires on time (as a sync node's does); otherwise it runs inline.
    let attempt = if asyncness.is_none() && args.timeout.is_some() {
        options = quote!(#options.__off_executor());
        quote!(#func::__off_executor(#name, move || #result))
    } else {
        quote!(async move { #result })
    };
    let body = if args.retry.is_some() {
        quote!(#func::__repeat(move || {
            #(let #idents = ::core::clone::Clone::clone(&#idents);)*
            #attempt
        }))
    } else {
        quote!(#func::__once(move || #attempt))
    };
    quote! {
        #(#attrs)*
        #vis fn #ident(#(#idents: #tys),*) -> #func::TaskFuture<#ok_ty> {
            #[allow(clippy::unused_async, clippy::needless_pass_by_value)]
            #asyncness fn __task_body(#(#idents: #tys),*) #output #block
            let mut __args = #func::__ArgsHash::new();
            #(#hash_args)*
            #func::__call(#name, __args.finish(), #codec, #options, #body)
        }
    }
}
