//! What a node's name stands for: the spec struct `#[node]` generates (type
//! namespace) and the marker fn of the same name (value namespace), generic
//! over the node fn's type and const parameters.

use crate::crate_path::CratePath;
use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{GenericParam, Generics};

/// The struct, its marker fn, and the `Clone`/`Copy`/`Debug`/`Default` impls
/// (written out: derives would require every type parameter to implement them).
pub(crate) fn node_value(
    sg: &CratePath,
    cfgs: &[syn::Attribute],
    docs: &[syn::Attribute],
    vis: &syn::Visibility,
    ident: &syn::Ident,
    generics: &Generics,
) -> TokenStream {
    let name = ident.unraw().to_string();
    let marker_doc = format!(
        "The node `{name}` as a value: pass `{name}` to `add_node`, `add_edge` or `send`. \
         You never call this fn; the node's body is [`{name}::call`]."
    );
    let (_, ty_generics, _) = generics.split_for_impl();
    let (decl, field, value) = declaration(generics);
    quote! {
        #(#cfgs)*
        #(#docs)*
        #[allow(non_camel_case_types)]
        #vis struct #ident #decl { #field }

        // A braced struct lives only in the type namespace; the value `#ident` is this
        // fn, which (unlike a unit struct or a const) local bindings may shadow.
        #(#cfgs)*
        #[doc = #marker_doc]
        #[allow(dead_code)]
        #[inline]
        // Without the fn's bounds: a state that lacks what the node needs is reported
        // once, by `Node<S>`, where the node is added to its graph.
        #vis fn #ident #decl (_: #sg::node::NodeMarker) -> #ident #ty_generics {
            #ident { #value }
        }

        #(#cfgs)*
        const _: () = {
            #[automatically_derived]
            impl #decl ::core::clone::Clone for #ident #ty_generics {
                #[inline]
                fn clone(&self) -> Self {
                    *self
                }
            }
            #[automatically_derived]
            impl #decl ::core::marker::Copy for #ident #ty_generics {}
            #[automatically_derived]
            impl #decl ::core::fmt::Debug for #ident #ty_generics {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(#name)
                }
            }
            #[automatically_derived]
            impl #decl ::core::default::Default for #ident #ty_generics {
                #[inline]
                fn default() -> Self {
                    #ident { #value }
                }
            }
        };
    }
}

/// The struct's parameters without bounds (a bound on the struct would have to be
/// repeated at every use), its field, and the field's value. A type parameter must
/// appear in a field; a `PhantomData` of a fn pointer keeps the struct `Send +
/// Sync + Copy` whatever the parameters are.
fn declaration(generics: &Generics) -> (TokenStream, TokenStream, TokenStream) {
    if generics.params.is_empty() {
        return (quote!(), quote!(), quote!());
    }
    let mut types = Vec::new();
    let params = generics.params.iter().map(|param| match param {
        GenericParam::Type(t) => {
            let ident = &t.ident;
            types.push(ident);
            quote!(#ident)
        }
        GenericParam::Const(c) => {
            let (ident, ty) = (&c.ident, &c.ty);
            quote!(const #ident: #ty)
        }
        // `valid::check` rejects lifetime parameters before expansion.
        GenericParam::Lifetime(l) => {
            let lifetime = &l.lifetime;
            quote!(#lifetime)
        }
    });
    let decl = quote!(<#(#params),*>);
    let field = quote!(__types: ::core::marker::PhantomData<fn() -> (#(#types,)*)>);
    let value = quote!(__types: ::core::marker::PhantomData);
    (decl, field, value)
}

/// The fn's parameters with the graph's state `__S` first, for `impl Node<__S>`.
pub(crate) fn with_graph_state(sg: &CratePath, generics: &Generics) -> Generics {
    let mut generics = generics.clone();
    generics
        .params
        .insert(0, syn::parse_quote!(__S: #sg::State));
    // The graph's context type: a node implements `Node<S, C>` for every `C`
    // its context parameter fits.
    generics
        .params
        .insert(1, syn::parse_quote!(__C: ?::core::marker::Sized + 'static));
    generics
}

/// The fn's parameters without its lifetime parameters, which `#[node]` rejects:
/// the dummy items generated after that error must still compile.
pub(crate) fn without_lifetimes(generics: &Generics) -> Generics {
    let mut generics = generics.clone();
    generics.params = std::mem::take(&mut generics.params)
        .into_pairs()
        .filter(|pair| !matches!(pair.value(), GenericParam::Lifetime(_)))
        .collect();
    if let Some(where_clause) = &mut generics.where_clause {
        where_clause.predicates = std::mem::take(&mut where_clause.predicates)
            .into_pairs()
            .filter(|pair| !matches!(pair.value(), syn::WherePredicate::Lifetime(_)))
            .collect();
    }
    generics
}

/// The parameters and where-clause of the `NodeSpec` impl: only what the node's
/// name and input type need (`T: 'static`, the input `Any + Send + Sync`), so that a
/// state lacking one of the fn's bounds fails `Node<S>` alone, whose message names
/// the missing bound. When the input type names an associated type of a parameter
/// (`S::Item`), the fn's own bounds are kept: the type needs them to exist.
pub(crate) fn spec_bounds(generics: &Generics, input: &syn::Type) -> (TokenStream, TokenStream) {
    let (impl_generics, _, where_clause) = generics.split_for_impl();
    if generics.params.is_empty() || projects_a_param(generics, input) {
        return (quote!(#impl_generics), quote!(#where_clause));
    }
    let (decl, _, _) = declaration(generics);
    let statics = generics.params.iter().filter_map(|param| match param {
        GenericParam::Type(t) => {
            let ident = &t.ident;
            Some(quote!(#ident: 'static,))
        }
        _ => None,
    });
    let where_spec = quote! {
        where
            #(#statics)*
            #input: ::core::any::Any + ::core::marker::Send + ::core::marker::Sync,
    };
    (decl, where_spec)
}

/// Whether `ty` mentions `T::..` or `<T as ..>::..` for a type parameter `T`.
fn projects_a_param(generics: &Generics, ty: &syn::Type) -> bool {
    let params: Vec<String> = generics
        .type_params()
        .map(|t| t.ident.to_string())
        .collect();
    let tokens: Vec<proc_macro2::TokenTree> = quote!(#ty).into_iter().collect();
    fn walk(tokens: &[proc_macro2::TokenTree], params: &[String]) -> bool {
        tokens.iter().enumerate().any(|(i, token)| match token {
            proc_macro2::TokenTree::Group(g) => {
                let inner: Vec<_> = g.stream().into_iter().collect();
                walk(&inner, params)
            }
            proc_macro2::TokenTree::Ident(ident) => {
                params.contains(&ident.to_string())
                    && matches!(tokens.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == ':')
            }
            proc_macro2::TokenTree::Punct(p) => p.as_char() == '<' && {
                // `<T as Trait>::X`: a qualified path starting with a parameter.
                matches!(tokens.get(i + 1), Some(proc_macro2::TokenTree::Ident(t)) if params.contains(&t.to_string()))
                    && matches!(tokens.get(i + 2), Some(proc_macro2::TokenTree::Ident(a)) if a == "as")
            },
            proc_macro2::TokenTree::Literal(_) => false,
        })
    }
    walk(&tokens, &params)
}
