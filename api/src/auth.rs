//! Bearer-token authentication: HS256 JWTs with Berth's issuer and audience, an explicit
//! algorithm allow-list and a small leeway.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use berth_core::auth::{Claims, Role, AUDIENCE, ISSUER};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

/// Seconds of clock skew tolerated on `exp`/`nbf`.
pub const LEEWAY_SECONDS: u64 = 30;

/// Who is calling: the verified claims of the bearer token.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user (or node) name.
    pub name: String,
    /// The role.
    pub role: Role,
    /// For a job-scoped token (the one a job receives as `BERTH_TOKEN`): its job.
    pub job_id: Option<i64>,
}

impl Caller {
    /// Admins and operators see every job.
    pub fn sees_all_jobs(&self) -> bool {
        matches!(self.role, Role::Admin | Role::Operator)
    }

    /// Refuses node tokens on user routes.
    pub fn require_person(&self) -> Result<(), ApiError> {
        if self.role == Role::Node {
            return Err(ApiError::Forbidden(
                "node tokens may only use the node routes".into(),
            ));
        }
        Ok(())
    }

    /// Refuses a job-scoped token acting on another job than its own (as 404, the job is
    /// invisible to it).
    pub fn require_job(&self, id: i64) -> Result<(), ApiError> {
        match self.job_id {
            Some(own) if own != id => Err(ApiError::NotFound(format!("no job {id}"))),
            _ => Ok(()),
        }
    }

    /// Refuses job-scoped tokens (routes a job has no business calling).
    pub fn require_unscoped(&self) -> Result<(), ApiError> {
        if self.job_id.is_some() {
            return Err(ApiError::Forbidden(
                "a job's token may only act on its own job and submit jobs".into(),
            ));
        }
        Ok(())
    }

    /// Allows node tokens (and admins) on the node routes; a node token names its node
    /// (`node:<name>`) or any node (`node:*`).
    pub fn require_node(&self, node: &str) -> Result<(), ApiError> {
        match self.role {
            Role::Admin => Ok(()),
            Role::Node if self.name == "node:*" || self.name == format!("node:{node}") => Ok(()),
            _ => Err(ApiError::Forbidden(format!(
                "not allowed to act as node {node}"
            ))),
        }
    }
}

/// The keys the api verifies with (and mints job tokens with).
#[derive(Clone)]
pub struct Keys {
    decoding: DecodingKey,
    validation: Validation,
    secret: std::sync::Arc<str>,
}

impl Keys {
    /// Keys from an HS256 shared secret.
    pub fn from_secret(secret: &str) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.algorithms = vec![Algorithm::HS256];
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        Keys {
            decoding: DecodingKey::from_secret(secret.as_bytes()),
            validation,
            secret: secret.into(),
        }
    }

    /// Mints a token scoped to job `job_id` of `user` (see [`mint_job_token`]).
    pub fn mint_job_token(&self, user: &str, job_id: i64, ttl_seconds: i64) -> String {
        mint_job_token(&self.secret, user, job_id, ttl_seconds)
    }

    /// Verifies a token.
    ///
    /// # Errors
    /// [`ApiError::Unauthorized`] naming why (expired, bad signature, wrong audience …).
    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|e| ApiError::Unauthorized(format!("invalid bearer token: {e}")))
    }
}

/// Mints a token signed with the HS256 `secret` for `sub` with `role`, valid for
/// `ttl_seconds` from now.
pub fn mint_token(secret: &str, sub: &str, role: Role, ttl_seconds: i64) -> String {
    mint(secret, sub, role, ttl_seconds, None)
}

/// Mints the token a running job receives (`BERTH_TOKEN`): user role for the job's
/// `user`, scoped to `job_id`, valid for `ttl_seconds`.
pub fn mint_job_token(secret: &str, user: &str, job_id: i64, ttl_seconds: i64) -> String {
    mint(secret, user, Role::User, ttl_seconds, Some(job_id))
}

fn mint(secret: &str, sub: &str, role: Role, ttl_seconds: i64, job_id: Option<i64>) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = Claims {
        sub: sub.to_string(),
        role,
        iss: ISSUER.to_string(),
        aud: AUDIENCE.to_string(),
        iat: now,
        exp: now + ttl_seconds,
        job_id,
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("HS256 signing with an in-memory key cannot fail")
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| ApiError::Unauthorized("missing Authorization header".into()))?;
        let token = header
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .ok_or_else(|| {
                ApiError::Unauthorized("expected `Authorization: Bearer <token>`".into())
            })?;
        let claims = state.keys.verify(token.trim())?;
        Ok(Caller {
            name: claims.sub,
            role: claims.role,
            job_id: claims.job_id,
        })
    }
}
