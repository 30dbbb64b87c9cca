//! The expansion of a valid `#[derive(State)]` input.

use super::ast::{vec_elem, Channel, Field, Input, Managed};
use super::attr::{ChannelKind, ReducerFn};
use crate::crate_path::CratePath;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

/// One channel field, with the types its expansion needs.
struct ChannelField<'a> {
    /// Where the facade is.
    sg: &'a CratePath,
    field: &'a Field<'a>,
    index: Literal,
    /// The channel type, e.g. `LastValue<T>`.
    channel: TokenStream,
    /// The type of one write (`T`, `ReducerWrite<T>`, `TopicWrite<Elem>`).
    write: TokenStream,
    /// `Elem` of a topic field.
    elem: Option<TokenStream>,
    /// The channel's constructor.
    init: TokenStream,
    /// The accessors of the channel in the channel set (see `accessors`).
    get_mut: syn::Ident,
    get_ref: syn::Ident,
    untracked: bool,
}

pub(crate) fn derive(input: &Input) -> TokenStream {
    let sg = &input.krate;
    let ident = input.ident;
    let update = format_ident!("{}Update", ident.unraw(), span = ident.span());
    let channels = format_ident!("__{}Channels", ident.unraw());
    let fields: Vec<ChannelField> = input
        .channels()
        .map(|(field, index, kind)| channel_field(&input.krate, field, index, kind))
        .collect();

    let g = Generic::new(input, &channels, &fields);
    let ty_generics = &g.ty_generics;
    let state_where = &g.state_where;

    let update_struct = update_struct(input, &g, &update, &fields);
    let builder = builder(input, &g, &update, &fields);
    let debug = debug_impl(&g, &update, &fields);
    let channel_set = channel_set(&g, &channels, &fields);
    let state_impl = state_impl(input, &g, &update, &channels, &fields);
    let update_impl = update_impl(input, &g, &update, &fields);
    let impl_generics = &g.impl_generics;
    let has_impls = fields.iter().map(|f| has_impls(input, &g, f));
    let checks = checks(input, &fields);

    quote! {
        #update_struct

        #[doc(hidden)]
        // Channel types spell field types inside `fn(T, T) -> T` and `impl Channel<..>`:
        // complexity the user did not write and cannot factor out.
        #[allow(unused_qualifications, clippy::type_complexity)]
        const _: () = {
            #checks
            #channel_set
            #state_impl
            #update_impl
            #debug
            #builder
            #(#has_impls)*

            #[automatically_derived]
            impl #impl_generics #sg::IntoNodeOutput<#ident #ty_generics>
                for #update #ty_generics #state_where
            {
                fn into_output(
                    self,
                ) -> ::core::result::Result<
                    #sg::NodeOutput<#ident #ty_generics>,
                    #sg::NodeError,
                >
                {
                    ::core::result::Result::Ok(#sg::NodeOutput::new().with_update(self))
                }
            }

            #[automatically_derived]
            impl #impl_generics #sg::IntoNodeOutput<#ident #ty_generics>
                for ::std::vec::Vec<#update #ty_generics> #state_where
            {
                fn into_output(
                    self,
                ) -> ::core::result::Result<
                    #sg::NodeOutput<#ident #ty_generics>,
                    #sg::NodeError,
                >
                {
                    ::core::result::Result::Ok(::core::iter::Iterator::fold(
                        ::core::iter::IntoIterator::into_iter(self),
                        #sg::NodeOutput::new(),
                        #sg::NodeOutput::with_update,
                    ))
                }
            }

            #[automatically_derived]
            impl #impl_generics ::core::convert::From<#update #ty_generics>
                for #sg::GraphInput<#ident #ty_generics> #state_where
            {
                fn from(update: #update #ty_generics) -> Self {
                    #sg::GraphInput::update(update)
                }
            }
        };
    }
}

/// The struct's parameters as each generated item spells them, and the where-clauses
/// of the generated impls. A field whose type names a parameter cannot be checked
/// where it is declared, so its channel's requirements become where-clauses, checked
/// for each instantiation; concrete fields keep the checks at their declaration.
/// For a struct without parameters every clause is empty.
struct Generic {
    /// Where the facade is.
    sg: CratePath,
    /// `<M: Bound, const N: usize>` as declared, for the generated structs.
    def_generics: TokenStream,
    /// The struct's own where-clause, for the generated structs and inherent impls.
    def_where: TokenStream,
    impl_generics: TokenStream,
    ty_generics: TokenStream,
    /// `Debug` of the update: each generic field's value is `Debug`.
    debug_where: TokenStream,
    /// The channel set's inherent impl and the `StateUpdate` impl.
    field_where: TokenStream,
    /// The `State` impl and the impls that need one.
    state_where: TokenStream,
    is_generic: bool,
}

impl Generic {
    fn new(input: &Input, channels: &syn::Ident, fields: &[ChannelField]) -> Self {
        let sg = &input.krate;
        let generics = input.generics;
        let ident = input.ident;
        let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
        let is_generic = !generics.params.is_empty();
        let user: Vec<TokenStream> = where_clause
            .map(|w| w.predicates.iter().map(|p| quote!(#p)).collect())
            .unwrap_or_default();
        let mut field_preds = Vec::new();
        let mut debug_preds = Vec::new();
        for f in fields {
            let (ty, channel, write) = (&f.field.ty, &f.channel, &f.write);
            if !f.field.generic {
                // Asserted once by `checks`; here with a lifetime binder, so that an
                // unmet requirement makes the impls unusable instead of reporting it
                // again at each of them (see graph-core's `__private::ValueOf`).
                let write_of = if f.untracked {
                    quote!(UntrackedWriteOf)
                } else {
                    quote!(WriteOf)
                };
                field_preds.push(quote! {
                    for<'__sg> #channel: #sg::__private::ChannelOf<'__sg, #ty, #write>
                });
                field_preds.push(quote!(for<'__sg> #ty: #sg::__private::ValueOf<'__sg>));
                field_preds.push(quote!(for<'__sg> #write: #sg::__private::#write_of<'__sg>));
                continue;
            }
            field_preds.push(quote! {
                #channel: #sg::channels::Channel<Value = #ty, Write = #write>
            });
            field_preds.push(quote!(#ty: ::core::clone::Clone));
            let serde = (!f.untracked).then(|| {
                quote! {
                    + #sg::__private::serde::Serialize
                    + #sg::__private::serde::de::DeserializeOwned
                }
            });
            field_preds.push(quote! {
                #write: ::core::clone::Clone
                    + ::core::marker::Send
                    + ::core::marker::Sync
                    + 'static
                    #serde
            });
            // The `Debug` impl prints the written values (`T`, or a topic's items).
            debug_preds.push(quote!(#ty: ::core::fmt::Debug));
            if let Some(elem) = &f.elem {
                debug_preds.push(quote!(#elem: ::core::fmt::Debug));
            }
        }
        let clause = |preds: &[&[TokenStream]]| {
            let preds: Vec<&TokenStream> = preds.iter().flat_map(|p| p.iter()).collect();
            if preds.is_empty() {
                quote!()
            } else {
                quote!(where #(#preds,)*)
            }
        };
        let state_preds = if is_generic {
            vec![
                quote! {
                    #ident #ty_generics: ::core::clone::Clone
                        + ::core::default::Default
                        + ::core::marker::Send
                        + ::core::marker::Sync
                        + 'static
                },
                quote! {
                    #channels #ty_generics: ::core::marker::Send + ::core::marker::Sync + 'static
                },
            ]
        } else {
            // Asserted once by `checks`, as the field requirements above.
            vec![quote!(for<'__sg> #ident: #sg::__private::StateOf<'__sg>)]
        };
        let params = &generics.params;
        Generic {
            sg: input.krate.clone(),
            def_generics: if is_generic {
                quote!(<#params>)
            } else {
                quote!()
            },
            def_where: quote!(#where_clause),
            impl_generics: quote!(#impl_generics),
            ty_generics: quote!(#ty_generics),
            debug_where: clause(&[&user, &debug_preds]),
            field_where: clause(&[&user, &field_preds]),
            state_where: clause(&[&user, &state_preds, &field_preds]),
            is_generic,
        }
    }
}

fn channel_field<'a>(
    sg: &'a CratePath,
    field: &'a Field<'a>,
    index: usize,
    kind: &Channel,
) -> ChannelField<'a> {
    let ty = &field.ty;
    let span = ty.span();
    let sgs = sg.spanned(span);
    let key = &field.name;
    let mut elem = None;
    let (channel, write, init) = match kind {
        Channel::Reducer(ReducerFn::Path(path)) => {
            // A non-capturing closure coerces to the channel's fallible `fn(T, T) ->
            // Result<T, ReducerError>`; calling the reducer through `call_reducer`
            // takes `fn(T, T) -> T` and `fn(T, T) -> Result<T, E>` alike, and reports
            // a wrong signature with the `Reducer` trait's message, at the user's path.
            let sgp = sg.spanned(path.span());
            let call = quote_spanned! {path.span()=>
                #sgp::__private::call_reducer(#path, __current, __update)
            };
            (
                quote_spanned!(span=> #sgs::channels::BinaryOperatorAggregate<#ty>),
                quote_spanned!(span=> #sgs::channels::ReducerWrite<#ty>),
                quote! {
                    #sg::channels::BinaryOperatorAggregate::fallible(
                        #key,
                        |__current, __update| #call,
                    )
                },
            )
        }
        Channel::Reducer(ReducerFn::Closure(closure)) => {
            // The user's closure is the channel's `fn(T, T) -> T`, with `T` the field's
            // type spelled out: its parameters are typed from it, and a closure that
            // does not fit is reported at the closure.
            let op = quote_spanned! {closure.span()=>
                let __reducer: fn(#ty, #ty) -> #ty = #closure;
            };
            (
                quote_spanned!(span=> #sgs::channels::BinaryOperatorAggregate<#ty>),
                quote_spanned!(span=> #sgs::channels::ReducerWrite<#ty>),
                quote! {
                    #sg::channels::BinaryOperatorAggregate::new(#key, {
                        #op
                        __reducer
                    })
                },
            )
        }
        Channel::Kind(kind) => {
            let plain = |name: &str| {
                let name = format_ident!("{}", name, span = span);
                (
                    quote_spanned!(span=> #sgs::channels::#name<#ty>),
                    quote_spanned!(span=> #ty),
                    quote!(#sg::channels::#name::new(#key)),
                )
            };
            match *kind {
                ChannelKind::LastValue => plain("LastValue"),
                ChannelKind::LastValueAfterFinish => plain("LastValueAfterFinish"),
                ChannelKind::AnyValue => plain("AnyValue"),
                ChannelKind::Ephemeral { guard: true } => plain("EphemeralValue"),
                ChannelKind::Ephemeral { guard: false } => {
                    let (channel, write, _) = plain("EphemeralValue");
                    let init = quote!(#sg::channels::EphemeralValue::with_guard(#key, false));
                    (channel, write, init)
                }
                ChannelKind::Untracked { guard: true } => plain("UntrackedValue"),
                ChannelKind::Untracked { guard: false } => {
                    let (channel, write, _) = plain("UntrackedValue");
                    let init = quote!(#sg::channels::UntrackedValue::with_guard(#key, false));
                    (channel, write, init)
                }
                ChannelKind::Topic { accumulate } => {
                    // `valid` rejects other spellings than `Vec<T>`.
                    let item = match vec_elem(ty) {
                        Some(elem) => quote!(#elem),
                        None => {
                            quote_spanned!(span=> <#ty as #sgs::__private::ListOf>::Elem)
                        }
                    };
                    let channel = quote_spanned!(span=> #sgs::channels::Topic<#item>);
                    let write = quote_spanned!(span=> #sgs::channels::TopicWrite<#item>);
                    let init = if accumulate {
                        quote!(#sg::channels::Topic::with_accumulate(#key, true))
                    } else {
                        quote!(#sg::channels::Topic::new(#key))
                    };
                    elem = Some(item);
                    (channel, write, init)
                }
            }
        }
    };
    ChannelField {
        sg,
        field,
        index: Literal::usize_unsuffixed(index),
        channel,
        write,
        elem,
        init,
        get_mut: format_ident!("__channel{}", index),
        get_ref: format_ident!("__channel{}_ref", index),
        untracked: matches!(kind, Channel::Kind(ChannelKind::Untracked { .. })),
    }
}

fn update_struct(
    input: &Input,
    g: &Generic,
    update: &syn::Ident,
    fields: &[ChannelField],
) -> TokenStream {
    let vis = input.vis;
    let (def_generics, def_where) = (&g.def_generics, &g.def_where);
    let doc = format!(
        " A partial update of [`{}`]: one optional write per field. Start one with \
         [`{}::update()`] and chain the field setters.",
        input.ident, input.ident
    );
    let members = fields.iter().map(|f| {
        let name = f.field.ident;
        let write = &f.write;
        let doc = format!(" The write to `{}`, if any.", f.field.name);
        quote! {
            #[doc = #doc]
            pub #name: ::core::option::Option<#write>
        }
    });
    if !g.is_generic {
        return quote! {
            #[doc = #doc]
            #[derive(::core::clone::Clone, ::core::default::Default)]
            #vis struct #update {
                #(#members,)*
            }
        };
    }
    // `derive(Clone, Default)` would ask `M: Clone + Default` of each parameter;
    // an update is empty by default whatever `M` is, and clones when its writes do.
    let (impl_generics, ty_generics, field_where) =
        (&g.impl_generics, &g.ty_generics, &g.field_where);
    let names: Vec<_> = fields.iter().map(|f| f.field.ident).collect();
    quote! {
        #[doc = #doc]
        #vis struct #update #def_generics #def_where {
            #(#members,)*
        }

        #[automatically_derived]
        impl #impl_generics ::core::default::Default for #update #ty_generics #def_where {
            fn default() -> Self {
                #update {
                    #(#names: ::core::option::Option::None,)*
                }
            }
        }

        #[automatically_derived]
        impl #impl_generics ::core::clone::Clone for #update #ty_generics #field_where {
            fn clone(&self) -> Self {
                #update {
                    #(#names: ::core::clone::Clone::clone(&self.#names),)*
                }
            }
        }
    }
}

fn builder(
    input: &Input,
    g: &Generic,
    update: &syn::Ident,
    fields: &[ChannelField],
) -> TokenStream {
    let ident = input.ident;
    let (impl_generics, ty_generics, def_where) = (&g.impl_generics, &g.ty_generics, &g.def_where);
    let doc = format!(" An empty update of `{ident}`; chain the field setters to fill it in.");
    let setters = fields.iter().map(|f| setters(f));
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #def_where {
            #[doc = #doc]
            #[must_use]
            pub fn update() -> #update #ty_generics {
                ::core::default::Default::default()
            }
        }

        #[automatically_derived]
        impl #impl_generics #update #ty_generics #def_where {
            #(#setters)*
        }
    }
}

fn setters(f: &ChannelField) -> TokenStream {
    let sg = f.sg;
    let name = f.field.ident;
    let key = &f.field.name;
    let ty = &f.field.ty;
    match (&f.field.kind, &f.elem) {
        (
            super::ast::FieldKind::Channel {
                kind: Channel::Reducer(reducer),
                ..
            },
            _,
        ) => {
            let reducer = reducer.describe();
            let overwrite = format_ident!("{}_overwrite", name.unraw(), span = name.span());
            let doc = format!(" Writes `value` to `{key}`, folded into it with {reducer}.");
            let doc_overwrite = format!(" Replaces `{key}` with `value`, bypassing {reducer}.");
            quote! {
                #[doc = #doc]
                #[must_use]
                pub fn #name(mut self, value: #ty) -> Self {
                    self.#name = ::core::option::Option::Some(
                        #sg::channels::ReducerWrite::Value(value),
                    );
                    self
                }

                #[doc = #doc_overwrite]
                #[must_use]
                pub fn #overwrite(mut self, value: #ty) -> Self {
                    self.#name = ::core::option::Option::Some(
                        #sg::channels::ReducerWrite::Overwrite(value),
                    );
                    self
                }
            }
        }
        (_, Some(elem)) => {
            let item = format_ident!("{}_item", name.unraw(), span = name.span());
            let doc =
                format!(" Publishes `items` to `{key}` (a `Vec` of items, or a `TopicWrite`).");
            let doc_item = format!(" Publishes one item to `{key}`.");
            quote! {
                #[doc = #doc]
                #[must_use]
                pub fn #name(
                    mut self,
                    items: impl ::core::convert::Into<#sg::channels::TopicWrite<#elem>>,
                ) -> Self {
                    self.#name = ::core::option::Option::Some(items.into());
                    self
                }

                #[doc = #doc_item]
                #[must_use]
                pub fn #item(mut self, item: #elem) -> Self {
                    self.#name = ::core::option::Option::Some(
                        #sg::channels::TopicWrite::One(item),
                    );
                    self
                }
            }
        }
        _ => {
            let doc = format!(" Writes `value` to `{key}`.");
            quote! {
                #[doc = #doc]
                #[must_use]
                pub fn #name(mut self, value: #ty) -> Self {
                    self.#name = ::core::option::Option::Some(value);
                    self
                }
            }
        }
    }
}

/// Prints only the written fields. Field types need not implement `Debug` (the
/// autoref dispatch of `__private::DebugField` prints `..` for those); reducer
/// values and topic lists print without their `Value` / `Many` wrapper.
fn debug_impl(g: &Generic, update: &syn::Ident, fields: &[ChannelField]) -> TokenStream {
    let sg = &g.sg;
    let (impl_generics, ty_generics, debug_where) =
        (&g.impl_generics, &g.ty_generics, &g.debug_where);
    let name = update.to_string();
    let fmt_field = |value: TokenStream| {
        quote! {
            &#sg::__private::FmtWith(
                |__f: &mut ::core::fmt::Formatter<'_>| {
                    (&#sg::__private::DebugField(#value)).fmt_field(__f)
                }
            )
        }
    };
    let wrapped = |wrapper: &str, value: TokenStream| {
        let inner = fmt_field(value);
        quote! {
            &#sg::__private::FmtWith(
                |__f: &mut ::core::fmt::Formatter<'_>| {
                    __f.debug_tuple(#wrapper).field(#inner).finish()
                }
            )
        }
    };
    let entries = fields.iter().map(|f| {
        let member = f.field.ident;
        let key = &f.field.name;
        let value = match (&f.field.kind, &f.elem) {
            (
                super::ast::FieldKind::Channel {
                    kind: Channel::Reducer(_),
                    ..
                },
                _,
            ) => {
                let value = fmt_field(quote!(__v));
                let overwrite = wrapped("Overwrite", quote!(__v));
                quote! {
                    match __write {
                        #sg::channels::ReducerWrite::Value(__v) => __s.field(#key, #value),
                        #sg::channels::ReducerWrite::Overwrite(__v) => {
                            __s.field(#key, #overwrite)
                        }
                    }
                }
            }
            (_, Some(_)) => {
                let many = fmt_field(quote!(__v));
                let one = wrapped("One", quote!(__v));
                quote! {
                    match __write {
                        #sg::channels::TopicWrite::Many(__v) => __s.field(#key, #many),
                        #sg::channels::TopicWrite::One(__v) => __s.field(#key, #one),
                    }
                }
            }
            _ => {
                let value = fmt_field(quote!(__write));
                quote!(__s.field(#key, #value))
            }
        };
        quote! {
            if let ::core::option::Option::Some(__write) = &self.#member {
                #value;
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #impl_generics ::core::fmt::Debug for #update #ty_generics #debug_where {
            fn fmt(&self, __formatter: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                #[allow(unused_imports)]
                use #sg::__private::{ViaDebug as _, ViaOpaque as _};
                let mut __s = __formatter.debug_struct(#name);
                #(#entries)*
                __s.finish()
            }
        }
    }
}

/// The channel set, and one accessor pair per channel returning it as an opaque
/// `impl Channel`. Every use of a channel goes through its accessors, so a field type
/// the channel cannot hold (not `Serialize`, not `Default`...) is reported once per
/// field, at the field's type, instead of once per method of the `State` impl.
fn channel_set(g: &Generic, channels: &syn::Ident, fields: &[ChannelField]) -> TokenStream {
    let sg = &g.sg;
    let (impl_generics, ty_generics, field_where) =
        (&g.impl_generics, &g.ty_generics, &g.field_where);
    let (def_generics, def_where) = (&g.def_generics, &g.def_where);
    let names: Vec<_> = fields.iter().map(|f| f.field.ident).collect();
    let members = fields.iter().map(|f| {
        let name = f.field.ident;
        let channel = &f.channel;
        quote!(#name: #channel)
    });
    let accessors = fields.iter().map(|f| {
        let name = f.field.ident;
        let ty = &f.field.ty;
        let write = &f.write;
        let (get_mut, get_ref) = (&f.get_mut, &f.get_ref);
        let span = ty.span();
        let sgs = sg.spanned(span);
        let bound = quote_spanned! {span=>
            impl #sgs::channels::Channel<Value = #ty, Write = #write>
        };
        let (ret_mut, ret_ref) = (
            quote_spanned!(span=> &mut #bound),
            quote_spanned!(span=> &#bound),
        );
        let (body_mut, body_ref) = (
            quote_spanned!(span=> &mut self.#name),
            quote_spanned!(span=> &self.#name),
        );
        quote! {
            #[inline(always)]
            fn #get_mut(&mut self) -> #ret_mut {
                #body_mut
            }

            #[inline(always)]
            fn #get_ref(&self) -> #ret_ref {
                #body_ref
            }
        }
    });
    // Only emitted when used, so that a state without channels has no dead code.
    let restore_helper = (!fields.is_empty()).then(|| {
        quote! {
            fn __restore_channel<'de, C, D>(
                channel: &mut C,
                value: &mut C::Value,
                saved: ::core::option::Option<D>,
            ) -> ::core::result::Result<(), D::Error>
            where
                C: #sg::channels::Channel,
                D: #sg::__private::serde::Deserializer<'de>,
            {
                let restored = match saved {
                    ::core::option::Option::Some(saved) => ::core::option::Option::Some(
                        <C::Restored as #sg::__private::serde::Deserialize>::deserialize(
                            saved,
                        )?,
                    ),
                    ::core::option::Option::None => ::core::option::Option::None,
                };
                #sg::channels::Channel::restore(channel, value, restored);
                ::core::result::Result::Ok(())
            }
        }
    });
    // Every channel clones whatever its value type, so the set does too (a derive
    // would ask `Clone` of each parameter).
    quote! {
        #[doc(hidden)]
        pub struct #channels #def_generics #def_where {
            #(#members,)*
        }

        impl #impl_generics ::core::clone::Clone for #channels #ty_generics #def_where {
            fn clone(&self) -> Self {
                #channels {
                    #(#names: ::core::clone::Clone::clone(&self.#names),)*
                }
            }
        }

        impl #impl_generics #channels #ty_generics #field_where {
            #(#accessors)*
        }

        #restore_helper
    }
}

fn state_impl(
    input: &Input,
    g: &Generic,
    update: &syn::Ident,
    channels: &syn::Ident,
    fields: &[ChannelField],
) -> TokenStream {
    let sg = &input.krate;
    let ident = input.ident;
    let (impl_generics, ty_generics, state_where) =
        (&g.impl_generics, &g.ty_generics, &g.state_where);
    let names = fields.iter().map(|f| &f.field.name);
    let has_managed = input.managed().next().is_some();
    let inits = fields.iter().map(|f| {
        let name = f.field.ident;
        let init = &f.init;
        quote!(#name: #init)
    });

    let apply = fields.iter().map(|f| {
        let (name, i, get) = (f.field.ident, &f.index, &f.get_mut);
        quote! {
            let __n = __updates.iter().filter(|__u| __u.#name.is_some()).count();
            if __n > 0
                && #sg::__private::update_channel(
                    __channels.#get(),
                    &mut self.#name,
                    __n,
                    __updates.iter_mut().filter_map(|__u| __u.#name.take()),
                )?
            {
                __changed.insert(#i);
            }
        }
    });
    let notify = fields.iter().map(|f| {
        let (name, i, get) = (f.field.ident, &f.index, &f.get_mut);
        quote! {
            if !__skip.contains(#i)
                && #sg::__private::notify_channel(__channels.#get(), &mut self.#name)?
            {
                __changed.insert(#i);
            }
        }
    });
    let finish = fields.iter().map(|f| {
        let (name, i, get) = (f.field.ident, &f.index, &f.get_mut);
        quote! {
            if #sg::channels::Channel::finish(__channels.#get(), &mut self.#name) {
                __changed.insert(#i);
            }
        }
    });
    let available = fields.iter().map(|f| {
        let (name, i, get) = (f.field.ident, &f.index, &f.get_ref);
        quote! {
            #i => #sg::channels::Channel::is_available(__channels.#get(), &self.#name),
        }
    });
    let managed = input.managed().map(|(f, m)| {
        let name = f.ident;
        match m {
            Managed::RemainingSteps => quote! {
                self.#name = #sg::RemainingSteps(__managed.remaining_steps);
            },
            Managed::IsLastStep => quote! {
                self.#name = #sg::IsLastStep(__managed.is_last_step);
            },
        }
    });
    let set_managed = has_managed.then(|| {
        quote! {
            fn set_managed(&mut self, __managed: &#sg::state::ManagedValues) {
                #(#managed)*
            }
        }
    });
    let saved = fields.iter().map(|f| {
        let (name, i, get) = (f.field.ident, &f.index, &f.get_ref);
        let key = &f.field.name;
        quote! {
            if __fields.is_none_or(|__set| __set.contains(#i)) {
                if let ::core::option::Option::Some(__saved) =
                    #sg::channels::Channel::checkpoint(__channels.#get(), &self.#name)
                {
                    __visitor.visit(#i, #key, &__saved);
                }
            }
        }
    });
    let restore = fields.iter().map(|f| {
        let (name, i, get) = (f.field.ident, &f.index, &f.get_mut);
        quote! {
            #i => __restore_channel(__channels.#get(), &mut self.#name, __saved),
        }
    });
    let private: Vec<&ChannelField> = fields
        .iter()
        .filter(|f| f.field.attrs.private.is_some())
        .collect();
    let private_items = (!private.is_empty()).then(|| {
        let keys = private.iter().map(|f| &f.field.name);
        let names: Vec<_> = private.iter().map(|f| f.field.ident).collect();
        quote! {
            const PRIVATE_FIELDS: &'static [&'static str] = &[#(#keys),*];

            fn without_private(__update: &mut Self::Update) {
                #(__update.#names = ::core::option::Option::None;)*
            }

            fn clear_private(&mut self) {
                // Swapped, not moved out: a state may implement `Drop`.
                let mut __default = <Self as ::core::default::Default>::default();
                #(::core::mem::swap(&mut self.#names, &mut __default.#names);)*
            }
        }
    });
    let no_field = format!("`{ident}` has no channel with index {{}}");
    let whole = fields.iter().map(|f| {
        let name = f.field.ident;
        let write = write_of(f, quote!(::core::clone::Clone::clone(&self.#name)));
        quote!(#name: ::core::option::Option::Some(#write))
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics #sg::State for #ident #ty_generics #state_where {
            type Update = #update #ty_generics;
            type Channels = #channels #ty_generics;

            const FIELDS: &'static [&'static str] = &[#(#names),*];
            const HAS_MANAGED: bool = #has_managed;
            #private_items

            fn new_channels() -> Self::Channels {
                #channels {
                    #(#inits,)*
                }
            }

            fn apply_updates(
                &mut self,
                __channels: &mut Self::Channels,
                __updates: &mut [Self::Update],
                __changed: &mut #sg::state::FieldSet,
            ) -> ::core::result::Result<(), #sg::InvalidUpdateError> {
                #({ #apply })*
                ::core::result::Result::Ok(())
            }

            fn notify_new_step(
                &mut self,
                __channels: &mut Self::Channels,
                __skip: &#sg::state::FieldSet,
                __changed: &mut #sg::state::FieldSet,
            ) -> ::core::result::Result<(), #sg::InvalidUpdateError> {
                #(#notify)*
                ::core::result::Result::Ok(())
            }

            fn finish(
                &mut self,
                __channels: &mut Self::Channels,
                __changed: &mut #sg::state::FieldSet,
            ) {
                #(#finish)*
            }

            fn is_available(&self, __channels: &Self::Channels, __field: usize) -> bool {
                match __field {
                    #(#available)*
                    _ => false,
                }
            }

            #set_managed

            fn to_update(&self) -> Self::Update {
                #update {
                    #(#whole,)*
                }
            }

            fn visit_saved<__V: #sg::state::FieldVisitor>(
                &self,
                __channels: &Self::Channels,
                __fields: ::core::option::Option<&#sg::state::FieldSet>,
                __visitor: &mut __V,
            ) {
                #(#saved)*
            }

            fn restore_field<'__de, __D: #sg::__private::serde::Deserializer<'__de>>(
                &mut self,
                __channels: &mut Self::Channels,
                __field: usize,
                __saved: ::core::option::Option<__D>,
            ) -> ::core::result::Result<(), __D::Error> {
                match __field {
                    #(#restore)*
                    _ => ::core::result::Result::Err(
                        <__D::Error as #sg::__private::serde::de::Error>::custom(
                            ::core::format_args!(#no_field, __field),
                        ),
                    ),
                }
            }
        }
    }
}

/// The requirements of the struct and of each field of a concrete type, asserted
/// once each, at the struct's name and at the field's type; the generated impls
/// repeat them as where-clauses that do not report them again (`Generic::new`).
/// Fields whose type names a parameter are checked for each instantiation instead.
fn checks(input: &Input, fields: &[ChannelField]) -> TokenStream {
    let sg = &input.krate;
    let ident = input.ident;
    let state = input.generics.params.is_empty().then(|| {
        let sgs = sg.spanned(ident.span());
        quote_spanned!(ident.span()=> #sgs::__private::assert_state::<#ident>();)
    });
    let fields: Vec<TokenStream> = fields
        .iter()
        .filter(|f| !f.field.generic)
        .map(|f| {
            let (ty, channel, write) = (&f.field.ty, &f.channel, &f.write);
            let span = ty.span();
            let sgs = sg.spanned(span);
            let assert = if f.untracked {
                quote_spanned!(span=> assert_untracked_field)
            } else {
                quote_spanned!(span=> assert_field)
            };
            quote_spanned! {span=>
                #sgs::__private::#assert::<#channel, #ty, #write>();
            }
        })
        .collect();
    if state.is_none() && fields.is_empty() {
        return quote!();
    }
    quote! {
        #[allow(dead_code)]
        fn __graph_check_state() {
            #state
            #(#fields)*
        }
    }
}

/// The write that sets field `f` to `value`: a reducer field folds it in, a topic
/// publishes its items.
fn write_of(f: &ChannelField, value: TokenStream) -> TokenStream {
    let sg = f.sg;
    match (&f.field.kind, &f.elem) {
        (
            super::ast::FieldKind::Channel {
                kind: Channel::Reducer(_),
                ..
            },
            _,
        ) => quote!(#sg::channels::ReducerWrite::Value(#value)),
        (_, Some(_)) => quote!(::core::convert::Into::into(#value)),
        _ => value,
    }
}

/// `Has<Marker>` for each `#[field(Marker)]` of the field. The value goes through
/// `FieldOfType`, spanned at the marker, so that a marker declared with another type
/// is one error there.
fn has_impls(input: &Input, g: &Generic, f: &ChannelField) -> TokenStream {
    let sg = &input.krate;
    let ident = input.ident;
    let (impl_generics, ty_generics, state_where) =
        (&g.impl_generics, &g.ty_generics, &g.state_where);
    let (name, ty) = (f.field.ident, &f.field.ty);
    let impls = f.field.attrs.markers.iter().map(|(_, marker)| {
        let span = marker.span();
        let sgs = sg.spanned(span);
        let cast = quote_spanned! {span=>
            <#marker as #sgs::__private::FieldOfType<#ty>>
        };
        let write = write_of(f, quote!(#cast::cast(__value)));
        quote! {
            #[automatically_derived]
            impl #impl_generics #sg::Has<#marker> for #ident #ty_generics #state_where {
                #[inline]
                fn field_ref(&self) -> &<#marker as #sg::Field>::Value {
                    #cast::cast_ref(&self.#name)
                }

                fn write_field(
                    __update: &mut Self::Update,
                    __value: <#marker as #sg::Field>::Value,
                ) {
                    __update.#name = ::core::option::Option::Some(#write);
                }
            }
        }
    });
    quote!(#(#impls)*)
}

fn update_impl(
    input: &Input,
    g: &Generic,
    update: &syn::Ident,
    fields: &[ChannelField],
) -> TokenStream {
    let sg = &input.krate;
    let ident = input.ident;
    let (impl_generics, ty_generics, field_where) =
        (&g.impl_generics, &g.ty_generics, &g.field_where);
    let names: Vec<_> = fields.iter().map(|f| f.field.ident).collect();
    let indices: Vec<_> = fields.iter().map(|f| &f.index).collect();
    // Untracked values are never persisted, so their types need not be serialisable;
    // their writes are left out of `visit_writes` and cannot be read back.
    let visits = fields.iter().filter(|f| !f.untracked).map(|f| {
        let (name, i, key) = (f.field.ident, &f.index, &f.field.name);
        let span = f.field.ty.span();
        let visit = quote_spanned!(span=> __visitor.visit(#i, #key, __write));
        quote! {
            if let ::core::option::Option::Some(__write) = &self.#name {
                #visit;
            }
        }
    });
    let reads = fields.iter().map(|f| {
        let (name, i, key) = (f.field.ident, &f.index, &f.field.name);
        if f.untracked {
            let msg = format!(
                "the write to `{key}` of `{ident}` cannot be restored: the field is \
                 #[channel(untracked)], its values are never serialised"
            );
            quote! {
                #i => ::core::result::Result::Err(
                    <__D::Error as #sg::__private::serde::de::Error>::custom(#msg),
                ),
            }
        } else {
            let write = &f.write;
            let span = f.field.ty.span();
            let sgs = sg.spanned(span);
            let de = quote_spanned! {span=>
                <#write as #sgs::__private::serde::Deserialize>::deserialize(__write)
            };
            quote! {
                #i => {
                    let mut __update = <Self as ::core::default::Default>::default();
                    __update.#name = ::core::option::Option::Some(#de?);
                    ::core::result::Result::Ok(__update)
                }
            }
        }
    });
    let no_field = format!("`{ident}` has no channel with index {{}}");
    quote! {
        #[automatically_derived]
        impl #impl_generics #sg::StateUpdate for #update #ty_generics #field_where {
            fn is_empty(&self) -> bool {
                true #(&& self.#names.is_none())*
            }

            fn written_fields(&self, __into: &mut #sg::state::FieldSet) {
                #(
                    if self.#names.is_some() {
                        __into.insert(#indices);
                    }
                )*
            }

            fn visit_writes<__V: #sg::state::FieldVisitor>(&self, __visitor: &mut __V) {
                #(#visits)*
            }

            fn from_field_write<'__de, __D: #sg::__private::serde::Deserializer<'__de>>(
                __field: usize,
                __write: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                match __field {
                    #(#reads)*
                    _ => ::core::result::Result::Err(
                        <__D::Error as #sg::__private::serde::de::Error>::custom(
                            ::core::format_args!(#no_field, __field),
                        ),
                    ),
                }
            }

            fn merge(&mut self, __other: Self) {
                #(
                    if __other.#names.is_some() {
                        self.#names = __other.#names;
                    }
                )*
            }
        }
    }
}
