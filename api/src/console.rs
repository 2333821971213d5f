//! The web console (`console/`, issue 14), served by the api itself: its built bundle
//! (`console/dist/`, checked in, so building Berth needs no npm) is embedded into the
//! binary with `rust-embed`. `GET /` and the console's own paths (`/jobs/5`, `/nodes`:
//! any GET for an HTML page outside the API's prefixes) answer `index.html`, and the
//! browser's router takes the path; `GET /assets/…` answers the bundle's files.
//!
//! Every answer carries [`CONTENT_SECURITY_POLICY`] (scripts, styles and connections from
//! this origin only — and the OIDC issuers the console logs in through —, no inline
//! script or style, no framing),
//! `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`. The console
//! authenticates with a bearer token it keeps in the tab's session storage: no cookies,
//! so a cross-site request carries no credentials.

use crate::error::ApiError;
use crate::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::http::header::{
    ACCEPT, CACHE_CONTROL, CONTENT_SECURITY_POLICY as CSP, CONTENT_TYPE, ETAG, IF_NONE_MATCH,
    REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use rust_embed::Embed;

/// The console's bundle, from `console/dist/` at build time.
#[derive(Embed)]
#[folder = "../console/dist/"]
struct Bundle;

/// The Content-Security-Policy of every console answer, with `{connect}` the origins
/// it may connect to besides its own ([`content_security_policy`]).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'{connect}; font-src 'self'; \
     manifest-src 'self'; base-uri 'none'; form-action 'none'; object-src 'none'; \
     require-trusted-types-for 'script'; trusted-types 'none'; frame-ancestors 'none'";

/// [`CONTENT_SECURITY_POLICY`] letting the console also connect to `origins` (the OIDC
/// issuers it logs in through: discovery and the token exchange).
pub fn content_security_policy(origins: &[String]) -> String {
    let connect: String = origins.iter().map(|o| format!(" {o}")).collect();
    CONTENT_SECURITY_POLICY.replace("{connect}", &connect)
}

/// Paths that are never the console's: the API and the service endpoints answer there,
/// and an unknown one is the API's 404, not the console's page.
const NOT_CONSOLE: [&str; 6] = [
    "/v1/",
    "/slurm",
    "/metrics",
    "/openapi.json",
    "/healthz",
    "/readyz",
];

fn file(path: &str, request: &HeaderMap, csp: &HeaderValue) -> Option<Response> {
    let asset = Bundle::get(path)?;
    let etag = format!("\"{}\"", hex::encode(&asset.metadata.sha256_hash()[..16]));
    let mut headers = HeaderMap::new();
    headers.insert(CSP, csp.clone());
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // No content hashes in the bundle's names: revalidate (cheap, by ETag) every time.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(ETAG, v);
    }
    if request
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        return Some((StatusCode::NOT_MODIFIED, headers).into_response());
    }
    let mime = asset.metadata.mimetype();
    let mime = if mime.starts_with("text/") || mime == "application/javascript" {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    };
    if let Ok(v) = HeaderValue::from_str(&mime) {
        headers.insert(CONTENT_TYPE, v);
    }
    Some((headers, Body::from(asset.data.into_owned())).into_response())
}

/// The router's fallback: the console's files and pages for GET and HEAD, the API's
/// problem document (404 `no such route`) for everything else.
pub async fn fallback(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let csp = HeaderValue::from_str(&content_security_policy(state.oidc.console_origins()))
        .unwrap_or_else(|_| {
            HeaderValue::from_str(&content_security_policy(&[])).expect("a static policy")
        });
    let path = uri.path();
    let console = matches!(method, Method::GET | Method::HEAD)
        && !NOT_CONSOLE.iter().any(|p| path.starts_with(p));
    if console {
        let name = path.trim_start_matches('/');
        if !name.is_empty() {
            if let Some(answer) = file(name, &headers, &csp) {
                return answer;
            }
        }
        // A page of the console (the browser's router shows it), for a browser asking
        // for HTML; assets that do not exist stay 404.
        let wants_html = name.is_empty()
            || headers
                .get(ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/html"));
        if wants_html && !name.starts_with("assets/") {
            if let Some(answer) = file("index.html", &headers, &csp) {
                return answer;
            }
        }
    }
    ApiError::NotFound("no such route".into()).into_response()
}
