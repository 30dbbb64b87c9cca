//! The expansion of a valid `#[node]` fn.

use super::ast::{NodeFn, Passing};
use crate::crate_path::CratePath;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;

pub(crate) fn node(node: &NodeFn, sg: &CratePath) -> TokenStream {
    let item = node.item;
    let sig = &item.sig;
    let vis = &item.vis;
    let ident = &sig.ident;
    let name = ident.unraw().to_string();
    let (docs, cfgs, attrs) = (&node.docs, &node.cfgs, &node.other_attrs);
    let generics = &sig.generics;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    // `Node<__S>` adds the graph's state to the fn's own parameters.
    let node_generics = super::value::with_graph_state(sg, generics);
    let (node_impl_generics, _, _) = node_generics.split_for_impl();
    let where_preds = where_clause.map(|w| {
        let preds = w.predicates.iter();
        quote!(#(#preds,)*)
    });
    let Some(input) = &node.input else {
        // `from_syn` reports a missing input, so this is not reached.
        return quote!();
    };
    let input_ty = input.ty;
    let ret = &node.ret;

    let asyncness = &sig.asyncness;
    let constness = &sig.constness;
    let abi = &sig.abi;
    let params = &sig.inputs;
    let body = &item.block;
    let call_doc = format!(
        " Runs the body of the node `{name}` directly, outside a graph (e.g. in a unit test)."
    );

    let input_arg = match input.passing {
        Passing::ByRef => quote!(&*__input),
        Passing::ByValue => {
            quote_spanned!(input_ty.span()=> ::std::sync::Arc::unwrap_or_clone(__input))
        }
    };
    let ctx_arg = match node.ctx.map(|c| c.passing) {
        None => quote!(),
        Some(Passing::ByRef) => quote!(, &__ctx),
        Some(Passing::ByValue) => quote!(, __ctx),
    };
    // The task's context as the parameter's type: `Context<C>` itself, or the
    // untyped `Context`, which fits any graph. The bound is spanned at the
    // parameter's type, so a node reading another context type than the
    // graph's is reported there.
    let (ctx_bound, ctx_convert) = match node.ctx {
        None => (None, None),
        Some(param) => {
            let ty = param.ty;
            let span = ty.span();
            let sgs = sg.spanned(span);
            (
                Some(quote_spanned!(span=> #ty: #sgs::context::FromContext<__C>,)),
                Some(quote! {
                    let __ctx = <#ty as #sg::context::FromContext<__C>>::from_context(__ctx);
                }),
            )
        }
    };
    let await_call = asyncness.map(|_| quote!(.await));
    // A sync body blocks the thread that polls the node: with a timeout, the
    // engine moves it to tokio's blocking pool.
    let is_blocking = asyncness.is_none().then(|| {
        quote! {
            fn is_blocking(&self) -> bool {
                true
            }
        }
    });
    // The input and return types against the graph's state, in one bound spanned
    // at the input parameter: for a node written for another state, the error's
    // "unsatisfied trait bound introduced here" marks the parameter.
    let node_of = quote!(<Self as #sg::__private::NodeOf<__S, #input_ty, #ret>>);
    let node_of_bound = {
        // The bound's first and last tokens carry the span, so the node's name is
        // respanned too.
        let span = input_ty.span();
        let sgs = sg.spanned(span);
        let mut node = ident.clone();
        node.set_span(span);
        quote_spanned! {span=>
            #node #ty_generics: #sgs::__private::NodeOf<__S, #input_ty, #ret>
        }
    };
    let future = quote! {
        async move {
            #node_of::into_output(
                Self::call(#input_arg #ctx_arg) #await_call
            )
        }
    };
    // Spanned at the fn's name: a future that is not `Send` is reported there.
    let run_body = {
        let sgs = sg.spanned(ident.span());
        quote_spanned!(ident.span()=> #ctx_convert #sgs::NodeFuture::new(#future))
    };
    let input_assoc = quote_spanned!(input_ty.span()=> type Input = #input_ty;);

    // The nodes each goto type names, for the compile-time checks of `graph!`;
    // each spanned at its goto type, where a type that is no `GotoTarget` is
    // reported. A node returning a `NodeOutput` routes where it likes.
    let goto_routes = node
        .gotos
        .iter()
        .map(|goto| {
            let sgs = sg.spanned(goto.span());
            quote_spanned!(goto.span()=> #sgs::__private::goto_routes::<#goto>())
        })
        .chain(returns_node_output(&node.ret).then(|| quote!(::core::option::Option::None)));
    let output_check = output_check(node, sg, &name);
    let state_bound = &node.state_bound;
    let where_call = with_state_bound(where_clause, state_bound.as_ref());
    let value = super::value::node_value(sg, cfgs, docs, vis, ident, generics);
    let (spec_generics, spec_where) = super::value::spec_bounds(generics, input_ty);

    quote! {
        #value

        #(#cfgs)*
        impl #impl_generics #ident #ty_generics {
            #[doc = #call_doc]
            // The input is borrowed from the task's `Arc<Input>`: `&String` or `&Vec<T>`
            // is the node's contract here, not a choice clippy can improve.
            #[allow(clippy::ptr_arg)]
            #(#attrs)*
            #vis #constness #asyncness #abi fn call(#params) -> #ret #where_call #body
        }

        #(#cfgs)*
        #[allow(unused_qualifications)]
        const _: () = {
            #[automatically_derived]
            impl #spec_generics #sg::NodeSpec for #ident #ty_generics #spec_where {
                #input_assoc

                fn name(&self) -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }

                // A `View` input is projected from the state; any other input (the
                // state, a payload, a type parameter) is taken as it is.
                #[inline]
                fn projection() -> ::core::option::Option<#sg::__private::Projection<#input_ty>> {
                    use #sg::__private::{ViaView as _, ViaWhole as _};
                    (&#sg::__private::ViewProbe::<#input_ty>::NEW).projection()
                }

                const GOTO_ROUTES: &'static [::core::option::Option<&'static [#sg::__private::GotoRoute]>] =
                    &[#(#goto_routes),*];
            }

            #[automatically_derived]
            impl #node_impl_generics #sg::Node<__S, __C> for #ident #ty_generics
            where
                #where_preds
                #ctx_bound
                #node_of_bound,
                #state_bound
            {
                fn run(
                    &self,
                    __input: ::std::sync::Arc<#input_ty>,
                    __ctx: #sg::Context<__C>,
                ) -> #sg::NodeFuture<__S> {
                    #run_body
                }

                fn targets(&self) -> #sg::Targets {
                    #node_of::targets()
                }

                #is_blocking
            }

            #output_check
        };
    }
}

/// Checks the return type against the state where the state is known, so that a
/// node returning something no graph accepts (`-> i32`) is reported at its return
/// type instead of at the `add_node` that uses it.
///
/// With `#[node(state = S)]` the state is `S`. Otherwise it is the input type when
/// that implements `State`; a payload input (e.g. `u32` for a node reached by `send`)
/// is skipped, using autoref dispatch: the method of `__NodeOfState` is found on the
/// probe first, and only exists when the input is a state.
fn output_check(node: &NodeFn, sg: &CratePath, name: &str) -> TokenStream {
    let check = format_ident!("__graph_check_{}_output", name);
    let ret = &node.ret_without_gotos;
    let span = match &node.item.sig.output {
        syn::ReturnType::Default => node.item.sig.ident.span(),
        syn::ReturnType::Type(_, ty) => ty.span(),
    };
    let body = match (node.state_arg, &node.input) {
        (Some(state), _) => {
            let check_here = syn::Ident::new(&check.to_string(), span);
            let sgs = sg.spanned(span);
            quote_spanned! {span=>
                fn #check_here<S: #sgs::State, R: #sgs::IntoNodeOutput<S>>() {}
                #check_here::<#state, #ret>();
            }
        }
        (None, Some(input)) => {
            let input = input.ty;
            // The method name carries the span rustc reports an unmet bound of the call at.
            let check_here = syn::Ident::new(&check.to_string(), span);
            let call = quote_spanned! {span=>
                (&__Probe::<#input>(::core::marker::PhantomData)).#check_here::<#ret>()
            };
            quote! {
                struct __Probe<T>(::core::marker::PhantomData<T>);
                trait __NodeOfState {
                    type S: #sg::State;
                    fn #check<R: #sg::IntoNodeOutput<Self::S>>(&self) {}
                }
                impl<T: #sg::State> __NodeOfState for __Probe<T> {
                    type S = T;
                }
                trait __NodeOfPayload {
                    fn #check<R>(&self) {}
                }
                impl<T> __NodeOfPayload for &__Probe<T> {}
                #call;
            }
        }
        (None, None) => return quote!(),
    };
    let (impl_generics, _, where_clause) = node.item.sig.generics.split_for_impl();
    let where_all = with_state_bound(where_clause, node.state_bound.as_ref());
    quote! {
        #[doc(hidden)]
        #[allow(dead_code, non_snake_case)]
        fn #check #impl_generics () #where_all {
            #body
        }
    }
}

/// The fn's where-clause with the `S: State` bound of a completed `Command` added.
fn with_state_bound(
    where_clause: Option<&syn::WhereClause>,
    state_bound: Option<&TokenStream>,
) -> Option<TokenStream> {
    match (where_clause, state_bound) {
        (None, None) => None,
        (Some(w), None) => Some(quote!(#w)),
        (None, Some(bound)) => Some(quote!(where #bound)),
        (Some(w), Some(bound)) => {
            let preds = w.predicates.iter();
            Some(quote!(where #(#preds,)* #bound))
        }
    }
}

/// Whether `ty` names `NodeOutput` anywhere: its gotos are only known at run time.
fn returns_node_output(ty: &syn::Type) -> bool {
    fn names_it(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            proc_macro2::TokenTree::Ident(ident) => ident == "NodeOutput",
            proc_macro2::TokenTree::Group(group) => names_it(group.stream()),
            _ => false,
        })
    }
    names_it(quote!(#ty))
}
