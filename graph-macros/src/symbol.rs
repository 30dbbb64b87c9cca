use std::fmt::{self, Display};
use syn::{Ident, Path};

/// An attribute name or key, compared against parsed paths (serde's `Symbol`).
#[derive(Copy, Clone)]
pub(crate) struct Symbol(pub(crate) &'static str);

pub(crate) const REDUCER: Symbol = Symbol("reducer");
pub(crate) const CHANNEL: Symbol = Symbol("channel");
pub(crate) const FIELD: Symbol = Symbol("field");
pub(crate) const GOTO: Symbol = Symbol("goto");

pub(crate) const LAST_VALUE: Symbol = Symbol("last_value");
pub(crate) const LAST_VALUE_AFTER_FINISH: Symbol = Symbol("last_value_after_finish");
pub(crate) const EPHEMERAL: Symbol = Symbol("ephemeral");
pub(crate) const TOPIC: Symbol = Symbol("topic");
pub(crate) const UNTRACKED: Symbol = Symbol("untracked");
pub(crate) const ANY_VALUE: Symbol = Symbol("any_value");
pub(crate) const GUARD: Symbol = Symbol("guard");
pub(crate) const ACCUMULATE: Symbol = Symbol("accumulate");

pub(crate) const END: Symbol = Symbol("end");
pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const DESCRIPTION: Symbol = Symbol("description");

pub(crate) const STATE: Symbol = Symbol("state");
pub(crate) const PRIVATE: Symbol = Symbol("private");
pub(crate) const SCHEMA: Symbol = Symbol("schema");
pub(crate) const CRATE: Symbol = Symbol("crate");

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl Display for Symbol {
    fn fmt(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(self.0)
    }
}
