//! The model of a `#[derive(Goto)]` input: one destination per variant.

use super::attr::{self, GotoAttr};
use crate::case::to_snake_case;
use crate::crate_path::CratePath;
use crate::ctxt::Ctxt;
use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, Ident};

pub(crate) struct Input<'a> {
    /// Where the expansion finds the facade.
    pub(crate) krate: CratePath,
    pub(crate) ident: &'a Ident,
    pub(crate) variants: Vec<Variant<'a>>,
}

pub(crate) struct Variant<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) attr: Option<GotoAttr>,
    pub(crate) destination: Destination,
}

pub(crate) enum Destination {
    End,
    Node(String),
}

const SHAPE: &str = "#[derive(Goto)] needs an enum of unit variants, one per place to route to \
                     (`enum Route { Tools, #[goto(end)] Done }`)";

impl<'a> Input<'a> {
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput, krate: &CratePath) -> Option<Self> {
        let data = match &input.data {
            Data::Enum(data) => data,
            Data::Struct(data) => {
                cx.error_at(data.struct_token.span, format!("{SHAPE}, not a struct"));
                return None;
            }
            Data::Union(data) => {
                cx.error_at(data.union_token.span, format!("{SHAPE}, not a union"));
                return None;
            }
        };
        let generics = &input.generics;
        if !generics.params.is_empty() || generics.where_clause.is_some() {
            let msg = "#[derive(Goto)] does not support generic enums; a goto enum only names \
                       nodes, remove the generic parameters";
            if generics.params.is_empty() {
                cx.error_spanned_by(&generics.where_clause, msg);
            } else {
                cx.error_spanned_by(&generics.params, msg);
            }
            return None;
        }
        let variants = data
            .variants
            .iter()
            .map(|variant| {
                match &variant.fields {
                    Fields::Unit => {}
                    fields => cx.error_spanned_by(
                        fields,
                        format!(
                            "#[derive(Goto)] variants cannot carry data; make `{}` a unit \
                             variant (to give a node its own input, return a `Send` instead)",
                            variant.ident
                        ),
                    ),
                }
                let attr = attr::variant_attr(cx, &variant.attrs);
                let destination = match &attr {
                    Some(GotoAttr::End) => Destination::End,
                    Some(GotoAttr::Name(name)) => Destination::Node(name.value()),
                    None => Destination::Node(to_snake_case(&variant.ident.unraw().to_string())),
                };
                Variant {
                    ident: &variant.ident,
                    attr,
                    destination,
                }
            })
            .collect();
        Some(Input {
            krate: krate.clone(),
            ident: &input.ident,
            variants,
        })
    }
}
