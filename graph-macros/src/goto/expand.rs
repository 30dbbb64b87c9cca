//! The expansion of a valid `#[derive(Goto)]` input.

use super::ast::{Destination, Input};
use crate::crate_path::CratePath;
use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;

pub(crate) fn derive(input: &Input) -> TokenStream {
    let sg = &input.krate;
    let ident = input.ident;
    let arms = input.variants.iter().map(|variant| {
        let variant_ident = variant.ident;
        let destination = destination(sg, &variant.destination);
        quote!(Self::#variant_ident => #destination,)
    });
    // Each destination once, in declaration order.
    let mut seen = Vec::new();
    for variant in &input.variants {
        let key = match &variant.destination {
            Destination::End => None,
            Destination::Node(name) => Some(name.as_str()),
        };
        if !seen.iter().any(|(k, _)| *k == key) {
            seen.push((key, destination(sg, &variant.destination)));
        }
    }
    let targets = seen.iter().map(|(_, d)| d);
    // Each variant that names a node, with the error `graph!` reports when the
    // graph does not declare that node.
    let enum_name = ident.unraw().to_string();
    let routes = input.variants.iter().filter_map(|variant| {
        let Destination::Node(node) = &variant.destination else {
            return None;
        };
        let missing = format!(
            "`{enum_name}::{}` routes to the node `{node}`, which this graph does not declare: \
             declare it (`node {node};`) or route the variant to a declared node \
             (#[goto(name = \"..\")])",
            variant.ident.unraw()
        );
        Some(quote!(#sg::__private::GotoRoute { node: #node, missing: #missing }))
    });
    quote! {
        #[allow(unused_qualifications)]
        const _: () = {
            #[automatically_derived]
            impl #sg::GotoTarget for #ident {
                fn destination(&self) -> #sg::Destination<'_> {
                    match *self {
                        #(#arms)*
                    }
                }

                fn targets() -> #sg::Targets {
                    #sg::Targets::Declared(&[#(#targets),*])
                }

                const ROUTES: ::core::option::Option<&'static [#sg::__private::GotoRoute]> =
                    ::core::option::Option::Some(&[#(#routes),*]);
            }
        };
    }
}

fn destination(sg: &CratePath, destination: &Destination) -> TokenStream {
    match destination {
        Destination::End => quote!(#sg::Destination::End),
        Destination::Node(name) => quote!(#sg::Destination::Node(#name)),
    }
}
