//! The `#[reducer(..)]` and `#[channel(..)]` attributes of `#[derive(State)]`.

use crate::crate_path;
use crate::ctxt::Ctxt;
use crate::symbol::*;
use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprClosure, ExprPath, LitBool, Meta, Token};

/// How a field's channel was chosen by its attributes.
pub(crate) enum ChannelAttr {
    Reducer(ReducerFn),
    Kind(ChannelKind),
}

/// The function of a `#[reducer(..)]`.
#[derive(Clone)]
pub(crate) enum ReducerFn {
    /// `#[reducer(my_fn)]`, `#[reducer(ops::merge::<u32>)]`.
    Path(ExprPath),
    /// `#[reducer(|current, update| ..)]`: typed as `fn(T, T) -> T` with the field's
    /// type, so a closure that does not fit is reported at the closure.
    Closure(ExprClosure),
}

impl ReducerFn {
    /// How the docs of the generated setters name the reducer.
    pub(crate) fn describe(&self) -> String {
        match self {
            ReducerFn::Path(path) => format!(
                "the reducer `{}`",
                quote::quote!(#path).to_string().replace(' ', "")
            ),
            ReducerFn::Closure(_) => "the reducer closure".to_owned(),
        }
    }
}

/// A `#[channel(kind)]`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ChannelKind {
    LastValue,
    LastValueAfterFinish,
    Ephemeral { guard: bool },
    Topic { accumulate: bool },
    Untracked { guard: bool },
    AnyValue,
}

const KINDS: &str = "last_value, last_value_after_finish, ephemeral, ephemeral(guard = false), \
                     topic, topic(accumulate), untracked, untracked(guard = false), any_value";

/// The channel attributes of one field.
pub(crate) struct FieldAttrs<'a> {
    /// The channel set by the first attribute, when it is valid.
    pub(crate) channel: Option<(&'a Attribute, ChannelAttr)>,
    /// Every `#[reducer]` / `#[channel]` attribute on the field, valid or not.
    pub(crate) all: Vec<&'a Attribute>,
    /// The field markers of `#[field(Marker)]` attributes, each with its attribute.
    pub(crate) markers: Vec<(&'a Attribute, syn::Type)>,
    /// The `#[state(private)]` that makes the field private, if any.
    pub(crate) private: Option<&'a Attribute>,
}

pub(crate) fn field_attrs<'a>(cx: &Ctxt, attrs: &'a [Attribute]) -> FieldAttrs<'a> {
    let mut out = FieldAttrs {
        channel: None,
        all: Vec::new(),
        markers: Vec::new(),
        private: None,
    };
    for attr in attrs {
        if attr.path() == STATE {
            if parse_field_state(cx, attr) {
                if out.private.is_some() {
                    cx.error_spanned_by(
                        attr,
                        "duplicate #[state(private)] attribute on this field; remove one",
                    );
                } else {
                    out.private = Some(attr);
                }
            }
            continue;
        }
        if attr.path() == FIELD {
            if let Some(marker) = parse_field(cx, attr) {
                out.markers.push((attr, marker));
            }
            continue;
        }
        let is_reducer = attr.path() == REDUCER;
        if !is_reducer && attr.path() != CHANNEL {
            continue;
        }
        if let Some(first) = out.all.first() {
            cx.error_spanned_by(attr, conflict_message(first, attr));
        } else if is_reducer {
            out.channel = parse_reducer(cx, attr).map(|p| (attr, ChannelAttr::Reducer(p)));
        } else {
            out.channel = parse_channel(cx, attr).map(|k| (attr, ChannelAttr::Kind(k)));
        }
        out.all.push(attr);
    }
    out
}

/// The struct's `#[state(crate = path)]`, if any; rejects `#[reducer]`, `#[channel]`
/// and `#[field]` on the struct itself.
pub(crate) fn container_attrs(cx: &Ctxt, attrs: &[Attribute]) -> Option<syn::Path> {
    let mut krate = None;
    for attr in attrs {
        if attr.path() == STATE {
            parse_state(cx, attr, &mut krate);
            continue;
        }
        for name in [REDUCER, CHANNEL, FIELD] {
            if attr.path() == name {
                cx.error_spanned_by(
                    attr,
                    format!("not expected here; the #[{name}] attribute belongs on a field"),
                );
            }
        }
    }
    krate
}

/// `#[state(crate = path)]` on the struct.
fn parse_state(cx: &Ctxt, attr: &Attribute, krate: &mut Option<syn::Path>) {
    const USAGE: &str = "the only option is `crate`, as in #[state(crate = sg)], for a \
                         stategraph dependency renamed to `sg`";
    if !matches!(&attr.meta, Meta::List(list) if !list.tokens.is_empty()) {
        cx.error_spanned_by(attr, format!("expected an option; {USAGE}"));
        return;
    }
    let mut errors = Vec::new();
    let result = attr.parse_nested_meta(|meta| {
        if meta.path == CRATE {
            crate_path::parse_option(&meta, krate, "state", &mut errors)
        } else if meta.path == PRIVATE {
            Err(meta.error(
                "#[state(private)] belongs on a field: it makes that field a channel that is \
                 not part of the graph's input or output",
            ))
        } else {
            Err(meta.error(format!(
                "unknown #[state] option{}; {USAGE}",
                key_name(&meta.path)
            )))
        }
    });
    for err in errors.into_iter().chain(result.err()) {
        cx.syn_error(err);
    }
}

/// `#[state(private)]` on a field; whether it is one. Any other option belongs
/// on the struct.
fn parse_field_state(cx: &Ctxt, attr: &Attribute) -> bool {
    const USAGE: &str = "on a field, #[state] takes one option, `private`: #[state(private)] \
                         keeps the field out of the graph's input and output";
    if !matches!(&attr.meta, Meta::List(list) if !list.tokens.is_empty()) {
        cx.error_spanned_by(attr, format!("expected an option; {USAGE}"));
        return false;
    }
    let mut private = false;
    let result = attr.parse_nested_meta(|meta| {
        if meta.path == PRIVATE {
            if meta.input.peek(syn::token::Paren) || meta.input.peek(Token![=]) {
                return Err(meta.error("`private` takes no value; write #[state(private)]"));
            }
            if private {
                return Err(meta.error("duplicate `private` option; remove one"));
            }
            private = true;
            Ok(())
        } else if meta.path == CRATE {
            Err(meta.error(
                "not expected here; `crate` belongs on the struct, as in #[state(crate = sg)]",
            ))
        } else {
            Err(meta.error(format!(
                "unknown #[state] option{} on a field; {USAGE}",
                key_name(&meta.path)
            )))
        }
    });
    match result {
        Ok(()) => private,
        Err(err) => {
            cx.syn_error(err);
            false
        }
    }
}

fn conflict_message(first: &Attribute, second: &Attribute) -> String {
    let first_name = if first.path() == REDUCER {
        REDUCER
    } else {
        CHANNEL
    };
    let second_name = if second.path() == REDUCER {
        REDUCER
    } else {
        CHANNEL
    };
    if first_name.0 == REDUCER.0 && second_name.0 == REDUCER.0 {
        "duplicate #[reducer] attribute; a field has one reducer, remove one of them (to apply \
         two, write a fn that calls both)"
            .to_owned()
    } else if first_name.0 == second_name.0 {
        "duplicate #[channel] attribute; a field has one channel kind, remove one of them"
            .to_owned()
    } else {
        format!(
            "#[{second_name}] conflicts with the #[{first_name}] attribute above; a field has one \
             channel: keep #[reducer(..)] to fold writes with a function, or #[channel(..)] to \
             pick another kind"
        )
    }
}

fn parse_reducer(cx: &Ctxt, attr: &Attribute) -> Option<ReducerFn> {
    const EXPECTED: &str = "expected a reducer function: write #[reducer(my_fn)], where \
                            `fn my_fn(current: T, update: T) -> T`, or a closure \
                            #[reducer(|current, update| ..)]";
    let list = match &attr.meta {
        Meta::List(list) if !list.tokens.is_empty() => list,
        _ => {
            cx.error_spanned_by(attr, EXPECTED);
            return None;
        }
    };
    // Parsed as a list first, so that `#[reducer(add, add)]` is told it names two
    // functions instead of "unexpected token" at the comma.
    let exprs = match list.parse_args_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
        Ok(exprs) => exprs,
        Err(err) => {
            cx.syn_error(err);
            return None;
        }
    };
    let mut exprs = exprs.into_iter();
    let expr = match exprs.next() {
        Some(expr) => expr,
        None => {
            cx.error_spanned_by(attr, EXPECTED);
            return None;
        }
    };
    if let Some(second) = exprs.next() {
        cx.error_spanned_by(
            second,
            "#[reducer(..)] takes one function, the field has one reducer; remove this one, \
             or write a fn that calls both and name it here",
        );
        return None;
    }
    match expr {
        Expr::Path(path) if path.attrs.is_empty() => Some(ReducerFn::Path(path)),
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => {
            let suggestion = s
                .parse::<syn::ExprPath>()
                .map(|p| quote::quote!(#p).to_string().replace(' ', ""))
                .unwrap_or_else(|_| "my_fn".to_owned());
            cx.error_spanned_by(
                s,
                format!(
                    "expected a path to a function, not a string; write #[reducer({suggestion})]"
                ),
            );
            None
        }
        Expr::Closure(closure) => parse_closure(cx, closure),
        other => {
            cx.error_spanned_by(
                other,
                "expected a path to a function, e.g. #[reducer(my_fn)] or \
                 #[reducer(my_module::merge)], or a closure #[reducer(|current, update| ..)]",
            );
            None
        }
    }
}

/// A closure reducer: `|current, update| expr`, with or without types on the
/// parameters. It becomes a `fn(T, T) -> T`, so it may not be `async` and captures
/// nothing (there is nothing to capture at a field).
fn parse_closure(cx: &Ctxt, closure: ExprClosure) -> Option<ReducerFn> {
    if let Some(asyncness) = &closure.asyncness {
        cx.error_spanned_by(
            asyncness,
            "a reducer cannot be async: it folds one write into the field's value, \
             remove `async`",
        );
        return None;
    }
    if closure.inputs.len() != 2 {
        cx.error_spanned_by(
            &closure.inputs,
            format!(
                "a reducer closure takes two arguments, the current value and one write, \
                 not {}; write #[reducer(|current, update| ..)]",
                closure.inputs.len()
            ),
        );
        return None;
    }
    Some(ReducerFn::Closure(closure))
}

/// `#[field(Marker)]`: the field provides `Marker`, a type implementing `Field`.
fn parse_field(cx: &Ctxt, attr: &Attribute) -> Option<syn::Type> {
    const EXPECTED: &str = "expected a field marker: write #[field(Marker)], where `Marker` is \
                            declared with `stategraph::field!(pub Marker: FieldType)`";
    match &attr.meta {
        Meta::List(list) if !list.tokens.is_empty() => match list.parse_args() {
            Ok(ty) => Some(ty),
            Err(err) => {
                cx.error_spanned_by(&list.tokens, format!("{EXPECTED} ({err})"));
                None
            }
        },
        _ => {
            cx.error_spanned_by(attr, EXPECTED);
            None
        }
    }
}

fn parse_channel(cx: &Ctxt, attr: &Attribute) -> Option<ChannelKind> {
    let missing =
        || format!("expected a channel kind: #[channel(kind)], where kind is one of: {KINDS}");
    match &attr.meta {
        Meta::List(list) if !list.tokens.is_empty() => {}
        _ => {
            cx.error_spanned_by(attr, missing());
            return None;
        }
    }
    let mut kind: Option<ChannelKind> = None;
    let mut first_span: Option<Span> = None;
    let result = attr.parse_nested_meta(|meta| {
        let parsed = parse_kind(&meta)?;
        if first_span.is_some() {
            return Err(
                meta.error("only one channel kind per field; remove this one or the one before it")
            );
        }
        first_span = Some(meta.path.span());
        kind = Some(parsed);
        Ok(())
    });
    match result {
        Ok(()) => kind,
        Err(err) => {
            cx.syn_error(err);
            None
        }
    }
}

fn parse_kind(meta: &ParseNestedMeta) -> syn::Result<ChannelKind> {
    let path = &meta.path;
    if path == LAST_VALUE {
        no_options(meta, LAST_VALUE)?;
        Ok(ChannelKind::LastValue)
    } else if path == LAST_VALUE_AFTER_FINISH {
        no_options(meta, LAST_VALUE_AFTER_FINISH)?;
        Ok(ChannelKind::LastValueAfterFinish)
    } else if path == ANY_VALUE {
        no_options(meta, ANY_VALUE)?;
        Ok(ChannelKind::AnyValue)
    } else if path == EPHEMERAL {
        Ok(ChannelKind::Ephemeral {
            guard: parse_guard(meta, EPHEMERAL)?,
        })
    } else if path == UNTRACKED {
        Ok(ChannelKind::Untracked {
            guard: parse_guard(meta, UNTRACKED)?,
        })
    } else if path == TOPIC {
        let mut accumulate = false;
        if meta.input.peek(syn::token::Paren) {
            meta.parse_nested_meta(|inner| {
                if inner.path == ACCUMULATE {
                    accumulate = if inner.input.peek(syn::Token![=]) {
                        inner.value()?.parse::<LitBool>()?.value
                    } else {
                        true
                    };
                    Ok(())
                } else {
                    Err(inner.error(format!(
                        "unknown option{} of #[channel(topic)]; expected `accumulate`, as in \
                         #[channel(topic(accumulate))]",
                        key_name(&inner.path)
                    )))
                }
            })?;
        } else if meta.input.peek(syn::Token![=]) {
            return Err(meta.error("expected #[channel(topic)] or #[channel(topic(accumulate))]"));
        }
        Ok(ChannelKind::Topic { accumulate })
    } else {
        let name = key_name(path);
        Err(meta.error(format!(
            "unknown channel kind{name}; expected one of: {KINDS}"
        )))
    }
}

/// `` ` `bogus`` `` for an error message about the key `bogus`.
fn key_name(path: &syn::Path) -> String {
    match path.get_ident() {
        Some(ident) => format!(" `{ident}`"),
        None => String::new(),
    }
}

fn no_options(meta: &ParseNestedMeta, kind: Symbol) -> syn::Result<()> {
    if meta.input.peek(syn::token::Paren) || meta.input.peek(syn::Token![=]) {
        Err(meta.error(format!(
            "#[channel({kind})] takes no options; write #[channel({kind})]"
        )))
    } else {
        Ok(())
    }
}

/// `kind` or `kind(guard = bool)`.
fn parse_guard(meta: &ParseNestedMeta, kind: Symbol) -> syn::Result<bool> {
    let mut guard = true;
    if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| {
            if inner.path == GUARD {
                guard = inner.value()?.parse::<LitBool>()?.value;
                Ok(())
            } else {
                Err(inner.error(format!(
                    "unknown option{} of #[channel({kind})]; expected `guard`, as in \
                     #[channel({kind}(guard = false))]",
                    key_name(&inner.path)
                )))
            }
        })?;
    } else if meta.input.peek(syn::Token![=]) {
        return Err(meta.error(format!(
            "expected #[channel({kind})] or #[channel({kind}(guard = false))]"
        )));
    }
    Ok(guard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn parse(attrs: Vec<Attribute>) -> (Option<String>, usize) {
        let cx = Ctxt::new();
        let parsed = field_attrs(&cx, &attrs);
        let channel = parsed.channel.map(|(_, channel)| match channel {
            ChannelAttr::Reducer(ReducerFn::Path(path)) => {
                format!("reducer {}", quote::quote!(#path))
            }
            ChannelAttr::Reducer(ReducerFn::Closure(closure)) => {
                format!("closure {}", quote::quote!(#closure))
            }
            ChannelAttr::Kind(kind) => format!("{kind:?}"),
        });
        let errors = cx.check().map_or_else(|e| e.into_iter().count(), |()| 0);
        (channel, errors)
    }

    #[test]
    fn parses_every_kind() {
        for (attr, expected) in [
            (parse_quote!(#[channel(last_value)]), "LastValue"),
            (
                parse_quote!(#[channel(last_value_after_finish)]),
                "LastValueAfterFinish",
            ),
            (
                parse_quote!(#[channel(ephemeral)]),
                "Ephemeral { guard: true }",
            ),
            (
                parse_quote!(#[channel(ephemeral(guard = false))]),
                "Ephemeral { guard: false }",
            ),
            (
                parse_quote!(#[channel(topic)]),
                "Topic { accumulate: false }",
            ),
            (
                parse_quote!(#[channel(topic(accumulate))]),
                "Topic { accumulate: true }",
            ),
            (
                parse_quote!(#[channel(topic(accumulate = false))]),
                "Topic { accumulate: false }",
            ),
            (
                parse_quote!(#[channel(untracked)]),
                "Untracked { guard: true }",
            ),
            (
                parse_quote!(#[channel(untracked(guard = false))]),
                "Untracked { guard: false }",
            ),
            (parse_quote!(#[channel(any_value)]), "AnyValue"),
            (parse_quote!(#[reducer(concat)]), "reducer concat"),
            (
                parse_quote!(#[reducer(|a, b| a + b)]),
                "closure | a , b | a + b",
            ),
            (
                parse_quote!(#[reducer(|a: u32, b: u32| -> u32 { a.max(b) })]),
                "closure | a : u32 , b : u32 | -> u32 { a . max (b) }",
            ),
            (
                parse_quote!(#[reducer(ops::merge::<u32>)]),
                "reducer ops :: merge :: < u32 >",
            ),
        ] {
            assert_eq!(parse(vec![attr]), (Some(expected.to_owned()), 0));
        }
    }

    #[test]
    fn parses_field_markers() {
        let attrs: Vec<Attribute> = vec![
            parse_quote!(#[field(Messages)]),
            parse_quote!(#[reducer(concat)]),
            parse_quote!(#[field(lib::Log<M>)]),
        ];
        let cx = Ctxt::new();
        let parsed = field_attrs(&cx, &attrs);
        let markers: Vec<String> = parsed
            .markers
            .iter()
            .map(|(_, ty)| quote::quote!(#ty).to_string())
            .collect();
        assert_eq!(markers, ["Messages", "lib :: Log < M >"]);
        assert!(parsed.channel.is_some());
        assert!(cx.check().is_ok());

        let bad: [Attribute; 2] = [parse_quote!(#[field]), parse_quote!(#[field(1 + 2)])];
        for attr in bad.chunks(1) {
            let cx = Ctxt::new();
            let parsed = field_attrs(&cx, attr);
            assert!(parsed.markers.is_empty());
            assert_eq!(cx.check().map_err(|e| e.into_iter().count()), Err(1));
        }
    }

    #[test]
    fn ignores_other_attributes() {
        assert_eq!(parse(vec![parse_quote!(#[serde(default)])]), (None, 0));
    }

    #[test]
    fn rejects_misuse() {
        for attrs in [
            vec![parse_quote!(#[channel(bogus)])],
            vec![parse_quote!(#[channel])],
            vec![parse_quote!(#[channel(topic, ephemeral)])],
            vec![parse_quote!(#[channel(ephemeral(gaurd = false))])],
            vec![parse_quote!(#[channel(last_value(guard = false))])],
            vec![parse_quote!(#[reducer("concat")])],
            vec![parse_quote!(#[reducer(|a| a)])],
            vec![parse_quote!(#[reducer(async |a, b| a)])],
            vec![parse_quote!(#[reducer(concat, merge)])],
            vec![parse_quote!(#[reducer()])],
            vec![parse_quote!(#[reducer])],
            vec![
                parse_quote!(#[reducer(concat)]),
                parse_quote!(#[reducer(merge)]),
            ],
            vec![
                parse_quote!(#[reducer(concat)]),
                parse_quote!(#[channel(topic)]),
            ],
        ] {
            let (_, errors) = parse(attrs);
            assert_eq!(errors, 1);
        }
    }
}
