//! The expansion of a valid `#[tool]` fn, and the stand-in emitted after errors.

use super::ast::ToolFn;
use crate::crate_path::CratePath;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::ItemFn;

pub(crate) fn tool(tool: &ToolFn, sg: &CratePath) -> TokenStream {
    let item = tool.item;
    let sig = &item.sig;
    let vis = &item.vis;
    let ident = &sig.ident;
    let fn_name = ident.unraw().to_string();
    let (docs, cfgs, attrs) = (&tool.docs, &tool.cfgs, &tool.other_attrs);
    let name = &tool.name;
    let description = tool.description.as_deref().unwrap_or_default();
    let Some(ret) = tool.ret else {
        // `from_syn` reports a missing return type, so this is not reached.
        return quote!();
    };
    let marker_doc = format!(
        "The tool `{name}` as a value: pass `{fn_name}` where a tool is expected. You never \
         call this fn; the tool's body is [`{fn_name}::call`]."
    );
    let call_doc = format!(
        " Runs the body of the tool `{name}` directly, outside an agent (e.g. in a unit test)."
    );
    let asyncness = &sig.asyncness;
    let constness = &sig.constness;
    let abi = &sig.abi;
    let params = &sig.inputs;
    let body = &item.block;
    let await_call = asyncness.map(|_| quote!(.await));

    let args_struct = format_ident!("__ToolArgs_{}", ident.unraw());
    let fields = tool.params.iter().map(|p| {
        let (field, ty, docs) = (p.ident, p.ty, &p.docs);
        quote_spanned!(ty.span()=> #(#docs)* pub #field: #ty)
    });
    let names: Vec<_> = tool.params.iter().map(|p| p.ident).collect();
    let private = quote!(#sg::__private);
    let serde_path = format!("{private}").replace(' ', "") + "::serde";
    let schemars_path = format!("{private}").replace(' ', "") + "::schemars";
    // Spanned at the return type: an unsupported one is reported there, once.
    let sgs = sg.spanned(ret.span());
    let result_bound = quote_spanned!(ret.span()=> #ret: #sgs::__private::IntoToolResult);
    let result = quote!(<#ret as #sg::__private::IntoToolResult>);

    quote! {
        #(#cfgs)*
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::fmt::Debug,
            ::core::default::Default,
        )]
        #vis struct #ident {}

        #(#cfgs)*
        #[doc = #marker_doc]
        #[allow(dead_code)]
        #[inline]
        #vis fn #ident(_: #sg::ToolMarker) -> #ident {
            #ident {}
        }

        #(#cfgs)*
        impl #ident {
            #[doc = #call_doc]
            #(#attrs)*
            #vis #constness #asyncness #abi fn call(#params) -> #ret #body
        }

        #(#cfgs)*
        #[allow(unused_qualifications, non_camel_case_types)]
        const _: () = {
            #[doc(hidden)]
            #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            pub struct #args_struct {
                #(#fields,)*
            }

            #[automatically_derived]
            impl #sg::Tool for #ident
            where
                #result_bound,
            {
                type Args = #args_struct;
                type Output = #result::Output;
                type Error = #result::Error;

                fn name(&self) -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }

                fn description(&self) -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#description)
                }

                fn call(
                    &self,
                    __args: #args_struct,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<Self::Output, Self::Error>,
                > + ::core::marker::Send {
                    let #args_struct { #(#names),* } = __args;
                    async move {
                        #private::IntoToolResult::into_tool_result(
                            #ident::call(#(#names),*) #await_call
                        )
                    }
                }
            }
        };
    }
}

/// What `#[tool]` emits next to its errors: the unit struct and a `Tool` impl with
/// `unreachable!()` bodies, so uses of the tool do not add errors of their own.
pub(crate) fn fallback(function: &ItemFn, sg: &CratePath) -> TokenStream {
    let vis = &function.vis;
    let ident = &function.sig.ident;
    let private = quote!(#sg::__private);
    quote! {
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug)]
        #vis struct #ident {}

        #[allow(dead_code)]
        #vis fn #ident(_: #sg::ToolMarker) -> #ident {
            #ident {}
        }

        #[allow(unused_qualifications, unreachable_code)]
        const _: () = {
            impl #sg::Tool for #ident {
                type Args = #private::JsonValue;
                type Output = ::std::string::String;
                type Error = ::core::convert::Infallible;

                fn name(&self) -> ::std::borrow::Cow<'static, str> {
                    ::core::unreachable!()
                }

                fn description(&self) -> ::std::borrow::Cow<'static, str> {
                    ::core::unreachable!()
                }

                async fn call(
                    &self,
                    _: #private::JsonValue,
                ) -> ::core::result::Result<::std::string::String, ::core::convert::Infallible> {
                    ::core::unreachable!()
                }
            }
        };
    }
}
