//! `loopwright dev`'s pages ([`Serve::ui`](crate::Serve::ui)): HTML, CSS and
//! JavaScript modules written for this crate, compiled into the binary
//! (`include_str!`), served by REST instances under `/ui/` (and `/`
//! redirected there). The pages read and drive the server through its own
//! REST routes, with the key the user gives them.
//!
//! Invariants:
//! - nothing is fetched from elsewhere: every answer carries a
//!   `Content-Security-Policy` that lets a page load only this server's
//!   files and connect only to this server (`data:` and `blob:` images
//!   aside: a tool's inline image), and no page can be framed;
//! - the files are public (they hold no data): a `GET` of them needs no
//!   key, but the `Host` / `Origin` check of a loopback bind applies to
//!   them as to every route ([`crate::guard`]); every data route asks for
//!   the key as before;
//! - an unknown file is a 404, never the index (a typo is not a page).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// Where the pages are served.
pub(crate) const PREFIX: &str = "/ui";

/// What a page may load and connect to: this server only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
                   connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// Each file: its path under `/ui/`, its type and its content.
const FILES: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../ui/index.html"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../ui/app.css"),
    ),
    ("app.js", JS, include_str!("../ui/app.js")),
    ("api.js", JS, include_str!("../ui/api.js")),
    ("dom.js", JS, include_str!("../ui/dom.js")),
    ("agents.js", JS, include_str!("../ui/agents.js")),
    ("chat.js", JS, include_str!("../ui/chat.js")),
    ("playground.js", JS, include_str!("../ui/playground.js")),
    ("runs.js", JS, include_str!("../ui/runs.js")),
    ("timeline.js", JS, include_str!("../ui/timeline.js")),
    ("sessions.js", JS, include_str!("../ui/sessions.js")),
    ("tools.js", JS, include_str!("../ui/tools.js")),
    ("evals.js", JS, include_str!("../ui/evals.js")),
    ("favicon.svg", "image/svg+xml", include_str!("../ui/favicon.svg")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// The pages' routes.
pub(crate) fn router() -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/ui/") }))
        .route(PREFIX, get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(|| async { file("index.html") }))
        .route(
            "/ui/{file}",
            get(|Path(name): Path<String>| async move { file(&name) }),
        )
}

/// Whether a request is for a page's file (served without a key).
pub(crate) fn is_page(method: &axum::http::Method, path: &str) -> bool {
    (method == axum::http::Method::GET || method == axum::http::Method::HEAD)
        && (path == "/" || path == PREFIX || path.starts_with("/ui/"))
}

fn file(name: &str) -> Response {
    let Some((_, kind, body)) = FILES.iter().find(|(path, _, _)| *path == name) else {
        return (StatusCode::NOT_FOUND, format!("no file {name:?} in the pages")).into_response();
    };
    let mut response = (*body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // The files change with the binary: a browser asks again each time.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn every_module_a_page_imports_is_served() {
        for (name, _, body) in FILES {
            for line in body.lines().filter(|l| l.trim_start().starts_with("import ")) {
                let Some(from) = line.split(['\'', '"']).nth(1) else {
                    continue;
                };
                let target = from.trim_start_matches("./");
                assert!(
                    FILES.iter().any(|(path, _, _)| *path == target),
                    "{name} imports {from}, which is not served"
                );
            }
        }
    }

    #[test]
    fn the_pages_load_nothing_from_elsewhere() {
        for (name, _, body) in FILES {
            for needle in ["http://", "https://", "//cdn", "@import url("] {
                let found = body
                    .lines()
                    .find(|l| l.contains(needle) && !l.contains("www.w3.org/2000/svg"));
                assert!(found.is_none(), "{name} names {needle}: {found:?}");
            }
        }
    }
}
