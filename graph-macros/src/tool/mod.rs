mod ast;
mod attr;
mod expand;
mod valid;

use crate::crate_path::{CratePath, Needs};
use crate::ctxt::Ctxt;
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use syn::Item;

/// Expands `#[tool(args)] item`; also returns the item's name for debug output.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> (Ident, TokenStream) {
    let unnamed = || Ident::new("tool", Span::call_site());
    let item = match syn::parse2::<Item>(item.clone()) {
        Ok(item) => item,
        Err(err) => {
            let err = err.into_compile_error();
            return (unnamed(), quote!(#err #item));
        }
    };
    let Item::Fn(mut function) = item else {
        let err = syn::Error::new_spanned(head(&item), NOT_A_FN).into_compile_error();
        return (unnamed(), quote!(#err #item));
    };
    let name = function.sig.ident.clone();
    if let Some(receiver) = function.sig.receiver() {
        let err = syn::Error::new_spanned(receiver, SELF_PARAM).into_compile_error();
        return (name, quote!(#err #function));
    }

    let cx = Ctxt::new();
    let args = attr::parse(&cx, args);
    let krate = CratePath::new(args.krate.clone(), Needs::Agents);
    // Doc comments on parameters describe the arguments; they are taken off here,
    // where rustc would reject them.
    let param_docs = ast::take_param_docs(&mut function);
    let parsed = ast::ToolFn::from_syn(&cx, &function, &args, param_docs);
    valid::check(&cx, &parsed);
    let tokens = match cx.check() {
        Ok(()) => expand::tool(&parsed, &krate),
        Err(err) => {
            let err = err.into_compile_error();
            let dummy = expand::fallback(&function, &krate);
            quote!(#err #dummy)
        }
    };
    (name, tokens)
}

const SELF_PARAM: &str = "#[tool] cannot be used on a method; write a free fn whose parameters \
                          are the tool's arguments, e.g. `#[tool] fn search(query: String)`";

const NOT_A_FN: &str = "#[tool] belongs on a fn: write `/// What it does\n#[tool] async fn \
                        name(arg: Type) -> Result<String, Error> { .. }`";

/// The tokens of `item` up to its name, so that the error does not underline the
/// whole item.
fn head(item: &Item) -> TokenStream {
    match item {
        Item::Struct(i) => {
            let (vis, kw, ident) = (&i.vis, &i.struct_token, &i.ident);
            quote!(#vis #kw #ident)
        }
        Item::Enum(i) => {
            let (vis, kw, ident) = (&i.vis, &i.enum_token, &i.ident);
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
        Item::Impl(i) => {
            let (kw, ty) = (&i.impl_token, &i.self_ty);
            quote!(#kw #ty)
        }
        other => quote!(#other),
    }
}
