//! The reducers' laws: what the engine relies on (folding in any grouping gives
//! the same value), and what the reducers promise.

use stategraph::testing::{laws, reducer_laws};
use std::collections::BTreeMap;
use testing_kit::{append, cheapest};

#[test]
fn append_is_a_list_append() {
    laws::list_append(append).check();
}

#[test]
fn cheapest_keeps_the_lowest_price_per_airline() {
    reducer_laws(cheapest)
        .default_is_identity()
        // Parallel quotes give the same quotes whatever order they complete in.
        .commutative()
        .model("lowest price per airline", |a, b| {
            let mut all: BTreeMap<String, u32> = BTreeMap::new();
            for (airline, &price) in a.iter().chain(b) {
                let kept = all.entry(airline.clone()).or_insert(price);
                *kept = (*kept).min(price);
            }
            all
        })
        .check();
}
