//! Who calls the slurmrestd routes, and what the caller's credentials allow there.
//!
//! slurmrestd's clients send `X-SLURM-USER-TOKEN` (with `X-SLURM-USER-NAME`) or
//! `Authorization: Bearer`. The token is any token Berth's `/v1` accepts (a JWT, an API
//! token, an OIDC issuer's token), verified the same way ([`crate::auth::authenticate`],
//! once per request in [`crate::limits::protect`], which also rate-limits the principal).
//! `X-SLURM-USER-NAME`, when sent, must be the token's own user: otherwise 401, so the
//! header can never choose whom to act as.
//!
//! An API token's scope and a job's token are checked against the `/v1` request each
//! operation stands for ([`v1_equivalent`]): a job's token may list and submit its user's
//! jobs and read, update or cancel its own job here as on `/v1`, and nothing more.

use super::{errno, SlurmError};
use crate::auth::{job_token_allows, scope_allows, AuditSlot, Authenticated, Caller};
use crate::error::ApiError;
use crate::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};

/// The header with the user's name.
pub const USER_NAME: &str = "x-slurm-user-name";
/// The header with the user's token.
pub const USER_TOKEN: &str = "x-slurm-user-token";

/// The `Authorization` value to verify for a request to these routes: `Bearer` with
/// `X-SLURM-USER-TOKEN`'s token, or the request's own `Authorization`; `None` when it
/// carries neither.
///
/// # Errors
/// 401 when both are sent (one request, one identity) or the token is not visible ASCII.
pub fn credentials(headers: &HeaderMap) -> Result<Option<HeaderValue>, ApiError> {
    let token = headers.get(USER_TOKEN);
    let authorization = headers.get(axum::http::header::AUTHORIZATION);
    match (token, authorization) {
        (Some(_), Some(_)) => Err(ApiError::Unauthorized(
            "send X-SLURM-USER-TOKEN or Authorization, not both".into(),
        )),
        (Some(token), None) => {
            let token = token
                .to_str()
                .map_err(|_| ApiError::Unauthorized("X-SLURM-USER-TOKEN is not a token".into()))?
                .trim();
            HeaderValue::from_str(&format!("Bearer {token}"))
                .map(Some)
                .map_err(|_| ApiError::Unauthorized("X-SLURM-USER-TOKEN is not a token".into()))
        }
        (None, Some(authorization)) => Ok(Some(authorization.clone())),
        (None, None) => Ok(None),
    }
}

/// Checks `X-SLURM-USER-NAME` against the verified caller: absent, or the caller's own
/// name.
///
/// # Errors
/// 401 when it names anyone else.
pub fn check_user_name(headers: &HeaderMap, caller: Caller) -> Result<Caller, ApiError> {
    match headers.get(USER_NAME) {
        None => Ok(caller),
        Some(name) if name.as_bytes() == caller.name.as_bytes() => Ok(caller),
        Some(_) => Err(ApiError::Unauthorized(
            "X-SLURM-USER-NAME is not the user of X-SLURM-USER-TOKEN: a token acts only as \
             its own user"
                .into(),
        )),
    }
}

/// The `/v1` request a slurmrestd operation stands for, for scope and job-token checks
/// (`None`: an operation with no `/v1` counterpart, refused to scoped tokens).
pub fn v1_equivalent(method: &Method, path: &str) -> Option<(Method, String)> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let get = |p: &str| Some((Method::GET, p.to_string()));
    match (method, segments.as_slice()) {
        (&Method::GET, ["slurm", _, "ping"]) => get("/v1/whoami"),
        (&Method::GET, ["slurm", _, "diag"]) => get("/v1/nodes"),
        (&Method::POST, ["slurm", _, "job", "submit"]) => {
            Some((Method::POST, "/v1/jobs".to_string()))
        }
        (&Method::GET, ["slurm", _, "jobs"]) => get("/v1/jobs"),
        (&Method::GET, ["slurm", _, "job", id]) => get(&format!("/v1/jobs/{id}")),
        (&Method::POST, ["slurm", _, "job", id]) => Some((Method::PATCH, format!("/v1/jobs/{id}"))),
        (&Method::DELETE, ["slurm", _, "job", id]) => {
            Some((Method::POST, format!("/v1/jobs/{id}/cancel")))
        }
        (&Method::GET, ["slurm", _, "nodes"]) => get("/v1/nodes"),
        (&Method::GET, ["slurm", _, "node", name]) => get(&format!("/v1/nodes/{name}")),
        (&Method::GET, ["slurm", _, "partitions"]) => get("/v1/partitions"),
        (&Method::GET, ["slurm", _, "partition", name]) => get(&format!("/v1/partitions/{name}")),
        (&Method::GET, ["slurm", _, "reservations"]) => get("/v1/reservations"),
        (&Method::GET, ["slurm", _, "reservation", name]) => {
            get(&format!("/v1/reservations/{name}"))
        }
        (&Method::GET, ["slurm", _, "shares"]) => get("/v1/fairshare"),
        (&Method::GET, ["slurmdb", _, "jobs" | "job", ..]) => get("/v1/accounting/jobs"),
        (&Method::GET, ["slurmdb", _, "accounts"]) => get("/v1/accounts"),
        (&Method::GET, ["slurmdb", _, "users"]) => get("/v1/users"),
        (&Method::GET, ["slurmdb", _, "qos"]) => get("/v1/qos"),
        _ => None,
    }
}

/// The caller of a slurmrestd route: verified, not a node, and allowed by its token's
/// scope and (for a job's token) by the job-token rules of the `/v1` request the
/// operation stands for.
#[derive(Debug, Clone)]
pub struct SlurmCaller(pub Caller);

impl FromRequestParts<AppState> for SlurmCaller {
    type Rejection = SlurmError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, SlurmError> {
        let caller = match Authenticated::take_from(parts) {
            Some(outcome) => outcome?,
            None => match credentials(&parts.headers)? {
                Some(header) => {
                    let caller = crate::auth::authenticate(state, &header).await?;
                    check_user_name(&parts.headers, caller)?
                }
                None => {
                    return Err(SlurmError::new(
                        StatusCode::UNAUTHORIZED,
                        errno::AUTH_FAIL,
                        "send X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (a Berth token of that \
                         user), or Authorization: Bearer",
                        "X-SLURM-USER-TOKEN",
                    ))
                }
            },
        };
        AuditSlot::record(parts, &caller);
        caller.require_person()?;
        if caller.scope.is_some() || caller.job_id.is_some() {
            let allowed = v1_equivalent(&parts.method, parts.uri.path()).is_some_and(|(m, p)| {
                caller.scope.is_none_or(|s| scope_allows(s, &m, &p))
                    && (caller.job_id.is_none() || job_token_allows(&m, &p))
            });
            if !allowed {
                return Err(ApiError::Forbidden(format!(
                    "this token does not allow {} {} (as on /v1: a job's token reads, updates \
                     and cancels its own job and lists and submits jobs; a read-only API \
                     token only reads)",
                    parts.method,
                    parts.uri.path()
                ))
                .into());
            }
        }
        Ok(SlurmCaller(caller))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_stands_for_its_v1_request() {
        let cases = [
            (
                Method::GET,
                "/slurm/v0.0.44/ping/",
                Some((Method::GET, "/v1/whoami")),
            ),
            (
                Method::POST,
                "/slurm/v0.0.44/job/submit",
                Some((Method::POST, "/v1/jobs")),
            ),
            (
                Method::GET,
                "/slurm/v0.0.44/job/7",
                Some((Method::GET, "/v1/jobs/7")),
            ),
            (
                Method::POST,
                "/slurm/v0.0.44/job/7",
                Some((Method::PATCH, "/v1/jobs/7")),
            ),
            (
                Method::DELETE,
                "/slurm/v0.0.44/job/7",
                Some((Method::POST, "/v1/jobs/7/cancel")),
            ),
            (
                Method::GET,
                "/slurm/v0.0.44/nodes/",
                Some((Method::GET, "/v1/nodes")),
            ),
            (
                Method::GET,
                "/slurmdb/v0.0.44/job/7",
                Some((Method::GET, "/v1/accounting/jobs")),
            ),
            (
                Method::GET,
                "/slurmdb/v0.0.44/users/",
                Some((Method::GET, "/v1/users")),
            ),
            (Method::DELETE, "/slurm/v0.0.44/nodes/", None),
            (Method::POST, "/slurmdb/v0.0.44/accounts/", None),
        ];
        for (method, path, want) in cases {
            let want = want.map(|(m, p)| (m, p.to_string()));
            assert_eq!(v1_equivalent(&method, path), want, "{method} {path}");
        }
    }

    #[test]
    fn a_job_token_gains_nothing_here() {
        // What a job's token may do on these routes is what it may do on /v1.
        let allowed = |m: Method, p: &str| {
            v1_equivalent(&m, p).is_some_and(|(m, p)| job_token_allows(&m, &p))
        };
        assert!(allowed(Method::GET, "/slurm/v0.0.44/jobs/"));
        assert!(allowed(Method::POST, "/slurm/v0.0.44/job/submit"));
        assert!(allowed(Method::DELETE, "/slurm/v0.0.44/job/3"));
        assert!(allowed(Method::GET, "/slurmdb/v0.0.44/jobs/"));
        assert!(!allowed(Method::GET, "/slurm/v0.0.44/nodes/"));
        assert!(!allowed(Method::GET, "/slurm/v0.0.44/diag/"));
        assert!(!allowed(Method::GET, "/slurm/v0.0.44/shares"));
        assert!(!allowed(Method::GET, "/slurmdb/v0.0.44/users/"));
        assert!(!allowed(Method::GET, "/slurmdb/v0.0.44/accounts/"));
        assert!(!allowed(Method::GET, "/slurmdb/v0.0.44/qos/"));
    }

    #[test]
    fn the_name_header_never_picks_the_user() {
        let caller = Caller {
            name: "bob".into(),
            role: berth_core::auth::Role::User,
            token_id: None,
            scope: None,
            job_id: None,
        };
        let mut headers = HeaderMap::new();
        assert!(check_user_name(&headers, caller.clone()).is_ok());
        headers.insert(USER_NAME, HeaderValue::from_static("bob"));
        assert!(check_user_name(&headers, caller.clone()).is_ok());
        headers.insert(USER_NAME, HeaderValue::from_static("alice"));
        assert!(check_user_name(&headers, caller).is_err());
        let mut both = HeaderMap::new();
        both.insert(USER_TOKEN, HeaderValue::from_static("t"));
        both.insert(
            axum::http::header::AUTHORIZATION,
            HeaderValue::from_static("Bearer t"),
        );
        assert!(credentials(&both).is_err());
    }
}
