//! `#[task]` and `#[entrypoint]`: the Functional API's macros. Each parses its
//! fn and arguments, validates them (every mistake reported at its span, all at
//! once), and expands to calls of the facade's `func` module.

mod entrypoint;
mod task;

pub(crate) use entrypoint::expand as entrypoint;
pub(crate) use task::expand as task;

use syn::{GenericArgument, PathArguments, Type};

/// `Result<T, E>` (by its last path segment): `T`.
fn result_ok(ty: &Type) -> Option<&Type> {
    generic_arg(ty, "Result", 0)
}

/// The `index`-th type argument of `ty` when its last segment is `name`.
fn generic_arg<'a>(ty: &'a Type, name: &str, index: usize) -> Option<&'a Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(index)
}
