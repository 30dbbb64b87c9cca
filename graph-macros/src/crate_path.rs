//! The path every expansion starts its paths with: the one place that knows where the
//! stategraph facade (or the crate that stands in for it) is.
//!
//! In order of precedence:
//!
//! 1. `crate = path` in the macro's arguments (`#[state(crate = sg)]`,
//!    `#[goto(crate = sg)]` on the enum, `#[node(crate = sg)]`,
//!    `#[tool(crate = sg)]`), as serde's `#[serde(crate = "..")]`: the path of the
//!    `stategraph` facade as the user's crate can name it. A string works too.
//! 2. The `stategraph` dependency in the user's Cargo.toml, under whatever name it was
//!    given (`sg = { package = "stategraph", .. }`), found by `proc-macro-crate`.
//! 3. For a crate that depends on the runtime directly (graph-agents): the package
//!    `stategraph-core` (library `graph_core`) for `derive(State)`, `derive(Goto)` and
//!    `#[node]`, `stategraph-agents` (library `graph_agents`) for `#[tool]`.
//! 4. `::stategraph`, when none of these is in Cargo.toml or it cannot be read (a
//!    build without Cargo): rustc then reports the unresolved `stategraph`, and
//!    `crate = path` is the way out.
//!
//! Inside the package itself (graph-agents' doctests, say) proc-macro-crate answers
//! `Itself`: the path is then `::name` of the package's library, which is right in
//! its doctests (merged edition 2024 ones too), examples and binaries. A library that
//! uses its own macros in its own code declares `extern crate self as name;` at its
//! root, so that `::name` resolves there as well. (The macro cannot tell the library
//! from a merged doctest: both are compiled with the same environment.)

use proc_macro2::{Span, TokenStream};
use proc_macro_crate::{crate_name, FoundCrate};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::{Expr, Lit, Path, PathArguments};

/// The path of the facade, or of `agents` inside it, as the expansion must spell it.
#[derive(Clone)]
pub(crate) struct CratePath {
    path: Path,
}

/// What an expansion needs from the facade.
#[derive(Clone, Copy)]
pub(crate) enum Needs {
    /// The runtime: the facade itself, or graph-core (`derive(State)`, `derive(Goto)`,
    /// `#[node]`).
    Core,
    /// The agents module: `<facade>::agents`, or graph-agents (`#[tool]`).
    Agents,
}

impl CratePath {
    /// The path for `needs`: the user's `crate = ..` when given, else the one found in
    /// Cargo.toml.
    pub(crate) fn new(explicit: Option<Path>, needs: Needs) -> Self {
        let facade = match explicit {
            Some(path) => path,
            None => match found("stategraph", "stategraph") {
                Some(path) => path,
                None => {
                    let direct = match needs {
                        Needs::Core => found("stategraph-core", "graph_core"),
                        Needs::Agents => found("stategraph-agents", "graph_agents"),
                    };
                    if let Some(path) = direct {
                        return CratePath { path };
                    }
                    syn::parse_quote!(::stategraph)
                }
            },
        };
        let path = match needs {
            Needs::Core => facade,
            Needs::Agents => syn::parse_quote!(#facade::agents),
        };
        CratePath { path }
    }

    /// `::stategraph`, as the unit tests of the expansions spell it.
    #[cfg(test)]
    pub(crate) fn stategraph() -> Self {
        CratePath {
            path: syn::parse_quote!(::stategraph),
        }
    }

    /// The path with every token at `span`, for expansions whose errors must point at
    /// the user's code (`quote_spanned!`).
    pub(crate) fn spanned(&self, span: Span) -> TokenStream {
        self.path
            .to_token_stream()
            .into_iter()
            .map(|mut tree| {
                tree.set_span(span);
                tree
            })
            .collect::<TokenStream>()
    }
}

impl ToTokens for CratePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.path.to_tokens(tokens);
    }
}

/// How the crate being compiled names the package `package` (whose library is
/// `lib`), if it depends on it (or is it).
fn found(package: &str, lib: &str) -> Option<Path> {
    let name = match crate_name(package).ok()? {
        FoundCrate::Name(name) => name,
        // A doctest, example or binary of the package: the library is a dependency
        // there, under its own name; in the library, `extern crate self as lib;`.
        // (proc-macro-crate already answers `Name` for integration tests and benches.)
        FoundCrate::Itself => lib.to_owned(),
    };
    // Cargo only allows identifiers here; anything else falls through to the next
    // guess rather than panicking in `Ident::new`.
    let ident: syn::Ident = syn::parse_str(&name).ok()?;
    Some(syn::parse_quote!(::#ident))
}

const USAGE: &str = "the path of the stategraph crate as your Cargo.toml names it, as in \
                     crate = sg or crate = \"sg\"";

/// Parses the value of a `crate = ..` option into `slot`, for `#[what(crate = ..)]`.
///
/// A bad value or a second `crate` is reported in `errors` and the rest of the
/// attribute is still parsed; only a value that is not an expression at all stops it.
pub(crate) fn parse_option(
    meta: &ParseNestedMeta,
    slot: &mut Option<Path>,
    what: &str,
    errors: &mut Vec<syn::Error>,
) -> syn::Result<()> {
    let value: Expr = match meta.value() {
        Ok(value) => value.parse()?,
        Err(_) => {
            errors.push(meta.error(format!("expected a value: {USAGE}")));
            return Ok(());
        }
    };
    let path = match value_path(&value) {
        Ok(path) => path,
        Err(err) => {
            errors.push(err);
            return Ok(());
        }
    };
    if slot.is_some() {
        errors.push(meta.error(format!("duplicate `crate` option of #[{what}]; remove one")));
    } else {
        *slot = Some(path);
    }
    Ok(())
}

/// The path in `crate = sg` or `crate = "sg"`.
fn value_path(value: &Expr) -> syn::Result<Path> {
    let path = match value {
        Expr::Path(path) if path.attrs.is_empty() && path.qself.is_none() => path.path.clone(),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse::<Path>().map_err(|_| {
            syn::Error::new(s.span(), format!("expected a path in the string: {USAGE}"))
        })?,
        other => return Err(syn::Error::new_spanned(other, format!("expected {USAGE}"))),
    };
    if let Some(segment) = path
        .segments
        .iter()
        .find(|s| !matches!(s.arguments, PathArguments::None))
    {
        return Err(syn::Error::new_spanned(
            &segment.arguments,
            format!("a crate path has no generic arguments; expected {USAGE}"),
        ));
    }
    Ok(path)
}

/// For tests: the path's tokens as a string.
#[cfg(test)]
fn spelled(path: &CratePath) -> String {
    path.to_token_stream().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse::Parser;

    fn parse(tokens: TokenStream) -> (Option<String>, Vec<String>) {
        let mut slot = None;
        let mut errors = Vec::new();
        let result = syn::meta::parser(|meta| {
            if meta.path.is_ident("crate") {
                parse_option(&meta, &mut slot, "state", &mut errors)
            } else {
                Err(meta.error("unknown"))
            }
        })
        .parse2(tokens);
        if let Err(err) = result {
            errors.push(err);
        }
        let slot = slot.map(|p: Path| p.to_token_stream().to_string());
        (slot, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn accepts_paths_and_strings() {
        for (tokens, expected) in [
            (quote::quote!(crate = sg), "sg"),
            (quote::quote!(crate = "sg"), "sg"),
            (quote::quote!(crate = ::my::sg), ":: my :: sg"),
            (quote::quote!(crate = "::my::sg"), ":: my :: sg"),
            (quote::quote!(crate = crate), "crate"),
        ] {
            assert_eq!(parse(tokens), (Some(expected.to_owned()), vec![]));
        }
    }

    #[test]
    fn rejects_bad_values_and_keeps_parsing() {
        for tokens in [
            quote::quote!(crate = 1),
            quote::quote!(crate = ""),
            quote::quote!(crate = "not a path"),
            quote::quote!(crate = sg::<u8>),
            quote::quote!(crate),
        ] {
            let (slot, errors) = parse(tokens.clone());
            assert_eq!((slot, errors.len()), (None, 1), "{tokens}");
        }
        let (slot, errors) = parse(quote::quote!(crate = sg, crate = other));
        assert_eq!(slot.as_deref(), Some("sg"));
        assert_eq!(errors, ["duplicate `crate` option of #[state]; remove one"]);
    }

    #[test]
    fn explicit_paths_win() {
        let path = CratePath::new(Some(syn::parse_quote!(sg)), Needs::Core);
        assert_eq!(spelled(&path), "sg");
        let path = CratePath::new(Some(syn::parse_quote!(sg)), Needs::Agents);
        assert_eq!(spelled(&path), "sg :: agents");
    }
}
