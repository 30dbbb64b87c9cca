//! `#[derive(Schema)]`: a struct of some of a state's fields, as the graph's input
//! (`InputSchema`) and output (`OutputSchema`) schema, LangGraph's
//! `input_schema` / `output_schema`, and as a node's input (`View`).
//!
//! Each field is checked against the state by the code that reads and writes it,
//! spanned at the field: `state.field` is cloned into the struct (a missing field is
//! rustc's "no field", a different type its "mismatched types") and
//! `State::update().field(value)` writes it.

use crate::crate_path::{self, CratePath, Needs};
use crate::ctxt::Ctxt;
use crate::symbol::{CRATE, SCHEMA, STATE};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, Meta, Type};

const USAGE: &str = "name the state whose fields this struct holds: #[schema(state = MyState)]";

pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let (state, krate) = container_attrs(&cx, input);
    let fields = named_fields(&cx, input);
    match (cx.check(), state, fields) {
        (Ok(()), Some(state), Some(fields)) => {
            let krate = CratePath::new(krate, Needs::Core);
            expand(input, &krate, &state, fields)
        }
        (result, _, _) => result
            .err()
            .map(syn::Error::into_compile_error)
            .unwrap_or_default(),
    }
}

/// `#[schema(state = Type, crate = path)]`: the state, required, and where the
/// facade is.
fn container_attrs(cx: &Ctxt, input: &DeriveInput) -> (Option<Type>, Option<syn::Path>) {
    let mut state: Option<Type> = None;
    let mut krate = None;
    let mut seen = false;
    // An attribute with an error (no options, a bad `state`) is reported as such,
    // not also as lacking `state`.
    let mut reported = false;
    for attr in input.attrs.iter().filter(|a| a.path() == SCHEMA) {
        seen = true;
        if !matches!(&attr.meta, Meta::List(list) if !list.tokens.is_empty()) {
            cx.error_spanned_by(attr, format!("expected options; {USAGE}"));
            reported = true;
            continue;
        }
        let mut errors = Vec::new();
        let result = attr.parse_nested_meta(|meta| {
            if meta.path == STATE {
                let Ok(value) = meta.value() else {
                    errors.push(meta.error(format!("expected a value; {USAGE}")));
                    return Ok(());
                };
                let ty: Type = value.parse().map_err(|err| {
                    syn::Error::new(err.span(), format!("expected a type; {USAGE}"))
                })?;
                if state.is_some() {
                    errors.push(meta.error("duplicate `state` option of #[schema]; remove one"));
                } else {
                    state = Some(ty);
                }
                Ok(())
            } else if meta.path == CRATE {
                crate_path::parse_option(&meta, &mut krate, "schema", &mut errors)
            } else {
                Err(meta.error(format!(
                    "unknown #[schema] option; the options are `state` ({USAGE}) and `crate` \
                     (the path of a renamed stategraph dependency, as in crate = sg)"
                )))
            }
        });
        for err in errors.into_iter().chain(result.err()) {
            reported = true;
            cx.syn_error(err);
        }
    }
    if state.is_none() && !seen {
        cx.error_spanned_by(
            &input.ident,
            format!("#[derive(Schema)] needs to know which state it is a schema of; {USAGE}"),
        );
    } else if state.is_none() && !reported {
        // An attribute without `state` (and maybe with errors of its own).
        if let Some(attr) = input.attrs.iter().find(|a| a.path() == SCHEMA) {
            cx.error_spanned_by(attr, format!("missing `state`; {USAGE}"));
        }
    }
    (state, krate)
}

/// `#[schema]` belongs on the struct; on a field it would be silently ignored.
fn reject_field_attrs(cx: &Ctxt, fields: &syn::FieldsNamed) {
    for attr in fields.named.iter().flat_map(|f| &f.attrs) {
        if attr.path() == SCHEMA {
            cx.error_spanned_by(
                attr,
                "not expected here; #[schema(state = ..)] belongs on the struct, and a field \
                 of the schema takes no options (it has the name and type of the state's field)",
            );
        }
    }
}

fn named_fields<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<&'a syn::FieldsNamed> {
    const NAMED: &str = "#[derive(Schema)] needs a struct with named fields, each the name of a \
                         field of the state: `struct Name { field: Type, .. }`";
    match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => {
                reject_field_attrs(cx, fields);
                Some(fields)
            }
            Fields::Unnamed(fields) => {
                cx.error_spanned_by(fields, NAMED);
                None
            }
            Fields::Unit => {
                cx.error_spanned_by(&input.ident, NAMED);
                None
            }
        },
        Data::Enum(data) => {
            cx.error_at(data.enum_token.span, NAMED);
            None
        }
        Data::Union(data) => {
            cx.error_at(data.union_token.span, NAMED);
            None
        }
    }
}

fn expand(
    input: &DeriveInput,
    sg: &CratePath,
    state: &Type,
    fields: &syn::FieldsNamed,
) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    // No `State: State` clause: for a generic state, a clause would stand in for
    // the state's impl and hide its `Update` type. The struct's own clauses must
    // make it a state (rustc says so at the derive otherwise).

    let named: Vec<&syn::Ident> = fields
        .named
        .iter()
        .filter_map(|f| f.ident.as_ref())
        .collect();
    // Spanned at the field, so that a field the state lacks, or holds with another
    // type, is reported there.
    let reads = fields.named.iter().filter_map(|f| {
        let name = f.ident.as_ref()?;
        Some(quote_spanned! {f.span()=>
            // Method syntax: the clone has the state's field type, so a mismatch
            // reads "expected `SchemaType`, found `StateType`".
            #name: __state.#name.clone()
        })
    });
    let writes = fields.named.iter().filter_map(|f| {
        let name = f.ident.as_ref()?;
        Some(quote_spanned! {f.span()=> .#name(#name) })
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics #sg::OutputSchema<#state> for #ident #ty_generics #where_clause {
            fn from_state(__state: &#state) -> Self {
                #ident { #(#reads,)* }
            }
        }

        #[automatically_derived]
        impl #impl_generics #sg::View for #ident #ty_generics #where_clause {
            type State = #state;

            #[inline]
            fn project(__state: &#state) -> Self {
                <Self as #sg::OutputSchema<#state>>::from_state(__state)
            }
        }

        #[automatically_derived]
        impl #impl_generics #sg::InputSchema<#state> for #ident #ty_generics #where_clause {
            fn into_update(self) -> <#state as #sg::State>::Update {
                let #ident { #(#named,)* } = self;
                <#state>::update() #(#writes)*
            }
        }

        #[automatically_derived]
        impl #impl_generics ::core::convert::From<#ident #ty_generics>
            for #sg::GraphInput<#state> #where_clause
        {
            fn from(input: #ident #ty_generics) -> Self {
                #sg::GraphInput::update(#sg::InputSchema::<#state>::into_update(input))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    /// The state and the number of errors of the container attributes.
    fn parse(input: DeriveInput) -> (Option<String>, usize) {
        let cx = Ctxt::new();
        let (state, _) = container_attrs(&cx, &input);
        let errors = cx.check().map_or_else(|e| e.into_iter().count(), |()| 0);
        (state.map(|ty| quote!(#ty).to_string()), errors)
    }

    #[test]
    fn reads_the_state_and_reports_each_mistake_once() {
        let cases: Vec<(DeriveInput, Option<&str>, usize)> = vec![
            (
                parse_quote!(
                    #[schema(state = Chat<M>, crate = sg)]
                    struct A {
                        x: u8,
                    }
                ),
                Some("Chat < M >"),
                0,
            ),
            (
                parse_quote!(
                    struct A {
                        x: u8,
                    }
                ),
                None,
                1,
            ),
            (
                parse_quote!(
                    #[schema]
                    struct A {
                        x: u8,
                    }
                ),
                None,
                1,
            ),
            (
                parse_quote!(
                    #[schema(state)]
                    struct A {
                        x: u8,
                    }
                ),
                None,
                1,
            ),
            (
                parse_quote!(
                    #[schema(state = 1)]
                    struct A {
                        x: u8,
                    }
                ),
                None,
                1,
            ),
            (
                parse_quote!(
                    #[schema(crate = sg)]
                    struct A {
                        x: u8,
                    }
                ),
                None,
                1,
            ),
            (
                parse_quote!(
                    #[schema(state = S, state = T)]
                    struct A {
                        x: u8,
                    }
                ),
                Some("S"),
                1,
            ),
        ];
        for (input, state, errors) in cases {
            let shown = quote!(#input).to_string();
            assert_eq!(parse(input), (state.map(str::to_owned), errors), "{shown}");
        }
    }

    #[test]
    fn an_invalid_input_expands_to_its_errors_only() {
        let input: DeriveInput = parse_quote!(
            #[schema(state = S)]
            enum E {
                A,
            }
        );
        let tokens = derive(&input).to_string();
        assert!(tokens.contains("compile_error"), "{tokens}");
        assert!(!tokens.contains("OutputSchema"), "{tokens}");
    }

    #[test]
    fn a_valid_input_implements_both_schemas_and_graph_input() {
        let input: DeriveInput = parse_quote!(
            #[schema(state = S, crate = ::stategraph)]
            struct A {
                x: u8,
            }
        );
        let tokens = derive(&input).to_string();
        for expected in [
            "OutputSchema < S >",
            "InputSchema < S >",
            "GraphInput < S >",
            "View for A",
        ] {
            assert!(tokens.contains(expected), "{expected} in {tokens}");
        }
        assert!(!tokens.contains("compile_error"), "{tokens}");
    }
}
