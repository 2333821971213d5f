//! Run grants: the api's signed statement that a job run was placed on a node, handed to
//! the node with the run's assignment ([`berth_core::wire::Assignment::grant`]) and
//! attached by the worker to the run's reports.
//!
//! After a failover with asynchronous replication the database may have forgotten that a
//! run was placed (the job is PENDING again in the same run, with no allocation), while
//! the node ran it, or still runs it. A report for such a run names no allocation of the
//! node; its grant proves the placement, so the api can take the run back (or accept its
//! end) instead of refusing the report or running the job a second time. A node cannot
//! forge one: it is an HS256 JWT signed with the server's secret, with its own audience
//! (`berth-run-grant`) so that it is no bearer token, naming the job, run, node, GPUs,
//! CPUs and memory.

use crate::auth::Keys;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// The audience of run grants (no bearer token has it).
pub const GRANT_AUDIENCE: &str = "berth-run-grant";

/// What a grant says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGrant {
    /// The job.
    pub job_id: i64,
    /// The run (the job's restart count when placed).
    pub run: i32,
    /// The node it was placed on (`sub`).
    pub sub: String,
    /// GPU indices on that node.
    pub gpus: Vec<i32>,
    /// Whether the allocation holds the node exclusively.
    pub exclusive: bool,
    /// Logical CPU ids on that node (absent in grants from before CPU placement).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_ids: Vec<i32>,
    /// Memory on that node, MiB (0: not placed by memory).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mem_mib: i64,
    /// The job's incarnation ([`berth_core::wire::Incarnation`]); absent from grants of
    /// apis older than incarnations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inc: Option<berth_core::wire::Incarnation>,
    /// Audience: [`GRANT_AUDIENCE`].
    pub aud: String,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// What a run holds on its node, as a grant names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Share<'a> {
    /// GPU indices.
    pub gpus: &'a [i32],
    /// Logical CPU ids.
    pub cpu_ids: &'a [i32],
    /// Memory, MiB.
    pub mem_mib: i64,
    /// The node is held whole.
    pub exclusive: bool,
}

/// Signs a grant for run `run` of job `job_id` (of `incarnation`) on node `node` holding
/// `share` there, valid `ttl_seconds`; `None` when the server has no HS256 secret.
pub fn mint(
    keys: &Keys,
    job: crate::auth::JobRun,
    node: &str,
    share: Share<'_>,
    ttl_seconds: i64,
) -> Option<String> {
    let secret = keys.hs256_secret()?;
    let grant = RunGrant {
        job_id: job.job_id,
        run: i32::try_from(job.run).ok()?,
        inc: Some(job.incarnation),
        sub: node.to_string(),
        gpus: share.gpus.to_vec(),
        exclusive: share.exclusive,
        cpu_ids: share.cpu_ids.to_vec(),
        mem_mib: share.mem_mib,
        aud: GRANT_AUDIENCE.to_string(),
        exp: chrono::Utc::now().timestamp().saturating_add(ttl_seconds),
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &grant,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .ok()
}

/// The grant `token` names, when it is one the server signed, unexpired, for run `run` of
/// job `job_id` of `incarnation` on node `node`; `None` otherwise (no secret, a bad
/// signature, another run, node or incarnation).
pub fn verify(
    keys: &Keys,
    token: &str,
    job_id: i64,
    run: i32,
    incarnation: Option<berth_core::wire::Incarnation>,
    node: &str,
) -> Option<RunGrant> {
    let secret = keys.hs256_secret()?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.algorithms = vec![Algorithm::HS256];
    validation.set_audience(&[GRANT_AUDIENCE]);
    validation.set_required_spec_claims(&["exp", "aud", "sub"]);
    let grant = jsonwebtoken::decode::<RunGrant>(
        token,
        &DecodingKey::from_secret(secret.as_bytes()),
        &validation,
    )
    .ok()?
    .claims;
    (grant.job_id == job_id
        && grant.run == run
        && grant.sub == node
        && berth_core::wire::same_incarnation(grant.inc, incarnation))
    .then_some(grant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_names_one_run_on_one_node_and_is_no_bearer_token() {
        let keys = Keys::from_secret("grant-test-secret-0123456789abcdef");
        let share = Share {
            gpus: &[0, 3],
            cpu_ids: &[4, 5],
            mem_mib: 2048,
            exclusive: false,
        };
        let inc = uuid::Uuid::new_v4();
        let job = crate::auth::JobRun {
            job_id: 7,
            run: 1,
            incarnation: inc,
        };
        let grant = mint(&keys, job, "node-1", share, 3600).unwrap();
        let seen = verify(&keys, &grant, 7, 1, Some(inc), "node-1").unwrap();
        assert_eq!(seen.gpus, vec![0, 3]);
        assert_eq!((seen.cpu_ids, seen.mem_mib), (vec![4, 5], 2048));
        assert_eq!(seen.inc, Some(inc));
        assert!(
            verify(&keys, &grant, 7, 2, Some(inc), "node-1").is_none(),
            "another run"
        );
        assert!(
            verify(&keys, &grant, 8, 1, Some(inc), "node-1").is_none(),
            "another job"
        );
        assert!(
            verify(&keys, &grant, 7, 1, Some(inc), "node-2").is_none(),
            "another node"
        );
        assert!(
            verify(&keys, &grant, 7, 1, Some(uuid::Uuid::new_v4()), "node-1").is_none(),
            "another job that had the same id (another incarnation)"
        );
        let other = Keys::from_secret("another-secret-0123456789abcdefgh");
        assert!(
            verify(&other, &grant, 7, 1, Some(inc), "node-1").is_none(),
            "another key"
        );
        assert!(keys.verify(&grant).is_err(), "not a bearer token");
        assert!(mint(&Keys::default(), job, "node-1", Share::default(), 60).is_none());
    }
}
