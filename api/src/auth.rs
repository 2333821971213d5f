//! Bearer-token authentication and the caller's rights.
//!
//! Two kinds of bearer token are accepted:
//! * JWTs signed with Berth's HS256 secret: an explicit algorithm allow-list (so `alg: none`
//!   and algorithm confusion are refused), `iss`, `aud`, `exp` and `nbf` checked with a
//!   small leeway;
//! * JWTs of external OpenID Connect issuers, verified with their JWKS ([`crate::oidc`]);
//! * API tokens (`berth_…`), stored as SHA-256 hashes in `api_tokens`, scoped (read-only,
//!   submit, admin), expiring and revocable; each use records its time.
//!
//! What a caller may see beyond their own jobs (the accounts they coordinate) is looked up
//! from the memberships when a handler needs it.
//!
//! A job's token (`BERTH_TOKEN` inside a job, minted for one run of it) is a Berth JWT
//! with `job_id` and `run` claims. It authenticates only while its job is RUNNING in that
//! run: once the run ends, the job is requeued (a new run) or cancelled, it is refused
//! (401). While it lives it may do only what [`job_token_allows`] lists (read, update,
//! cancel and requeue its own job, run steps in it, list and submit its user's jobs); it
//! never creates API tokens or bootstrap tokens and never acts on another job (404).
//!
//! [`authenticate`] runs once per request, in [`crate::limits::protect`] (which limits
//! the rate per principal once it knows who calls), and leaves its outcome for the
//! [`Caller`] extractor.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Method;
use berth_core::auth::{Claims, Role, AUDIENCE, ISSUER};
use berth_core::identity::{TokenScope, UserRole};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use std::sync::{Arc, Mutex};

/// Seconds of clock skew tolerated on `exp`/`nbf`.
pub const LEEWAY_SECONDS: u64 = 30;

/// The prefix that tells API tokens from JWTs.
pub const API_TOKEN_PREFIX: &str = "berth_";
/// The prefix of node credentials (checked before [`API_TOKEN_PREFIX`]).
pub const NODE_CREDENTIAL_PREFIX: &str = "berth_node_";
/// The prefix of node bootstrap tokens, which only `POST /v1/nodes/join` accepts.
pub const BOOTSTRAP_TOKEN_PREFIX: &str = "berth_boot_";

/// Who is calling: the verified identity behind the bearer token.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The user (or node) name.
    pub name: String,
    /// The role.
    pub role: Role,
    /// The API token used, when the caller used one.
    pub token_id: Option<i64>,
    /// The API token's scope, when the caller used one.
    pub scope: Option<TokenScope>,
    /// For a job-scoped token (the one a job receives as `BERTH_TOKEN`): its job.
    pub job_id: Option<i64>,
}

impl Caller {
    /// Admins and operators see every job.
    pub fn sees_all_jobs(&self) -> bool {
        matches!(self.role, Role::Admin | Role::Operator)
    }

    /// Refuses node tokens on user routes.
    ///
    /// # Errors
    /// 403 for a node token.
    pub fn require_person(&self) -> Result<(), ApiError> {
        if self.role == Role::Node {
            return Err(ApiError::Forbidden(
                "node tokens may only use the node routes".into(),
            ));
        }
        Ok(())
    }

    /// Allows admins and operators only.
    ///
    /// # Errors
    /// 403 for anyone else.
    pub fn require_staff(&self) -> Result<(), ApiError> {
        if self.sees_all_jobs() {
            Ok(())
        } else {
            Err(ApiError::Forbidden(
                "this needs the admin or operator role".into(),
            ))
        }
    }

    /// Allows admins only.
    ///
    /// # Errors
    /// 403 for anyone else.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.role == Role::Admin {
            Ok(())
        } else {
            Err(ApiError::Forbidden("this needs the admin role".into()))
        }
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
    ///
    /// # Errors
    /// 403 for anyone else.
    pub fn require_node(&self, node: &str) -> Result<(), ApiError> {
        match self.role {
            Role::Admin => Ok(()),
            Role::Node if self.name == "node:*" || self.name == format!("node:{node}") => Ok(()),
            _ => Err(ApiError::Forbidden(format!(
                "not allowed to act as node {node}"
            ))),
        }
    }

    /// The node a node token is limited to (`None` for `node:*` and for people).
    pub fn own_node(&self) -> Option<&str> {
        if self.role != Role::Node {
            return None;
        }
        self.name.strip_prefix("node:").filter(|n| *n != "*")
    }

    /// The accounts whose jobs this caller sees besides their own: those they coordinate
    /// and their sub-accounts (empty for admins and operators, who see everything).
    ///
    /// # Errors
    /// 503 when the database is unreachable.
    pub async fn coordinated_accounts(&self, state: &AppState) -> Result<Vec<String>, ApiError> {
        if self.sees_all_jobs() || self.role == Role::Node {
            return Ok(Vec::new());
        }
        Ok(berth_db::membership::membership_coordinated_accounts(&state.pool, &self.name).await?)
    }
}

/// The keys the api verifies Berth's own tokens with: an HS256 secret, an EdDSA or RS256
/// public key (its private half signs, `berth token mint`), or both. The token's `alg`
/// picks the key, and only these algorithms are accepted, so neither `alg: none` nor a
/// token signed with the public key as an HMAC secret can pass.
#[derive(Clone, Default)]
pub struct Keys {
    hs256: Option<DecodingKey>,
    asymmetric: Option<(Algorithm, DecodingKey)>,
    /// The HS256 secret, kept to mint job-scoped tokens.
    secret: Option<std::sync::Arc<str>>,
}

fn berth_validation(alg: Algorithm) -> Validation {
    let mut validation = Validation::new(alg);
    validation.algorithms = vec![alg];
    validation.set_issuer(&[ISSUER]);
    validation.set_audience(&[AUDIENCE]);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation
}

impl Keys {
    /// Keys from an HS256 shared secret.
    pub fn from_secret(secret: &str) -> Self {
        Keys {
            hs256: Some(DecodingKey::from_secret(secret.as_bytes())),
            asymmetric: None,
            secret: Some(secret.into()),
        }
    }

    /// Adds a public key (PEM, `PUBLIC KEY`): Ed25519 verifies EdDSA tokens, RSA RS256.
    ///
    /// # Errors
    /// When the PEM holds neither an Ed25519 nor an RSA public key.
    pub fn with_public_key_pem(mut self, pem: &[u8]) -> Result<Self, String> {
        let key = match DecodingKey::from_ed_pem(pem) {
            Ok(key) => (Algorithm::EdDSA, key),
            Err(_) => DecodingKey::from_rsa_pem(pem)
                .map(|key| (Algorithm::RS256, key))
                .map_err(|e| format!("not an Ed25519 or RSA public key: {e}"))?,
        };
        self.asymmetric = Some(key);
        Ok(self)
    }

    /// Whether any key is configured.
    pub fn is_empty(&self) -> bool {
        self.hs256.is_none() && self.asymmetric.is_none()
    }

    /// Mints a token scoped to run `run` of job `job_id` (of `incarnation`) of `user`
    /// (see [`mint_job_token`]); `None` when no HS256 secret is configured.
    pub fn mint_job_token(&self, user: &str, job: JobRun, ttl_seconds: i64) -> Option<String> {
        self.secret
            .as_deref()
            .map(|secret| mint_job_token(secret, user, job, ttl_seconds))
    }

    /// The HS256 secret, when one is configured (it also signs run grants,
    /// [`crate::run_grant`]).
    pub(crate) fn hs256_secret(&self) -> Option<&str> {
        self.secret.as_deref()
    }

    /// Verifies a token.
    ///
    /// # Errors
    /// [`ApiError::Unauthorized`] naming why (expired, bad signature, wrong audience, an
    /// algorithm with no key …), never quoting the token.
    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| token_problem(&e))?;
        let key = match header.alg {
            Algorithm::HS256 => self.hs256.as_ref(),
            alg => self
                .asymmetric
                .as_ref()
                .filter(|(a, _)| *a == alg)
                .map(|(_, key)| key),
        }
        .ok_or_else(|| {
            ApiError::Unauthorized(format!(
                "invalid bearer token: algorithm {:?} is not accepted",
                header.alg
            ))
        })?;
        jsonwebtoken::decode::<Claims>(token, key, &berth_validation(header.alg))
            .map(|data| data.claims)
            .map_err(|e| token_problem(&e))
    }
}

/// Why a bearer token was refused, in words a user can act on (never the library's
/// names, never the token): expired → mint one or log in again; a signature or audience
/// of another cluster; not a token at all.
pub fn token_problem(e: &jsonwebtoken::errors::Error) -> ApiError {
    use jsonwebtoken::errors::ErrorKind;
    let why = match e.kind() {
        ErrorKind::ExpiredSignature => {
            "the token has expired: mint a new one (`berth token create`, or `berth token \
             mint` with the cluster's key) or log in again"
        }
        ErrorKind::ImmatureSignature => "the token is not valid yet (its nbf is in the future)",
        ErrorKind::InvalidSignature => {
            "the token's signature does not verify: it was signed by another cluster or key"
        }
        ErrorKind::InvalidAudience => {
            "the token is meant for another service (its aud is not berth)"
        }
        ErrorKind::InvalidIssuer => "the token comes from an issuer this cluster does not trust",
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            "the token's signing algorithm is not accepted here"
        }
        ErrorKind::MissingRequiredClaim(_) => "the token lacks a claim Berth needs (exp, sub, aud)",
        ErrorKind::InvalidToken
        | ErrorKind::Base64(_)
        | ErrorKind::Json(_)
        | ErrorKind::Utf8(_) => {
            "the bearer token is not a token Berth issued (it does not parse as a JWT or a \
             berth_ API token); check BERTH_TOKEN or the pasted value"
        }
        _ => "the bearer token cannot be verified",
    };
    ApiError::Unauthorized(why.to_string())
}

/// Mints a token signed with a private key (PEM, `PRIVATE KEY`: Ed25519 → EdDSA, RSA →
/// RS256) for `sub` with `role`, valid for `ttl_seconds` from now.
///
/// # Errors
/// When the PEM holds neither an Ed25519 nor an RSA private key.
pub fn mint_token_with_key(
    private_pem: &[u8],
    sub: &str,
    role: Role,
    ttl_seconds: i64,
) -> Result<String, String> {
    let (alg, key) = match EncodingKey::from_ed_pem(private_pem) {
        Ok(key) => (Algorithm::EdDSA, key),
        Err(_) => EncodingKey::from_rsa_pem(private_pem)
            .map(|key| (Algorithm::RS256, key))
            .map_err(|e| format!("not an Ed25519 or RSA private key: {e}"))?,
    };
    let now = chrono::Utc::now().timestamp();
    let claims = Claims {
        sub: sub.to_string(),
        role,
        iss: ISSUER.to_string(),
        aud: AUDIENCE.to_string(),
        iat: now,
        exp: now.saturating_add(ttl_seconds),
        job_id: None,
        run: None,
        inc: None,
    };
    jsonwebtoken::encode(&Header::new(alg), &claims, &key).map_err(|e| e.to_string())
}

/// Mints a token signed with the HS256 `secret` for `sub` with `role`, valid for
/// `ttl_seconds` from now.
pub fn mint_token(secret: &str, sub: &str, role: Role, ttl_seconds: i64) -> String {
    mint(secret, sub, role, ttl_seconds, None)
}

/// The job run a job's token is minted for: its id, run and incarnation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRun {
    /// The job.
    pub job_id: i64,
    /// The run (its restart count).
    pub run: u32,
    /// The job's incarnation ([`berth_core::wire::Incarnation`]).
    pub incarnation: berth_core::wire::Incarnation,
}

/// Mints the token a running job receives (`BERTH_TOKEN`): user role for the job's
/// `user`, scoped to one run of one incarnation of the job, valid for at most
/// `ttl_seconds` (and only while that run is RUNNING, see the module).
pub fn mint_job_token(secret: &str, user: &str, job: JobRun, ttl_seconds: i64) -> String {
    mint(secret, user, Role::User, ttl_seconds, Some(job))
}

fn mint(secret: &str, sub: &str, role: Role, ttl_seconds: i64, job: Option<JobRun>) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = Claims {
        sub: sub.to_string(),
        role,
        iss: ISSUER.to_string(),
        aud: AUDIENCE.to_string(),
        iat: now,
        exp: now.saturating_add(ttl_seconds),
        job_id: job.map(|j| j.job_id),
        run: job.map(|j| j.run),
        inc: job.map(|j| j.incarnation),
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("HS256 signing with an in-memory key cannot fail")
}

/// The SHA-256 of an API token, lower-case hex: what `api_tokens` stores.
pub fn api_token_hash(token: &str) -> String {
    berth_db::node_credential::secret_hash(token)
}

/// A new API token: [`API_TOKEN_PREFIX`] and 43 characters of base62 (256 bits).
pub fn api_token_generate() -> String {
    secret_with_prefix(API_TOKEN_PREFIX)
}

/// `prefix` and 43 characters of base62 (256 bits).
pub fn secret_with_prefix(prefix: &str) -> String {
    berth_db::node_credential::secret_with_prefix(prefix)
}

/// Where the caller's identity is left for the audit middleware (set in the request's
/// extensions by the middleware, filled by the [`Caller`] extractor).
#[derive(Debug, Clone, Default)]
pub struct AuditSlot(pub Arc<Mutex<Option<Caller>>>);

/// Whether an API token of `scope` may make this request: `read-only` reads only,
/// `submit` also submits and cancels jobs, `admin` is limited by the owner's role alone.
pub(crate) fn scope_allows(scope: TokenScope, method: &Method, path: &str) -> bool {
    let read = matches!(*method, Method::GET | Method::HEAD);
    match scope {
        TokenScope::ReadOnly => read,
        TokenScope::Submit => read || path == "/v1/jobs" || path.starts_with("/v1/jobs/"),
        TokenScope::Admin => true,
    }
}

/// Whether a job's token may make this request (by the path's shape; which job a path
/// names is checked by the handlers, another job being 404): list and submit its user's
/// jobs (and test a submission, `sbatch --test-only`); read its own job, its output, steps, stats, GPU samples, script and priority; update it (`scontrol
/// update JobId=$SLURM_JOB_ID TimeLimit=…`, with a user's rights: lower only), cancel
/// requeue and signal it; run steps in it; cancel it through `POST /v1/jobs/cancel`; read its
/// user's job accounting (`sacct` in a batch script). Nothing else: no tokens, users,
/// accounts, nodes, partitions, QOS or audit log, no hold, release or top.
pub fn job_token_allows(method: &Method, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let read = matches!(*method, Method::GET | Method::HEAD);
    match segments.as_slice() {
        ["", "v1", "jobs"] => read || *method == Method::POST,
        ["", "v1", "jobs", "cancel" | "will-run"] => *method == Method::POST,
        ["", "v1", "jobs", _id] => read || *method == Method::PATCH,
        ["", "v1", "jobs", _id, "output" | "stats" | "gpu-samples" | "script" | "priority"] => read,
        ["", "v1", "jobs", _id, "steps"] => read || *method == Method::POST,
        ["", "v1", "jobs", _id, "steps", _step] => read,
        ["", "v1", "jobs", _id, "steps", _step, "cancel"] => *method == Method::POST,
        ["", "v1", "jobs", _id, "steps", _step, "output"] => read,
        ["", "v1", "jobs", _id, "cancel" | "requeue" | "signal"] => *method == Method::POST,
        // `sacct` and `squeue` inside a job (its user's view, as the job list), who it
        // is, and the cluster's name (their `-M` and documents).
        ["", "v1", "accounting", "jobs"]
        | ["", "v1", "queue"]
        | ["", "v1", "whoami"]
        | ["", "v1", "cluster"] => read,
        _ => false,
    }
}

async fn api_token_caller(state: &AppState, token: &str) -> Result<Caller, ApiError> {
    let row =
        berth_db::api_token::api_token_use(&state.pool, &api_token_hash(token), chrono::Utc::now())
            .await?
            .ok_or_else(|| {
                ApiError::Unauthorized("unknown, expired or revoked API token".into())
            })?;
    let role = UserRole::parse(&row.role)
        .map(Role::from)
        .ok_or_else(|| ApiError::Unauthorized("API token with an unknown role".into()))?;
    Ok(Caller {
        name: row.user_name,
        role,
        token_id: Some(row.id),
        scope: TokenScope::parse(&row.scope),
        job_id: None,
    })
}

/// Refuses a job's token whose run is over: the job must be RUNNING in the run the token
/// was minted for.
async fn require_live_run(state: &AppState, claims: &Claims, job_id: i64) -> Result<(), ApiError> {
    let Some(run) = claims.run.and_then(|r| i32::try_from(r).ok()) else {
        return Err(ApiError::Unauthorized(format!(
            "this token of job {job_id} names no run (minted by an older api); it is not accepted"
        )));
    };
    let row = berth_db::job::job_get(&state.pool, job_id).await?;
    // Another job that took this id (a database failover handed it out again) is not the
    // token's: its incarnation differs.
    if let Some(row) = &row {
        if !berth_core::wire::same_incarnation(claims.inc, Some(row.incarnation)) {
            tracing::warn!(job.id = job_id, job.run = run, user = %claims.sub,
                "a job token of another incarnation of this job id refused");
            return Err(ApiError::Unauthorized(format!(
                "this token belonged to another job {job_id} (before a database failover), which has ended"
            )));
        }
    }
    let live = row.is_some_and(|row| {
        row.state == "RUNNING" && row.restart_count == run && row.user_name == claims.sub
    });
    if live {
        Ok(())
    } else {
        Err(ApiError::Unauthorized(format!(
            "this token belonged to run {run} of job {job_id}, which has ended"
        )))
    }
}

/// Who `authorization` (an `Authorization` header's value) names, verified: a node
/// credential, an API token (its use recorded), an external issuer's JWT, or a Berth JWT
/// (a job's token only while its run is RUNNING).
///
/// # Errors
/// 401 naming why (never quoting the token); 503 when the database is unreachable.
pub async fn authenticate(
    state: &AppState,
    authorization: &axum::http::HeaderValue,
) -> Result<Caller, ApiError> {
    let token = authorization
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .ok_or_else(|| ApiError::Unauthorized("expected `Authorization: Bearer <token>`".into()))?;
    let external =
        crate::oidc::unverified_issuer(token).filter(|iss| iss != ISSUER && state.oidc.knows(iss));
    Ok(if token.starts_with(NODE_CREDENTIAL_PREFIX) {
        let node =
            berth_db::node_credential::node_credential_node(&state.pool, &api_token_hash(token))
                .await?
                .ok_or_else(|| {
                    ApiError::Unauthorized("unknown or revoked node credential".into())
                })?;
        Caller {
            name: format!("node:{node}"),
            role: Role::Node,
            token_id: None,
            scope: None,
            job_id: None,
        }
    } else if token.starts_with(BOOTSTRAP_TOKEN_PREFIX) {
        return Err(ApiError::Unauthorized(
            "a bootstrap token only joins a node (POST /v1/nodes/join)".into(),
        ));
    } else if token.starts_with(API_TOKEN_PREFIX) {
        api_token_caller(state, token).await?
    } else if let Some(iss) = external {
        let identity = state.oidc.verify(token, &iss).await?;
        let role = match identity.role {
            Some(role) => Some(role),
            None => berth_db::user::user_get(&state.pool, &identity.name)
                .await?
                .map(|u| u.role),
        };
        Caller {
            name: identity.name,
            role: role
                .as_deref()
                .and_then(UserRole::parse)
                .map(Role::from)
                .unwrap_or(Role::User),
            token_id: None,
            scope: None,
            job_id: None,
        }
    } else {
        let claims = state.keys.verify(token)?;
        if let Some(job_id) = claims.job_id {
            require_live_run(state, &claims, job_id).await?;
        }
        Caller {
            name: claims.sub,
            role: claims.role,
            token_id: None,
            scope: None,
            job_id: claims.job_id,
        }
    })
}

/// The outcome of [`authenticate`] for one request, left in its extensions by
/// [`crate::limits::protect`] for the [`Caller`] extractor (which takes it).
#[derive(Clone)]
pub struct Authenticated(Arc<Mutex<Option<Result<Caller, ApiError>>>>);

impl Authenticated {
    /// Wraps an outcome.
    pub fn new(outcome: Result<Caller, ApiError>) -> Self {
        Authenticated(Arc::new(Mutex::new(Some(outcome))))
    }

    fn take(&self) -> Option<Result<Caller, ApiError>> {
        self.0.lock().ok().and_then(|mut o| o.take())
    }

    /// The outcome [`crate::limits::protect`] left in this request, taken (`None` when
    /// the request carried no credentials, or it was taken already).
    pub(crate) fn take_from(parts: &Parts) -> Option<Result<Caller, ApiError>> {
        parts.extensions.get::<Authenticated>().and_then(Self::take)
    }
}

impl AuditSlot {
    /// Leaves `caller` for the audit middleware, when it records this request.
    pub(crate) fn record(parts: &Parts, caller: &Caller) {
        if let Some(slot) = parts.extensions.get::<AuditSlot>() {
            if let Ok(mut slot) = slot.0.lock() {
                *slot = Some(caller.clone());
            }
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = match Authenticated::take_from(parts) {
            Some(outcome) => outcome?,
            None => {
                let header = parts
                    .headers
                    .get(axum::http::header::AUTHORIZATION)
                    .ok_or_else(|| ApiError::Unauthorized("missing Authorization header".into()))?;
                authenticate(state, header).await?
            }
        };
        AuditSlot::record(parts, &caller);
        if let Some(scope) = caller.scope {
            if !scope_allows(scope, &parts.method, parts.uri.path()) {
                return Err(ApiError::Forbidden(format!(
                    "this API token's scope ({}) does not allow {} {}",
                    scope.as_str(),
                    parts.method,
                    parts.uri.path()
                )));
            }
        }
        if caller.job_id.is_some() && !job_token_allows(&parts.method, parts.uri.path()) {
            return Err(ApiError::Forbidden(format!(
                "a job's token may only read, update, cancel and requeue its own job, run \
                 its steps, list and submit jobs, read their accounting and the cluster's \
                 name; not {} {}",
                parts.method,
                parts.uri.path()
            )));
        }
        Ok(caller)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        use TokenScope::*;
        assert!(scope_allows(ReadOnly, &Method::GET, "/v1/jobs"));
        assert!(!scope_allows(ReadOnly, &Method::POST, "/v1/jobs"));
        assert!(scope_allows(Submit, &Method::POST, "/v1/jobs"));
        assert!(scope_allows(Submit, &Method::POST, "/v1/jobs/3/cancel"));
        assert!(!scope_allows(Submit, &Method::POST, "/v1/tokens"));
        assert!(!scope_allows(Submit, &Method::POST, "/v1/jobsx"));
        assert!(scope_allows(Admin, &Method::DELETE, "/v1/users/bob"));
    }

    #[test]
    fn job_tokens_reach_their_job_and_submission_only() {
        let allowed = [
            (Method::GET, "/v1/jobs"),
            (Method::POST, "/v1/jobs"),
            (Method::GET, "/v1/jobs/7"),
            (Method::GET, "/v1/jobs/7/output"),
            (Method::GET, "/v1/jobs/7/stats"),
            (Method::GET, "/v1/jobs/7/priority"),
            (Method::GET, "/v1/jobs/7/steps"),
            (Method::POST, "/v1/jobs/7/steps"),
            (Method::GET, "/v1/jobs/7/steps/0"),
            (Method::GET, "/v1/jobs/7/steps/0/output"),
            (Method::POST, "/v1/jobs/7/cancel"),
            (Method::POST, "/v1/jobs/7/requeue"),
            (Method::PATCH, "/v1/jobs/7"),
            (Method::POST, "/v1/jobs/cancel"),
            (Method::GET, "/v1/accounting/jobs"),
            (Method::GET, "/v1/whoami"),
        ];
        for (m, p) in allowed {
            assert!(job_token_allows(&m, p), "{m} {p}");
        }
        let refused = [
            (Method::POST, "/v1/tokens"),
            (Method::GET, "/v1/tokens"),
            (Method::DELETE, "/v1/tokens/1"),
            (Method::POST, "/v1/nodes/bootstrap-tokens"),
            (Method::POST, "/v1/jobs/7/output"),
            (Method::POST, "/v1/jobs/7/steps/0/output"),
            (Method::POST, "/v1/jobs/7/hold"),
            (Method::GET, "/v1/usage"),
            (Method::GET, "/v1/events"),
            (Method::POST, "/v1/webhooks"),
            (Method::POST, "/v1/jobs/7/release"),
            (Method::POST, "/v1/jobs/7/top"),
            (Method::POST, "/v1/jobs/7/tasks/1/cancel"),
            (Method::POST, "/v1/jobs/hold"),
            (Method::POST, "/v1/jobs/release"),
            (Method::GET, "/v1/users/u"),
            (Method::GET, "/v1/accounts"),
            (Method::GET, "/v1/nodes"),
            (Method::PUT, "/v1/qos/x"),
            (Method::GET, "/v1/audit"),
            (Method::DELETE, "/v1/jobs/7"),
        ];
        for (m, p) in refused {
            assert!(!job_token_allows(&m, p), "{m} {p}");
        }
    }

    #[test]
    fn generated_tokens_are_distinct_and_hash_to_64_hex() {
        let a = api_token_generate();
        let b = api_token_generate();
        assert!(a.starts_with(API_TOKEN_PREFIX) && a.len() == 49);
        assert_ne!(a, b);
        assert_eq!(api_token_hash(&a).len(), 64);
        assert_ne!(api_token_hash(&a), api_token_hash(&b));
    }
}
