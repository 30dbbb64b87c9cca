mod ast;
mod attr;
mod expand;
mod valid;

use crate::crate_path::{CratePath, Needs};
use crate::ctxt::Ctxt;
use crate::fallback;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput};

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let krate = attr::container_attrs(&cx, &input.attrs);
    let krate = CratePath::new(krate, Needs::Core);
    let parsed = ast::Input::from_syn(&cx, input, &krate);
    if let Some(parsed) = &parsed {
        valid::check(&cx, parsed);
    }
    match (cx.check(), parsed) {
        (Ok(()), Some(parsed)) => expand::derive(&parsed),
        (result, _) => {
            let errors = result.err().map(syn::Error::into_compile_error);
            // An enum or union was meant for something else (most likely
            // `#[derive(Goto)]`): nothing uses it as a state, and a stand-in `State`
            // impl would only add errors for the `Clone` and `Default` it lacks.
            if matches!(input.data, Data::Enum(_) | Data::Union(_)) {
                return quote!(#errors);
            }
            let dummy = fallback::state(input, &krate);
            quote!(#errors #dummy)
        }
    }
}
