//! What a macro emits next to its errors: stand-in impls with `unreachable!()`
//! bodies, so that the rest of the crate still type-checks and the user sees only
//! the errors about the macro input, not a cascade of "`Agent` is not a graph
//! state" at every use (thiserror's `fallback.rs`, clap's `dummies.rs`).

use crate::crate_path::CratePath;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::BTreeMap;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields};

/// Stand-ins for everything `#[derive(State)]` generates: the `State` impl, the
/// update type, a builder that accepts any value for any field name, and `Has` for
/// each field marker.
pub(crate) fn state(input: &DeriveInput, sg: &CratePath) -> TokenStream {
    let ident = &input.ident;
    let vis = &input.vis;
    let update = format_ident!("{}Update", ident.unraw(), span = ident.span());
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let bounds = bounds_of_generic(
        input,
        quote!(
            ::core::clone::Clone
                + ::core::default::Default
                + ::core::marker::Send
                + ::core::marker::Sync
                + 'static
        ),
    );

    // Each field's setter takes the field's type, so that `.log(vec![])` still infers;
    // the `_overwrite` / `_item` setters of reducer and topic fields take anything, as
    // do all setters of a generic struct.
    let mut setters: BTreeMap<String, (syn::Ident, TokenStream)> = BTreeMap::new();
    let mut extra = Vec::new();
    let mut markers = Vec::new();
    if let Data::Struct(data) = &input.data {
        if let Fields::Named(fields) = &data.fields {
            for field in &fields.named {
                let Some(ident) = &field.ident else { continue };
                // A marker that does not parse was reported by the derive already.
                markers.extend(
                    field
                        .attrs
                        .iter()
                        .filter(|attr| attr.path().is_ident("field"))
                        .filter_map(|attr| attr.parse_args::<syn::Type>().into_iter().next()),
                );
                // The stand-in update type has no parameters, so the field's type may
                // name ones it does not declare.
                let ty = if input.generics.params.is_empty() {
                    let ty = &field.ty;
                    quote!(#ty)
                } else {
                    quote!(impl ::core::marker::Sized)
                };
                setters.insert(ident.unraw().to_string(), (ident.clone(), ty));
                extra.push(format_ident!("{}_overwrite", ident.unraw()));
                extra.push(format_ident!("{}_item", ident.unraw()));
            }
        }
    }
    for ident in extra {
        setters
            .entry(ident.to_string())
            .or_insert_with(|| (ident, quote!(impl ::core::marker::Sized)));
    }
    let setters = setters.values().map(|(name, ty)| {
        quote! {
            pub fn #name(self, _: #ty) -> Self {
                self
            }
        }
    });
    let into_output =
        quote!(::core::result::Result<#sg::NodeOutput<#ident #ty_generics>, #sg::NodeError>);
    let output_bounds = if input.generics.params.is_empty() {
        quote!()
    } else {
        quote!(where #ident #ty_generics: #sg::State)
    };

    let state_bound = bounds_of_generic(input, quote!(#sg::State));
    // One impl per marker, even where the input gave one twice.
    let markers: BTreeMap<String, syn::Type> = markers
        .into_iter()
        .map(|marker| (quote!(#marker).to_string(), marker))
        .collect();
    let has_impls = markers.values().map(|marker| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #sg::Has<#marker> for #ident #ty_generics #where_clause #state_bound {
                fn field_ref(&self) -> &<#marker as #sg::Field>::Value {
                    ::core::unreachable!()
                }
                fn write_field(_: &mut #update, _: <#marker as #sg::Field>::Value) {
                    ::core::unreachable!()
                }
            }
        }
    });

    quote! {
        #[derive(::core::clone::Clone, ::core::default::Default, ::core::fmt::Debug)]
        #vis struct #update {}

        #[allow(unused_qualifications, unreachable_code)]
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #sg::State for #ident #ty_generics #where_clause #bounds {
                type Update = #update;
                type Channels = ();
                const FIELDS: &'static [&'static str] = &[];
                fn new_channels() -> Self::Channels {}
                fn apply_updates(
                    &mut self,
                    _: &mut (),
                    _: &mut [#update],
                    _: &mut #sg::state::FieldSet,
                ) -> ::core::result::Result<(), #sg::InvalidUpdateError> {
                    ::core::unreachable!()
                }
                fn notify_new_step(
                    &mut self,
                    _: &mut (),
                    _: &#sg::state::FieldSet,
                    _: &mut #sg::state::FieldSet,
                ) -> ::core::result::Result<(), #sg::InvalidUpdateError> {
                    ::core::unreachable!()
                }
                fn finish(&mut self, _: &mut (), _: &mut #sg::state::FieldSet) {
                    ::core::unreachable!()
                }
                fn is_available(&self, _: &(), _: usize) -> bool {
                    ::core::unreachable!()
                }
                fn to_update(&self) -> #update {
                    ::core::unreachable!()
                }
                fn visit_saved<__V: #sg::state::FieldVisitor>(
                    &self,
                    _: &(),
                    _: ::core::option::Option<&#sg::state::FieldSet>,
                    _: &mut __V,
                ) {
                    ::core::unreachable!()
                }
                fn restore_field<'__de, __D: #sg::__private::serde::Deserializer<'__de>>(
                    &mut self,
                    _: &mut (),
                    _: usize,
                    _: ::core::option::Option<__D>,
                ) -> ::core::result::Result<(), __D::Error> {
                    ::core::unreachable!()
                }
            }

            #[automatically_derived]
            impl #sg::StateUpdate for #update {
                fn is_empty(&self) -> bool {
                    ::core::unreachable!()
                }
                fn written_fields(&self, _: &mut #sg::state::FieldSet) {
                    ::core::unreachable!()
                }
                fn visit_writes<__V: #sg::state::FieldVisitor>(&self, _: &mut __V) {
                    ::core::unreachable!()
                }
                fn from_field_write<'__de, __D: #sg::__private::serde::Deserializer<'__de>>(
                    _: usize,
                    _: __D,
                ) -> ::core::result::Result<Self, __D::Error> {
                    ::core::unreachable!()
                }
                fn merge(&mut self, _: Self) {
                    ::core::unreachable!()
                }
            }

            #[automatically_derived]
            impl #impl_generics #ident #ty_generics #where_clause {
                pub fn update() -> #update {
                    ::core::default::Default::default()
                }
            }

            #[automatically_derived]
            impl #update {
                #(#setters)*
            }

            #(#has_impls)*

            #[automatically_derived]
            impl #impl_generics #sg::IntoNodeOutput<#ident #ty_generics> for #update #output_bounds {
                fn into_output(self) -> #into_output {
                    ::core::unreachable!()
                }
            }

            #[automatically_derived]
            impl #impl_generics #sg::IntoNodeOutput<#ident #ty_generics> for ::std::vec::Vec<#update> #output_bounds {
                fn into_output(self) -> #into_output {
                    ::core::unreachable!()
                }
            }
        };
    }
}

/// A stand-in `GotoTarget` impl.
pub(crate) fn goto(input: &DeriveInput, sg: &CratePath) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let bounds = bounds_of_generic(
        input,
        quote!(::core::marker::Send + ::core::marker::Sync + 'static),
    );
    quote! {
        #[allow(unused_qualifications, unreachable_code)]
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #sg::GotoTarget for #ident #ty_generics #where_clause #bounds {
                fn destination(&self) -> #sg::Destination<'_> {
                    ::core::unreachable!()
                }
                fn targets() -> #sg::Targets {
                    ::core::unreachable!()
                }
            }
        };
    }
}

/// A `where Self: bounds` predicate for a generic input, so that the stand-in impl
/// holds whatever the parameters are (a non-generic input needs none: its impl is
/// checked against the type as written).
fn bounds_of_generic(input: &DeriveInput, bounds: TokenStream) -> TokenStream {
    if input.generics.params.is_empty() {
        return quote!();
    }
    let ident = &input.ident;
    let (_, ty_generics, where_clause) = input.generics.split_for_impl();
    let joiner = if where_clause.is_some_and(|w| !w.predicates.empty_or_trailing()) {
        quote!(,)
    } else if where_clause.is_some() {
        quote!()
    } else {
        quote!(where)
    };
    quote!(#joiner #ident #ty_generics: #bounds)
}

/// Stand-ins for a `#[node]` fn that has errors: the unit struct and its `NodeSpec`
/// and `Node` impls, so that `add_node(agent)` and `send(agent, ..)` still check.
pub(crate) fn node(
    sg: &CratePath,
    cfgs: &[syn::Attribute],
    docs: &[syn::Attribute],
    vis: &syn::Visibility,
    ident: &syn::Ident,
    generics: &syn::Generics,
    input: Option<&syn::Type>,
) -> TokenStream {
    let name = ident.unraw().to_string();
    let input = match input {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    };
    let value = crate::node::node_value(sg, cfgs, docs, vis, ident, generics);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let node_generics = crate::node::with_graph_state(sg, generics);
    let (node_impl_generics, _, _) = node_generics.split_for_impl();
    quote! {
        #value

        #(#cfgs)*
        #[allow(unused_qualifications, unreachable_code)]
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #sg::NodeSpec for #ident #ty_generics #where_clause {
                type Input = #input;
                fn name(&self) -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }
            }

            #[automatically_derived]
            impl #node_impl_generics #sg::Node<__S, __C> for #ident #ty_generics #where_clause {
                fn run(
                    &self,
                    _: ::std::sync::Arc<#input>,
                    _: #sg::Context<__C>,
                ) -> #sg::NodeFuture<__S> {
                    ::core::unreachable!()
                }
            }
        };
    }
}
