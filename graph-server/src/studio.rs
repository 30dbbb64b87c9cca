//! The Studio: a web page to see, run, inspect and steer the served graphs,
//! built into the binary and served at `/studio/`.
//!
//! ```
//! use axum::body::Body;
//! use axum::http::{Request, StatusCode};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let app: axum::Router = graph_server::studio::router();
//! let page = app
//!     .oneshot(Request::get("/studio/").body(Body::empty()).unwrap())
//!     .await
//!     .unwrap();
//! assert_eq!(page.status(), StatusCode::OK);
//! assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
//! # }
//! ```
//!
//! The page is static files (`graph-server/studio/`: HTML, CSS and JavaScript
//! modules, no build step, nothing fetched from elsewhere) that talk to the
//! server only through LangGraph Server's public HTTP API, the endpoints the
//! `langgraph-sdk` clients use, with the token typed into its token field as a
//! bearer token. So the files themselves hold nothing secret and are served
//! without authentication, and the same page works against any deployment of
//! the API (`?api=URL` points it elsewhere). Its guide chapter is
//! `stategraph::guide::studio`.

use axum::extract::{Path, RawQuery};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

/// One file of the Studio page.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its name under `/studio/`.
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
}

macro_rules! assets {
    ($($name:literal => $type:literal),* $(,)?) => {
        &[$(Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../studio/", $name)),
        }),*]
    };
}

/// Every file of the page; `index.html` is the page itself.
pub const ASSETS: &[Asset] = assets! {
    "index.html" => "text/html; charset=utf-8",
    "studio.css" => "text/css; charset=utf-8",
    "app.js" => "text/javascript; charset=utf-8",
    "api.js" => "text/javascript; charset=utf-8",
    "graph.js" => "text/javascript; charset=utf-8",
    "json.js" => "text/javascript; charset=utf-8",
    "vlist.js" => "text/javascript; charset=utf-8",
};

/// The asset called `name` (`""` is `index.html`).
pub fn asset(name: &str) -> Option<&'static Asset> {
    let name = if name.is_empty() { "index.html" } else { name };
    ASSETS.iter().find(|a| a.name == name)
}

/// The routes of the page: `GET /studio` (a redirect to `/studio/`),
/// `GET /studio/` and `GET /studio/{file}`. Merge them into the API's router.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/studio", get(redirect))
        .route("/studio/", get(|| async { serve("") }))
        .route(
            "/studio/{file}",
            get(|Path(file): Path<String>| async move { serve(&file) }),
        )
}

/// `/studio?q` to `/studio/?q`: relative, so that the page's relative links
/// resolve behind a path prefix too, and keeping the query (`?api=`).
async fn redirect(RawQuery(query): RawQuery) -> Redirect {
    match query {
        Some(q) => Redirect::permanent(&format!("studio/?{q}")),
        None => Redirect::permanent("studio/"),
    }
}

fn serve(name: &str) -> Response {
    match asset(name) {
        Some(a) => (
            [
                (header::CONTENT_TYPE, a.content_type),
                // A new server version must not be mixed with a cached old page.
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            a.body,
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"detail":"Not Found"}"#,
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to `studio/` without an entry in `ASSETS` would be a 404
    /// in the page: every file there is served, and the page stays small.
    #[test]
    fn every_file_of_the_studio_directory_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studio");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        on_disk.sort();
        let mut served: Vec<String> = ASSETS.iter().map(|a| a.name.to_owned()).collect();
        served.sort();
        assert_eq!(on_disk, served);
        let total: usize = ASSETS.iter().map(|a| a.body.len()).sum();
        assert!(
            total <= 300 * 1024,
            "the Studio's first load is {total} bytes, over 300 KB"
        );
    }

    #[test]
    fn unknown_files_are_404_and_the_index_is_the_default() {
        assert_eq!(asset("").unwrap().name, "index.html");
        assert!(asset("../Cargo.toml").is_none());
        assert_eq!(serve("nope.js").status(), StatusCode::NOT_FOUND);
        assert_eq!(serve("app.js").status(), StatusCode::OK);
    }
}
