//! On the enum, `#[goto]` takes only `crate = path`: bad values, a second `crate`
//! and other options are reported; so is `crate` on a variant.

use stategraph::prelude::*;

#[derive(Goto, Clone, Copy)]
#[goto(crate = "")]
enum EmptyString {
    Tools,
}

#[derive(Goto, Clone, Copy)]
#[goto(crate = stategraph, crate = stategraph)]
enum Duplicate {
    Tools,
}

#[derive(Goto, Clone, Copy)]
#[goto(crate = stategraph, rename_all = "kebab-case")]
enum UnknownOption {
    Tools,
}

#[derive(Goto, Clone, Copy)]
enum OnAVariant {
    #[goto(crate = stategraph)]
    Tools,
}

fn main() {}
