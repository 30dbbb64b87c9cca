//! The expansion of a valid `#[derive(Goto)]` input.

use super::ast::{Destination, Input};
use proc_macro2::TokenStream;
use quote::quote;

pub(crate) fn derive(input: &Input) -> TokenStream {
    let ident = input.ident;
    let arms = input.variants.iter().map(|variant| {
        let variant_ident = variant.ident;
        let destination = destination(&variant.destination);
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
            seen.push((key, destination(&variant.destination)));
        }
    }
    let targets = seen.iter().map(|(_, d)| d);
    quote! {
        #[allow(unused_qualifications)]
        const _: () = {
            #[automatically_derived]
            impl ::stategraph::GotoTarget for #ident {
                fn destination(&self) -> ::stategraph::Destination<'_> {
                    match *self {
                        #(#arms)*
                    }
                }

                fn targets() -> ::stategraph::Targets {
                    ::stategraph::Targets::Declared(&[#(#targets),*])
                }
            }
        };
    }
}

fn destination(destination: &Destination) -> TokenStream {
    match destination {
        Destination::End => quote!(::stategraph::Destination::End),
        Destination::Node(name) => quote!(::stategraph::Destination::Node(#name)),
    }
}
