//! `#[entrypoint]`: an async fn made the one node of a graph, whose task calls
//! are saved and reused.

use crate::crate_path::{CratePath, Needs};
use crate::ctxt::Ctxt;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use syn::{FnArg, ItemFn, Pat, ReturnType, Type};

/// What each parameter of the entrypoint is.
enum Role {
    Input,
    Previous,
    Context,
    Store,
}

/// The parsed signature.
struct Sig<'a> {
    params: Vec<(Role, &'a Ident, &'a Type)>,
    input: Option<&'a Type>,
    output: Type,
    save: Option<Type>,
    fallible: bool,
    is_final: bool,
}

/// Expands `#[entrypoint(args)] item`; also returns the item's name.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> (Ident, TokenStream) {
    let function = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let err = syn::Error::new(Span::call_site(), NOT_A_FN).into_compile_error();
            return (
                Ident::new("entrypoint", Span::call_site()),
                quote!(#err #item),
            );
        }
    };
    let name = function.sig.ident.clone();
    let cx = Ctxt::new();
    let mut krate = None;
    let mut errors = Vec::new();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            crate::crate_path::parse_option(&meta, &mut krate, "entrypoint", &mut errors)
        } else {
            Err(meta.error("unknown #[entrypoint] argument: expected `crate = path`"))
        }
    });
    if let Err(e) = syn::parse::Parser::parse2(parser, args) {
        cx.syn_error(e);
    }
    errors.into_iter().for_each(|e| cx.syn_error(e));
    let sig = parse(&cx, &function);
    let tokens = match cx.check() {
        Ok(()) => expand_entry(&function, &sig, CratePath::new(krate, Needs::Core)),
        Err(err) => {
            let err = err.into_compile_error();
            quote!(#err)
        }
    };
    (name, tokens)
}

const NOT_A_FN: &str = "#[entrypoint] goes on an async fn taking the input (and optionally \
                        `previous: Option<T>`, `ctx: &Context` and `store: &dyn Store`) and \
                        returning the output";

fn parse<'a>(cx: &Ctxt, f: &'a ItemFn) -> Sig<'a> {
    if f.sig.asyncness.is_none() {
        cx.error_spanned_by(
            f.sig.fn_token,
            "an #[entrypoint] must be an `async fn` (its tasks are awaited)",
        );
    }
    if !f.sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &f.sig.generics,
            "an #[entrypoint] cannot be generic: its input, output and saved value are stored \
             by type",
        );
    }
    let mut params = Vec::new();
    let mut input = None;
    // A parameter rejected above may have been meant as the input: then "takes
    // its input as a parameter" would only repeat that error.
    let mut rejected = false;
    for arg in &f.sig.inputs {
        let FnArg::Typed(t) = arg else {
            cx.error_spanned_by(arg, "an #[entrypoint] cannot take `self`");
            rejected = true;
            continue;
        };
        let Pat::Ident(pat) = &*t.pat else {
            cx.error_spanned_by(
                &t.pat,
                "an #[entrypoint] parameter must be a plain name (`x: T`), not a pattern",
            );
            rejected = true;
            continue;
        };
        let role = if pat.ident == "store" {
            Role::Store
        } else if let Type::Reference(_) = &*t.ty {
            Role::Context
        } else if pat.ident == "previous" {
            if super::generic_arg(&t.ty, "Option", 0).is_none() {
                cx.error_spanned_by(
                    &t.ty,
                    "`previous` is what the thread's last run saved, if any: its type must be \
                     `Option<T>`, with `T` the entrypoint's output (or the `save` type of the \
                     `Final` it returns)",
                );
            }
            Role::Previous
        } else if input.is_none() {
            input = Some(&*t.ty);
            Role::Input
        } else {
            cx.error_spanned_by(
                &t.pat,
                "an #[entrypoint] takes one input: bundle several values in a struct or tuple \
                 (the other parameters may be `previous: Option<T>`, `ctx: &Context` and \
                 `store: &dyn Store`)",
            );
            continue;
        };
        params.push((role, &pat.ident, &*t.ty));
    }
    if input.is_none() && !rejected {
        cx.error_spanned_by(
            &f.sig,
            "an #[entrypoint] takes its input as a parameter (`input: T`, a serde type)",
        );
    }
    let ret: Type = match &f.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    };
    let (ok, fallible) = match super::result_ok(&ret) {
        Some(ok) => (ok.clone(), true),
        None => (ret.clone(), false),
    };
    let (output, save, is_final) = match (
        super::generic_arg(&ok, "Final", 0),
        super::generic_arg(&ok, "Final", 1),
    ) {
        (Some(value), Some(save)) => (value.clone(), Some(save.clone()), true),
        _ => (ok, None, false),
    };
    Sig {
        params,
        input,
        output,
        save,
        fallible,
        is_final,
    }
}

fn expand_entry(f: &ItemFn, sig: &Sig<'_>, krate: CratePath) -> TokenStream {
    let func = quote!(#krate::func);
    let vis = &f.vis;
    let ident = &f.sig.ident;
    let name = ident.to_string();
    let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let body_attrs = f.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    let inputs = &f.sig.inputs;
    let ret = &f.sig.output;
    let block = &f.block;
    let input = sig.input;
    let output = &sig.output;
    let save = sig.save.as_ref().unwrap_or(&sig.output);
    let args = sig.params.iter().map(|(role, _, _)| match role {
        Role::Input => quote!(input),
        Role::Previous => quote!(previous),
        Role::Context => quote!(&ctx),
        Role::Store => quote!(store),
    });
    // `store` is made from the context's store by its type (`&dyn Store`,
    // `Option<&dyn Store>`, ...); a required one missing fails the run.
    let store = sig
        .params
        .iter()
        .any(|(r, _, _)| matches!(r, Role::Store))
        .then(|| {
            quote! {
                let store = match #func::__StoreArg::__from(ctx.store().ok()) {
                    ::core::result::Result::Ok(store) => store,
                    ::core::result::Result::Err(e) => {
                        return ::core::result::Result::Err(::core::convert::Into::into(e))
                    }
                };
            }
        });
    let uses_previous = sig
        .params
        .iter()
        .any(|(r, _, _)| matches!(r, Role::Previous));
    let drop_previous = (!uses_previous).then(|| quote!(let _ = previous;));
    let got = quote!(__entry_body(#(#args),*).await);
    let value = if sig.fallible {
        quote!(match #got {
            ::core::result::Result::Ok(v) => v,
            ::core::result::Result::Err(e) => {
                return ::core::result::Result::Err(::core::convert::Into::into(e))
            }
        })
    } else {
        got
    };
    let done = if sig.is_final {
        quote!(#value)
    } else {
        quote!({
            let value = #value;
            #func::Final { save: ::core::clone::Clone::clone(&value), value }
        })
    };
    quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #ident;

        impl #func::EntrypointFn for #ident {
            type Input = #input;
            type Output = #output;
            type Save = #save;

            fn name(&self) -> &'static str {
                #name
            }

            fn call(
                &self,
                input: #input,
                previous: ::core::option::Option<#save>,
                ctx: #krate::Context,
            ) -> #func::EntryFuture<#output, #save> {
                #(#body_attrs)*
                async fn __entry_body(#inputs) #ret #block
                #drop_previous
                ::std::boxed::Box::pin(async move {
                    let _ = &ctx;
                    #store
                    ::core::result::Result::Ok(#done)
                })
            }
        }
    }
}
