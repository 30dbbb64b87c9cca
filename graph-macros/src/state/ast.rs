//! The model of a `#[derive(State)]` input: one entry per field, borrowing syn so
//! every error can point at the user's tokens.

use super::attr::{self, ChannelAttr, ChannelKind, FieldAttrs, ReducerFn};
use crate::crate_path::CratePath;
use crate::ctxt::Ctxt;
use syn::ext::IdentExt;
use syn::visit_mut::VisitMut;
use syn::{
    Data, DeriveInput, Fields, GenericArgument, GenericParam, Generics, Ident, PathArguments, Type,
    Visibility,
};

pub(crate) struct Input<'a> {
    /// Where the expansion finds the facade.
    pub(crate) krate: CratePath,
    pub(crate) ident: &'a Ident,
    pub(crate) vis: &'a Visibility,
    pub(crate) generics: &'a Generics,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    /// The field name as a string (`r#type` is `type`).
    pub(crate) name: String,
    /// The field's type, with `Self` replaced by the struct's name (the type is also
    /// written in the update and channel structs, where `Self` means another type).
    pub(crate) ty: Type,
    /// Whether the type names a parameter of the struct: its channel bounds then go
    /// into where-clauses and are checked for each instantiation.
    pub(crate) generic: bool,
    pub(crate) attrs: FieldAttrs<'a>,
    pub(crate) kind: FieldKind,
}

pub(crate) enum FieldKind {
    /// Filled in by the engine before each superstep; not a channel.
    Managed(Managed),
    /// A channel; `index` is the field's position in `State::FIELDS`.
    Channel { index: usize, kind: Channel },
}

#[derive(Clone, Copy)]
pub(crate) enum Managed {
    RemainingSteps,
    IsLastStep,
}

pub(crate) enum Channel {
    Kind(ChannelKind),
    Reducer(ReducerFn),
}

impl<'a> Input<'a> {
    /// The model, or `None` (with an error in `cx`) when the input is not a struct
    /// with named fields, or has lifetime parameters.
    pub(crate) fn from_syn(cx: &Ctxt, input: &'a DeriveInput, krate: &CratePath) -> Option<Self> {
        let fields = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(fields) => fields,
                Fields::Unnamed(fields) => {
                    cx.error_spanned_by(
                        fields,
                        "#[derive(State)] needs a struct with named fields; each field becomes a \
                         channel named after it, so write `struct Name { field: Type, .. }`",
                    );
                    return None;
                }
                Fields::Unit => {
                    cx.error_spanned_by(
                        &input.ident,
                        "#[derive(State)] needs a struct with named fields; add the fields of \
                         the state in braces: `struct Name { field: Type, .. }`",
                    );
                    return None;
                }
            },
            Data::Enum(data) => {
                cx.error_at(
                    data.enum_token.span,
                    "#[derive(State)] needs a struct with named fields, not an enum; to route \
                     between nodes, use #[derive(Goto)] on the enum instead",
                );
                return None;
            }
            Data::Union(data) => {
                cx.error_at(
                    data.union_token.span,
                    "#[derive(State)] needs a struct with named fields, not a union",
                );
                return None;
            }
        };
        let generics = &input.generics;
        let lifetimes: Vec<_> = generics.lifetimes().collect();
        for lifetime in &lifetimes {
            cx.error_spanned_by(
                &lifetime.lifetime,
                "#[derive(State)] does not support lifetime parameters: the engine owns the \
                 state across await points and checkpoints, so it must be 'static; store owned \
                 data (`String`, `Arc<T>`) instead of references",
            );
        }
        if !lifetimes.is_empty() {
            return None;
        }
        let params: Vec<&Ident> = generics
            .params
            .iter()
            .filter_map(|p| match p {
                GenericParam::Type(t) => Some(&t.ident),
                GenericParam::Const(c) => Some(&c.ident),
                GenericParam::Lifetime(_) => None,
            })
            .collect();

        let mut next_index = 0;
        let fields = fields
            .named
            .iter()
            .filter_map(|field| {
                let ident = field.ident.as_ref()?;
                let attrs = attr::field_attrs(cx, &field.attrs);
                let kind = match managed_kind(&field.ty) {
                    Some(managed) => FieldKind::Managed(managed),
                    None => {
                        let kind = match &attrs.channel {
                            Some((_, ChannelAttr::Kind(kind))) => Channel::Kind(*kind),
                            Some((_, ChannelAttr::Reducer(f))) => Channel::Reducer(f.clone()),
                            None => Channel::Kind(ChannelKind::LastValue),
                        };
                        next_index += 1;
                        FieldKind::Channel {
                            index: next_index - 1,
                            kind,
                        }
                    }
                };
                let ty = replace_self(&field.ty, &input.ident, generics);
                Some(Field {
                    ident,
                    name: ident.unraw().to_string(),
                    generic: mentions_any(&ty, &params),
                    ty,
                    attrs,
                    kind,
                })
            })
            .collect();
        Some(Input {
            krate: krate.clone(),
            ident: &input.ident,
            vis: &input.vis,
            generics,
            fields,
        })
    }

    pub(crate) fn channels(&self) -> impl Iterator<Item = (&Field<'a>, usize, &Channel)> {
        self.fields.iter().filter_map(|f| match &f.kind {
            FieldKind::Channel { index, kind } => Some((f, *index, kind)),
            FieldKind::Managed(_) => None,
        })
    }

    pub(crate) fn managed(&self) -> impl Iterator<Item = (&Field<'a>, Managed)> {
        self.fields.iter().filter_map(|f| match &f.kind {
            FieldKind::Managed(m) => Some((f, *m)),
            FieldKind::Channel { .. } => None,
        })
    }
}

/// A managed value is recognised by the last segment of its type's path, so that
/// `RemainingSteps`, `stategraph::RemainingSteps` and a re-export all work.
fn managed_kind(ty: &Type) -> Option<Managed> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    if !last.arguments.is_none() {
        return None;
    }
    if last.ident == "RemainingSteps" {
        Some(Managed::RemainingSteps)
    } else if last.ident == "IsLastStep" {
        Some(Managed::IsLastStep)
    } else {
        None
    }
}

/// `T` when `ty` is spelled `Vec<T>` (any path ending in `Vec`, like `std::vec::Vec`).
pub(crate) fn vec_elem(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    if last.ident != "Vec" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    let elem = types.next()?;
    // Not `Vec<T, A>` with a custom allocator: the channel holds a `Vec<T>`.
    match (types.next(), args.args.len()) {
        (None, 1) => Some(elem),
        _ => None,
    }
}

/// Whether `ty` names one of `params` (a type or const parameter). A macro in type
/// position could expand to anything, so it counts as generic. Scanning tokens may
/// also match a path segment that only shares the name, which merely adds a
/// where-clause that holds.
fn mentions_any(ty: &Type, params: &[&Ident]) -> bool {
    fn scan(tokens: proc_macro2::TokenStream, params: &[&Ident]) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => params.iter().any(|p| ident == **p),
            proc_macro2::TokenTree::Group(group) => scan(group.stream(), params),
            _ => false,
        })
    }
    !params.is_empty() && (matches!(ty, Type::Macro(_)) || scan(quote::quote!(#ty), params))
}

/// `Self` in a field type, spelled out as the struct's type (with its parameters):
/// the type is also written in the update and channel structs, where `Self` means
/// another type.
fn replace_self(ty: &Type, ident: &Ident, generics: &Generics) -> Type {
    struct ReplaceSelf<'a> {
        ident: &'a Ident,
        args: Option<syn::AngleBracketedGenericArguments>,
    }
    impl VisitMut for ReplaceSelf<'_> {
        fn visit_path_mut(&mut self, path: &mut syn::Path) {
            if let Some(first) = path.segments.first_mut() {
                if first.ident == "Self" {
                    first.ident = syn::Ident::new(&self.ident.to_string(), first.ident.span());
                    if let (Some(args), PathArguments::None) = (&self.args, &first.arguments) {
                        first.arguments = PathArguments::AngleBracketed(args.clone());
                    }
                }
            }
            syn::visit_mut::visit_path_mut(self, path);
        }
        // Nested items have their own `Self`.
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    let args = (!generics.params.is_empty()).then(|| syn::AngleBracketedGenericArguments {
        colon2_token: None,
        lt_token: Default::default(),
        args: generics
            .params
            .iter()
            .map(|p| {
                let ident = match p {
                    GenericParam::Type(t) => &t.ident,
                    GenericParam::Const(c) => &c.ident,
                    GenericParam::Lifetime(l) => {
                        return GenericArgument::Lifetime(l.lifetime.clone())
                    }
                };
                GenericArgument::Type(Type::Path(syn::TypePath {
                    qself: None,
                    path: ident.clone().into(),
                }))
            })
            .collect(),
        gt_token: Default::default(),
    });
    let mut ty = ty.clone();
    ReplaceSelf { ident, args }.visit_type_mut(&mut ty);
    ty
}
