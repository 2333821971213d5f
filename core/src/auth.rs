//! The claims of Berth's JSON Web Tokens (RFC 7519). Tokens are minted by the api's key
//! (HS256 for now) and carried as `Authorization: Bearer <jwt>`.

use serde::{Deserialize, Serialize};

/// The issuer (`iss`) Berth writes into the tokens it mints and requires when verifying.
pub const ISSUER: &str = "berth";
/// The audience (`aud`) Berth writes and requires.
pub const AUDIENCE: &str = "berth-api";

/// What a token's holder may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything.
    Admin,
    /// Operate nodes, partitions and QOS; see every job.
    Operator,
    /// Own jobs only.
    User,
    /// A worker: the node routes only.
    Node,
}

/// The claims of a Berth token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user name (or, for a node token, `node:<name>` or `node:*`).
    pub sub: String,
    /// The holder's role.
    pub role: Role,
    /// Issuer, [`ISSUER`].
    pub iss: String,
    /// Audience, [`AUDIENCE`].
    pub aud: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: i64,
    /// Expiry, seconds since the Unix epoch.
    pub exp: i64,
    /// For a token minted for a running job (`BERTH_TOKEN` inside it): the job. Such a
    /// token may only read, update, requeue and cancel that job, run its steps, and list
    /// and submit jobs as `sub`, and only while the job is RUNNING in run
    /// [`Claims::run`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<i64>,
    /// For a job's token: the run (the job's restart count) it was minted for. A job
    /// token without one is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
    /// For a job's token: its job's incarnation ([`crate::wire::Incarnation`]). The token
    /// is refused once the job with its id is another job (a database failover handed the
    /// id out again). Absent from tokens minted before incarnations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inc: Option<crate::wire::Incarnation>,
}
