use stategraph::agents::tool;

#[derive(serde::Serialize)]
struct Forecast {
    celsius: f64,
}

/// Today's forecast.
#[tool]
fn forecast(city: String) -> Forecast {
    let _ = city;
    Forecast { celsius: 21.0 }
}

fn main() {}
