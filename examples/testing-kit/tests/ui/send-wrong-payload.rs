// `quote` takes an `Ask`: a Send with the airline's name alone does not compile.
use stategraph::prelude::*;
use testing_kit::quote;

fn main() {
    let _ = send(quote, "tap".to_owned());
}
