//! The web console as the api serves it (issue 14): `GET /` is the console's page with a
//! strict Content-Security-Policy, its assets are served with their types, the console's
//! own paths answer its page to a browser, and the API's paths keep their problem
//! documents. (The console's behaviour in a browser: `bash scripts/test-console`.)

use crate::cluster::{Options, TestCluster};
use reqwest::header::{ACCEPT, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_serves_the_console_with_a_strict_content_security_policy() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let get = |path: &str, accept: &str| {
        c.http
            .get(format!("{}{path}", c.url))
            .header(ACCEPT, accept.to_string())
            .send()
    };
    let page = get("/", "text/html").await.unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    let csp = headers[CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .to_string();
    assert!(headers[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} not in {csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains("/assets/app.js"), "{html}");
    // No inline script: every <script> has a src.
    for tag in html.split("<script").skip(1) {
        let open = tag.split('>').next().unwrap_or_default();
        assert!(open.contains("src="), "inline script in {html}");
    }

    // Its assets, with their types; a second request with the ETag is 304.
    let js = get("/assets/app.js", "*/*").await.unwrap();
    assert_eq!(js.status(), 200);
    assert!(js.headers()[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .contains("javascript"));
    let etag = js.headers()[ETAG].clone();
    assert!(js.bytes().await.unwrap().len() > 1000);
    let again = c
        .http
        .get(format!("{}/assets/app.js", c.url))
        .header(IF_NONE_MATCH, etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    let css = get("/assets/app.css", "text/css").await.unwrap();
    assert!(css.headers()[CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/css"));

    // The console's own paths are its page for a browser; missing assets and API paths
    // stay 404 problems.
    for path in ["/queue", "/jobs/5", "/nodes"] {
        let r = get(path, "text/html,application/xhtml+xml").await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert!(r.text().await.unwrap().contains("/assets/app.js"), "{path}");
    }
    for (path, accept) in [
        ("/assets/nope.js", "*/*"),
        ("/v1/nope", "text/html"),
        ("/jobs/5", "application/json"),
    ] {
        let r = get(path, accept).await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
        assert!(r.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .contains("problem+json"));
    }
    // Nothing but GET and HEAD.
    let r = c
        .http
        .post(format!("{}/queue", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_issuers_with_a_console_client_are_listed_and_allowed_by_the_policy() {
    let config = format!(
        "{}[[api.oidc]]\nissuer = \"https://login.example.com/realms/ml\"\n\
         jwks_uri = \"https://login.example.com/realms/ml/certs\"\naudience = \"berth\"\n\
         console_client_id = \"berth-console\"\n\
         console_token_endpoint = \"https://tokens.example.net/token\"\n\
         [[api.oidc]]\nissuer = \"https://ci.example.org\"\n\
         jwks_uri = \"https://ci.example.org/jwks\"\naudience = \"berth\"\n",
        crate::cluster::TEST_API_CONFIG
    );
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 0,
            ..Default::default()
        },
        &config,
    )
    .await;
    // Public: the log-in page reads it before anyone is logged in. Only the issuer with a
    // console client is listed (the CI issuer only verifies pipeline tokens).
    let res = c
        .http
        .get(format!("{}/v1/oidc/issuers", c.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: serde_json::Value = res.json().await.unwrap();
    assert_eq!(
        body,
        serde_json::json!({"items": [{
            "issuer": "https://login.example.com/realms/ml",
            "client_id": "berth-console",
            "scopes": "openid profile",
            "token": "access_token",
            "authorization_endpoint": null,
            "token_endpoint": "https://tokens.example.net/token",
        }]})
    );
    // The console may connect to the issuer (discovery) and its token endpoint, and to
    // nothing else.
    let page = c
        .http
        .get(format!("{}/", c.url))
        .header(ACCEPT, "text/html")
        .send()
        .await
        .unwrap();
    let csp = page.headers()[CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(
        csp.contains("connect-src 'self' https://login.example.com https://tokens.example.net;"),
        "{csp}"
    );
    assert!(!csp.contains("ci.example.org"), "{csp}");
}
