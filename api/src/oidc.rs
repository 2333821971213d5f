//! External OpenID Connect issuers: tokens they sign are verified against the keys of their
//! JWKS (fetched with reqwest, cached, fetched again when a token names a key id the cache
//! does not hold — which is how a key rotation is picked up), and mapped to a Berth user
//! through a claim (`username_claim`, default `sub`). The role comes from `role_claim` when
//! configured and valid, else from the user's row in `users`, else `user`; a node role is
//! never taken from an external token.
//!
//! Only asymmetric algorithms are accepted (RS256/384/512, PS256/384/512, ES256/384,
//! EdDSA), and only one that matches the key; `iss`, `aud`, `exp` and `nbf` are checked with
//! [`crate::auth::LEEWAY_SECONDS`] of leeway.

use crate::auth::LEEWAY_SECONDS;
use crate::error::ApiError;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use utoipa::ToSchema;

/// The default least time between two fetches of one issuer's JWKS, seconds, so that
/// tokens naming unknown key ids cannot make the api hammer the issuer.
pub const MIN_REFETCH_SECONDS: u64 = 5;

/// One trusted external issuer (`[[api.oidc]]` in the server configuration).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcIssuer {
    /// The `iss` its tokens carry (`https://login.example.com/realms/ml`).
    pub issuer: String,
    /// Where its JSON Web Key Set is served.
    pub jwks_uri: String,
    /// The `aud` its tokens must carry for Berth.
    pub audience: String,
    /// The claim holding the Berth user name (default `sub`; `preferred_username`,
    /// `email` …).
    #[serde(default = "default_username_claim")]
    pub username_claim: String,
    /// A claim holding the role (`admin`, `operator` or `user`); when absent or not one of
    /// those, the role of the user's row in `users` applies, else `user`.
    #[serde(default)]
    pub role_claim: Option<String>,
    /// The least time between two fetches of the JWKS, seconds (default
    /// [`MIN_REFETCH_SECONDS`]).
    #[serde(default)]
    pub min_refetch_seconds: Option<u64>,
    /// The web console's OAuth client at this issuer: a public client (no secret) allowed
    /// the authorization code flow with PKCE (S256) and the redirect URI
    /// `<api URL>/login/callback`. When set, the console's log-in page offers this issuer.
    #[serde(default)]
    pub console_client_id: Option<String>,
    /// The scopes the console asks for (default `openid profile`).
    #[serde(default)]
    pub console_scopes: Option<String>,
    /// Which token of the issuer's answer the console sends to the api: `access_token`
    /// (default; the issuer must put `audience` in it) or `id_token` (its `aud` is the
    /// client id, so `audience` must be `console_client_id`).
    #[serde(default)]
    pub console_token: Option<ConsoleToken>,
    /// The authorization endpoint, when the browser should not read it from the issuer's
    /// `/.well-known/openid-configuration`.
    #[serde(default)]
    pub console_authorization_endpoint: Option<String>,
    /// The token endpoint, likewise (the console's Content-Security-Policy lets it
    /// connect to the issuer's origin and to this one's).
    #[serde(default)]
    pub console_token_endpoint: Option<String>,
}

/// Which token of an issuer's token answer the console uses as its bearer token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConsoleToken {
    /// The OAuth access token (a JWT whose `aud` holds the issuer's `audience`).
    #[default]
    AccessToken,
    /// The OpenID Connect ID token (`aud` = the console's client id).
    IdToken,
}

/// An issuer the console may log in through (`GET /v1/oidc/issuers`): what a browser
/// needs for the authorization code flow with PKCE. Public: no secret is in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OidcLogin {
    /// The issuer (`iss`); its discovery document is `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    /// The console's client id there.
    pub client_id: String,
    /// The scopes to ask for, space-separated.
    pub scopes: String,
    /// Which token to send to the api.
    pub token: ConsoleToken,
    /// The authorization endpoint, when configured (else read from discovery).
    pub authorization_endpoint: Option<String>,
    /// The token endpoint, when configured (else read from discovery).
    pub token_endpoint: Option<String>,
}

/// `GET /v1/oidc/issuers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OidcLoginList {
    /// The issuers with a console client, in configuration order.
    pub items: Vec<OidcLogin>,
}

/// List the issuers the console can log in through.
///
/// Those `[[api.oidc]]` issuers that have a `console_client_id`, with what a browser
/// needs for the authorization code flow with PKCE. Needs no credentials (the log-in page
/// reads it before anyone is logged in); holds nothing secret.
#[utoipa::path(get, path = "/v1/oidc/issuers", tag = "auth", operation_id = "oidc_issuer_list",
    responses((status = 200, description = "The issuers", body = OidcLoginList)))]
pub async fn oidc_issuer_list(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
) -> axum::Json<OidcLoginList> {
    axum::Json(OidcLoginList {
        items: state.oidc.console_logins(),
    })
}

fn default_username_claim() -> String {
    "sub".to_string()
}

const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

#[derive(Default)]
struct KeyCache {
    keys: HashMap<String, DecodingKey>,
    fetched_at: Option<Instant>,
}

struct IssuerKeys {
    config: OidcIssuer,
    cache: Mutex<KeyCache>,
}

/// What a verified external token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcIdentity {
    /// The Berth user name (from `username_claim`).
    pub name: String,
    /// The role named by `role_claim`, when configured and valid.
    pub role: Option<String>,
}

/// The verifier of every configured issuer's tokens.
#[derive(Clone, Default)]
pub struct OidcVerifier {
    issuers: Arc<Vec<IssuerKeys>>,
    /// [`OidcVerifier::console_origins`], worked out once.
    console_origins: Arc<Vec<String>>,
    http: reqwest::Client,
}

impl OidcVerifier {
    /// A verifier of `issuers`' tokens.
    pub fn new(issuers: Vec<OidcIssuer>) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        let mut verifier = OidcVerifier {
            issuers: Arc::new(
                issuers
                    .into_iter()
                    .map(|config| IssuerKeys {
                        config,
                        cache: Mutex::new(KeyCache::default()),
                    })
                    .collect(),
            ),
            console_origins: Arc::default(),
            http,
        };
        verifier.console_origins = Arc::new(verifier.origins_of_console_logins());
        verifier
    }

    /// The issuers with a console client, for the console's log-in page.
    pub fn console_logins(&self) -> Vec<OidcLogin> {
        self.issuers
            .iter()
            .filter_map(|i| {
                let c = &i.config;
                Some(OidcLogin {
                    issuer: c.issuer.clone(),
                    client_id: c.console_client_id.clone()?,
                    scopes: c
                        .console_scopes
                        .clone()
                        .unwrap_or_else(|| "openid profile".to_string()),
                    token: c.console_token.unwrap_or_default(),
                    authorization_endpoint: c.console_authorization_endpoint.clone(),
                    token_endpoint: c.console_token_endpoint.clone(),
                })
            })
            .collect()
    }

    /// The origins the console connects to besides its own: for each issuer with a
    /// console client, the issuer's (discovery, and usually the token endpoint) and the
    /// configured token endpoint's. Origins that do not parse are left out.
    pub fn console_origins(&self) -> &[String] {
        &self.console_origins
    }

    fn origins_of_console_logins(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for login in self.console_logins() {
            for url in std::iter::once(&login.issuer).chain(login.token_endpoint.as_ref()) {
                if let Ok(u) = reqwest::Url::parse(url) {
                    let origin = u.origin();
                    if origin.is_tuple() && matches!(u.scheme(), "http" | "https") {
                        let o = origin.ascii_serialization();
                        if !out.contains(&o) {
                            out.push(o);
                        }
                    }
                }
            }
        }
        out
    }

    /// Whether `iss` is a configured issuer.
    pub fn knows(&self, iss: &str) -> bool {
        self.issuers.iter().any(|i| i.config.issuer == iss)
    }

    async fn fetch(&self, issuer: &IssuerKeys, cache: &mut KeyCache) -> Result<(), ApiError> {
        cache.fetched_at = Some(Instant::now());
        let set: JwkSet = self
            .http
            .get(&issuer.config.jwks_uri)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| {
                tracing::warn!(issuer = %issuer.config.issuer, error = %e, "fetching the JWKS failed");
                ApiError::Unauthorized("the token's issuer keys cannot be fetched".into())
            })?
            .json()
            .await
            .map_err(|e| {
                tracing::warn!(issuer = %issuer.config.issuer, error = %e, "the JWKS does not parse");
                ApiError::Unauthorized("the token's issuer keys cannot be read".into())
            })?;
        cache.keys = set
            .keys
            .iter()
            .filter_map(|jwk| {
                let kid = jwk.common.key_id.clone()?;
                DecodingKey::from_jwk(jwk).ok().map(|key| (kid, key))
            })
            .collect();
        tracing::info!(issuer = %issuer.config.issuer, keys = cache.keys.len(), "JWKS fetched");
        Ok(())
    }

    /// Verifies a token of a configured issuer.
    ///
    /// # Errors
    /// [`ApiError::Unauthorized`] naming why: unknown issuer or key id, an algorithm
    /// outside the allow-list, a bad signature, expiry, audience, a missing user claim.
    pub async fn verify(&self, token: &str, iss: &str) -> Result<OidcIdentity, ApiError> {
        let unauthorized = |why: String| ApiError::Unauthorized(why);
        let issuer = self
            .issuers
            .iter()
            .find(|i| i.config.issuer == iss)
            .ok_or_else(|| unauthorized("unknown token issuer".into()))?;
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| crate::auth::token_problem(&e))?;
        if !ALLOWED.contains(&header.alg) {
            return Err(unauthorized(format!(
                "algorithm {:?} is not accepted for external tokens",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| unauthorized("the token names no key id (kid)".into()))?;
        let key = {
            let mut cache = issuer.cache.lock().await;
            let interval = Duration::from_secs(
                issuer
                    .config
                    .min_refetch_seconds
                    .unwrap_or(MIN_REFETCH_SECONDS),
            );
            if !cache.keys.contains_key(&kid)
                && cache.fetched_at.is_none_or(|at| at.elapsed() >= interval)
            {
                self.fetch(issuer, &mut cache).await?;
            }
            cache.keys.get(&kid).cloned().ok_or_else(|| {
                unauthorized("the token's key id is not one of its issuer's keys".into())
            })?
        };
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&issuer.config.issuer]);
        validation.set_audience(&[&issuer.config.audience]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = jsonwebtoken::decode::<serde_json::Value>(token, &key, &validation)
            .map_err(|e| crate::auth::token_problem(&e))?
            .claims;
        let name = claims
            .get(&issuer.config.username_claim)
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                unauthorized(format!(
                    "the token has no {} claim to name the user",
                    issuer.config.username_claim
                ))
            })?
            .to_string();
        let role = issuer
            .config
            .role_claim
            .as_ref()
            .and_then(|c| claims.get(c))
            .and_then(serde_json::Value::as_str)
            .filter(|r| matches!(*r, "admin" | "operator" | "user"))
            .map(str::to_string);
        Ok(OidcIdentity { name, role })
    }
}

/// The unverified `iss` of a JWT, to choose the key to verify it with.
pub fn unverified_issuer(token: &str) -> Option<String> {
    jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(token)
        .ok()?
        .claims
        .get("iss")?
        .as_str()
        .map(str::to_string)
}
