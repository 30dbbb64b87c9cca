mod ast;
mod attr;
mod expand;
mod valid;
mod value;

pub(crate) use value::{node_value, with_graph_state, without_lifetimes};

use crate::crate_path::{CratePath, Needs};
use crate::ctxt::Ctxt;
use crate::fallback;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use syn::Item;

/// Expands `#[node(args)] item`; also returns the item's name for debug output.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> (Ident, TokenStream) {
    let unnamed = || Ident::new("node", Span::call_site());
    let item = match syn::parse2::<Item>(item.clone()) {
        Ok(item) => item,
        Err(err) => {
            let err = err.into_compile_error();
            return (unnamed(), quote!(#err #item));
        }
    };
    let Item::Fn(function) = item else {
        let err = syn::Error::new_spanned(item_head(&item), NOT_A_FN).into_compile_error();
        return (unnamed(), quote!(#err #item));
    };

    // A method: the generated unit struct could not live in the `impl` block, so
    // report the receiver and keep the method as it is.
    if let Some(receiver) = function.sig.receiver() {
        let err = syn::Error::new_spanned(receiver, SELF_PARAM).into_compile_error();
        return (function.sig.ident.clone(), quote!(#err #function));
    }

    let cx = Ctxt::new();
    let args = attr::parse(&cx, args);
    let krate = CratePath::new(args.krate, Needs::Core);
    let parsed = ast::NodeFn::from_syn(&cx, &function, args.state.as_ref(), &krate);
    valid::check(&cx, &parsed);
    let name = function.sig.ident.clone();
    let tokens = match cx.check() {
        Ok(()) => expand::node(&parsed, &krate),
        Err(err) => {
            let err = err.into_compile_error();
            let dummy = fallback::node(
                &krate,
                &parsed.cfgs,
                &parsed.docs,
                &function.vis,
                &function.sig.ident,
                &without_lifetimes(&function.sig.generics),
                parsed.input.as_ref().map(|i| i.ty),
            );
            quote!(#err #dummy)
        }
    };
    (name, tokens)
}

const SELF_PARAM: &str = "#[node] cannot be used on a method; write a free fn that takes the \
                          state, e.g. `#[node] fn agent(state: &MyState)`";

const NOT_A_FN: &str = "#[node] belongs on a fn: write `#[node] async fn name(state: &MyState) \
                        -> MyStateUpdate { .. }`";

/// The tokens of `item` up to its name (`pub struct Agent`), so that the error does
/// not underline a whole struct or module.
fn item_head(item: &Item) -> TokenStream {
    match item {
        Item::Struct(i) => {
            let (vis, kw, ident) = (&i.vis, &i.struct_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Enum(i) => {
            let (vis, kw, ident) = (&i.vis, &i.enum_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Union(i) => {
            let (vis, kw, ident) = (&i.vis, &i.union_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Mod(i) => {
            let (vis, kw, ident) = (&i.vis, &i.mod_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Const(i) => {
            let (vis, kw, ident) = (&i.vis, &i.const_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Static(i) => {
            let (vis, kw, ident) = (&i.vis, &i.static_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Trait(i) => {
            let (vis, kw, ident) = (&i.vis, &i.trait_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Type(i) => {
            let (vis, kw, ident) = (&i.vis, &i.type_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Impl(i) => {
            let (kw, ty) = (&i.impl_token, &i.self_ty);
            quote!(#kw #ty)
        }
        other => quote!(#other),
    }
}
