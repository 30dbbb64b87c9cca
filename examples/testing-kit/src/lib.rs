//! A user's crate, as a testing-kit example: a graph that asks every airline
//! for a quote in parallel (one `Send` each), keeps the cheapest quote per
//! airline, and picks the cheapest flight. Its tests (`tests/`) check its
//! reducers' laws, pin two compile errors with trybuild, and drive the graph one
//! superstep at a time with a faked failure of the quoting tool.

use serde::{Deserialize, Serialize};
use stategraph::prelude::*;
use std::collections::BTreeMap;

/// The airlines asked for a quote.
pub const AIRLINES: [&str; 3] = ["tap", "easyjet", "ryanair"];

/// A list append: `a`, then `b`.
pub fn append(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a
}

/// A union of quotes that keeps the lower price of an airline quoted twice.
pub fn cheapest(mut a: BTreeMap<String, u32>, b: BTreeMap<String, u32>) -> BTreeMap<String, u32> {
    for (airline, price) in b {
        let kept = a.entry(airline).or_insert(price);
        *kept = (*kept).min(price);
    }
    a
}

/// The trip being booked.
#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trip {
    /// Where to.
    pub city: String,
    /// The quotes so far, by airline.
    #[reducer(cheapest)]
    pub quotes: BTreeMap<String, u32>,
    /// What happened, in order.
    #[reducer(append)]
    pub log: Vec<String>,
    /// The airline chosen.
    pub choice: Option<String>,
}

/// A quote request, the payload of a `Send` to [`quote()`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ask {
    /// The airline.
    pub airline: String,
    /// Where to.
    pub city: String,
}

/// The quoting service failed.
#[derive(Debug, thiserror::Error)]
#[error("the quote service of {airline} did not answer")]
pub struct QuoteUnavailable {
    /// The airline.
    pub airline: String,
}

/// Asks every airline at once.
#[node]
pub fn ask_all(trip: &Trip) -> Vec<stategraph::Send> {
    AIRLINES
        .iter()
        .map(|&airline| {
            send(
                quote,
                Ask {
                    airline: airline.to_owned(),
                    city: trip.city.clone(),
                },
            )
        })
        .collect()
}

/// The quoting tool: one airline's price (here a fixed table; in a real crate an
/// HTTP call that can fail).
#[node(state = Trip)]
pub async fn quote(ask: &Ask) -> Result<TripUpdate, QuoteUnavailable> {
    let price = match ask.airline.as_str() {
        "tap" => 180,
        "easyjet" => 95,
        _ => 120,
    };
    Ok(Trip::update()
        .quotes(BTreeMap::from([(ask.airline.clone(), price)]))
        .log(vec![format!("{} quoted {price}", ask.airline)]))
}

/// Picks the cheapest airline quoted.
#[node]
pub fn choose(trip: &Trip) -> TripUpdate {
    let best = trip.quotes.iter().min_by_key(|(_, &price)| price);
    Trip::update().choice(best.map(|(airline, _)| airline.clone()))
}

/// The graph: ask all airlines, then choose.
pub fn graph() -> Result<CompiledGraph<Trip>, GraphError> {
    StateGraph::<Trip>::new()
        .add_node(ask_all)
        .add_node(quote)
        .add_node(choose)
        .add_edge(START, ask_all)
        .add_edge(quote, choose)
        .compile()
}
