//! Protection against floods and oversized requests: rate limits (GCRA through
//! `governor`; `429` with `Retry-After`), a limit on the total size of the request
//! headers (`431`), and a request timeout (`503`). The body size limit is tower-http's
//! (`413`), and a bounded database pool answers `503` when it is exhausted (see
//! [`crate::error`]).
//!
//! Authenticated requests are limited per principal (a user, whichever of their tokens
//! they use; a node; never per address, so users behind one NAT or proxy do not throttle
//! each other); requests without credentials, or whose credentials do not verify, per
//! client address. The middleware authenticates each request once
//! ([`crate::auth::authenticate`]) and hands the outcome to the handler. Once failing
//! credentials from an address go past its limit, its API tokens and node credentials
//! (which cost a database lookup to check) are refused unchecked until it may send
//! again.

use crate::auth::{authenticate, Authenticated, Caller};
use crate::error::ApiError;
use crate::AppState;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use berth_core::auth::Role;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The api's protective limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Requests per second allowed per principal (user or node), for authenticated
    /// requests (0: no limit).
    pub per_principal_per_second: u32,
    /// Requests per client address per second, for requests without valid credentials
    /// (0: no limit).
    pub per_address_per_second: u32,
    /// How many requests a principal may send at once beyond its rate: the size of its
    /// token bucket (at least 1; default 1,000, a CI pipeline's burst of submissions).
    pub burst: u32,
    /// The same for an address without valid credentials (at least 1; default 200).
    pub address_burst: u32,
    /// The most bytes a request body may have.
    pub max_body_bytes: usize,
    /// The most bytes all request headers together may have (names and values).
    pub max_header_bytes: usize,
    /// How long a request may take to be answered (the worker's long poll waits at most
    /// 60 s, so keep this above).
    pub request_timeout: Duration,
    /// The most output bytes the database keeps per job run and stream (`None`: no cap);
    /// the rest is dropped and the stream marked truncated. The node's files are whole.
    pub output_cap_bytes: Option<u64>,
    /// Slurm's `InactiveLimit`: how long a job whose client sends keep-alives (salloc,
    /// srun outside an allocation) lasts after the last one (`[scheduler]
    /// inactive_limit_seconds`); zero: no limit. See [`crate::keepalive`].
    pub inactive_limit: Duration,
    /// The most open event streams (`GET /v1/events` as Server-Sent Events) one principal
    /// holds in this process (`[api] max_event_streams_per_user`, 16); 0: no limit.
    pub max_event_streams_per_principal: usize,
    /// The most open event streams this process holds (`[api] max_event_streams`,
    /// 4,096); 0: no limit.
    pub max_event_streams: usize,
    /// Slurm's `MaxArraySize` (`[scheduler] max_array_size`): an array's task indices must
    /// be below it (so it has at most this many tasks); default 1001.
    pub max_array_size: u32,
    /// Slurm's `MaxJobCount` (`[scheduler] max_job_count`): the most jobs the live queue
    /// holds (pending, running, and ended within `min_job_age`; a pending array counts
    /// as one job until its tasks start, each started task as one); a submission beyond
    /// it is refused, 503 with `Retry-After` (Slurm: "temporarily unable to accept job");
    /// default 100,000; 0: no limit.
    pub max_job_count: u64,
    /// Slurm's `MinJobAge` (`[scheduler] min_job_age_seconds`): how long an ended job
    /// stays in the live queue (`GET /v1/queue`, `squeue -t all`, slurmrestd's job list);
    /// accounting keeps it for ever. Default 300 s; zero: ended jobs stay.
    pub min_job_age: Duration,
}

/// The default [`Limits::max_array_size`]: Slurm's 1001.
pub const DEFAULT_MAX_ARRAY_SIZE: u32 = 1001;

/// The default [`Limits::max_job_count`].
pub const DEFAULT_MAX_JOB_COUNT: u64 = 100_000;

/// The default [`Limits::min_job_age`]: Slurm's 300 s.
pub const DEFAULT_MIN_JOB_AGE: Duration = Duration::from_secs(300);

/// The default [`Limits::inactive_limit`]: 120 s.
pub const DEFAULT_INACTIVE_LIMIT: Duration = Duration::from_secs(120);

/// The default [`Limits::output_cap_bytes`]: 64 MiB per run and stream.
pub const DEFAULT_OUTPUT_CAP_BYTES: u64 = 64 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_principal_per_second: 100,
            per_address_per_second: 200,
            burst: 1_000,
            address_burst: 200,
            max_body_bytes: 8 * 1024 * 1024,
            max_header_bytes: 16 * 1024,
            request_timeout: Duration::from_secs(90),
            output_cap_bytes: Some(DEFAULT_OUTPUT_CAP_BYTES),
            inactive_limit: DEFAULT_INACTIVE_LIMIT,
            max_event_streams_per_principal: crate::event_feed::DEFAULT_MAX_STREAMS_PER_PRINCIPAL,
            max_event_streams: crate::event_feed::DEFAULT_MAX_STREAMS,
            max_array_size: DEFAULT_MAX_ARRAY_SIZE,
            max_job_count: DEFAULT_MAX_JOB_COUNT,
            min_job_age: DEFAULT_MIN_JOB_AGE,
        }
    }
}

impl Limits {
    /// Since when an ended job still shows in the live queue at `now` (`None`: ended
    /// jobs always do, `min_job_age` 0).
    pub fn live_queue_since(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<chrono::DateTime<chrono::Utc>> {
        (!self.min_job_age.is_zero()).then(|| {
            now - chrono::Duration::from_std(self.min_job_age).unwrap_or(chrono::Duration::MAX)
        })
    }
}

/// The rate limiters (shared by every request of this process).
#[derive(Clone)]
pub struct RateLimiters {
    limits: Limits,
    per_principal: Option<Arc<DefaultKeyedRateLimiter<String>>>,
    per_address: Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>,
    /// Addresses whose failing credentials went past the address limit, and until when:
    /// their API tokens and node credentials (each a database lookup to check) are
    /// refused unchecked meanwhile. JWTs, checked without the database, still are.
    failing: Arc<Mutex<HashMap<IpAddr, Instant>>>,
}

fn keyed<K: std::hash::Hash + Eq + Clone>(
    per_second: u32,
    burst: u32,
) -> Option<Arc<DefaultKeyedRateLimiter<K>>> {
    let rate = NonZeroU32::new(per_second)?;
    let burst = NonZeroU32::new(burst.max(1)).unwrap_or(NonZeroU32::MIN);
    Some(Arc::new(RateLimiter::keyed(
        Quota::per_second(rate).allow_burst(burst),
    )))
}

impl RateLimiters {
    /// Limiters for `limits`.
    pub fn new(limits: Limits) -> Self {
        RateLimiters {
            per_principal: keyed(limits.per_principal_per_second, limits.burst),
            per_address: keyed(limits.per_address_per_second, limits.address_burst),
            failing: Arc::default(),
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Drops the state of keys that are back to a full burst (run now and then).
    pub fn shrink(&self) {
        if let Some(l) = &self.per_principal {
            l.retain_recent();
        }
        if let Some(l) = &self.per_address {
            l.retain_recent();
        }
        if let Ok(mut failing) = self.failing.lock() {
            let now = Instant::now();
            failing.retain(|_, until| *until > now);
        }
    }
}

fn retry_after(not_until: &governor::NotUntil<governor::clock::QuantaInstant>) -> u64 {
    let wait = not_until.wait_time_from(DefaultClock::default().now());
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// The key a principal is limited by: its role and name (`user:alice`, `node:node:n1`),
/// the same for every token it holds.
fn principal_key(caller: &Caller) -> String {
    let role = match caller.role {
        Role::Admin | Role::Operator | Role::User => "user",
        Role::Node => "node",
    };
    format!("{role}:{}", caller.name)
}

/// The middleware: header size, authentication, the rate limit (per principal when the
/// credentials verify, else per address), then the request under the timeout.
pub async fn protect(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let limiters = &state.limiters;
    let header_bytes: usize = request
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if header_bytes > limiters.limits.max_header_bytes {
        return ApiError::HeadersTooLarge {
            limit: limiters.limits.max_header_bytes,
        }
        .into_response();
    }
    let ip = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    // The slurmrestd routes take their token from `X-SLURM-USER-TOKEN` too.
    let slurm = crate::slurmrestd::is_slurm_path(request.uri().path());
    let (header, refused) = if slurm {
        match crate::slurmrestd::auth::credentials(request.headers()) {
            Ok(header) => (header, None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (
            request
                .headers()
                .get(axum::http::header::AUTHORIZATION)
                .cloned(),
            None,
        )
    };
    let header = header.as_ref();
    // API tokens and node credentials cost a database lookup to check.
    let looked_up = header.is_some_and(|h| {
        h.as_bytes()
            .get(7..)
            .is_some_and(|t| t.starts_with(crate::auth::API_TOKEN_PREFIX.as_bytes()))
    });
    if let (true, Some(ip)) = (looked_up, ip) {
        let until = limiters
            .failing
            .lock()
            .ok()
            .and_then(|f| f.get(&ip).copied());
        if let Some(wait) = until.and_then(|u| u.checked_duration_since(Instant::now())) {
            return ApiError::TooManyRequests {
                retry_after: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
                what: "this address",
            }
            .into_response();
        }
    }
    let outcome = match (header, refused) {
        (_, Some(e)) => Some(Err(e)),
        (Some(header), None) => Some(authenticate(&state, header).await),
        (None, None) => None,
    };
    // `X-SLURM-USER-NAME` must name the token's own user.
    let outcome = match outcome {
        Some(Ok(caller)) if slurm => Some(crate::slurmrestd::auth::check_user_name(
            request.headers(),
            caller,
        )),
        other => other,
    };
    let limited = match &outcome {
        Some(Ok(caller)) => limiters
            .per_principal
            .as_ref()
            .and_then(|limiter| limiter.check_key(&principal_key(caller)).err())
            .map(|not_until| (retry_after(&not_until), "this user")),
        _ => match (&limiters.per_address, ip) {
            (Some(limiter), Some(ip)) => limiter.check_key(&ip).err().map(|not_until| {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                if looked_up && outcome.is_some() {
                    if let Ok(mut failing) = limiters.failing.lock() {
                        failing.insert(ip, Instant::now() + wait);
                    }
                }
                (retry_after(&not_until), "this address")
            }),
            _ => None,
        },
    };
    if let Some((retry_after, what)) = limited {
        return ApiError::TooManyRequests { retry_after, what }.into_response();
    }
    if let Some(outcome) = outcome {
        request.extensions_mut().insert(Authenticated::new(outcome));
    }
    match tokio::time::timeout(limiters.limits.request_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_one_user_may_submit_a_burst_of_a_thousand_and_an_address_two_hundred() {
        let limiters = RateLimiters::new(Limits::default());
        let user = limiters.per_principal.as_ref().unwrap();
        let key = "user:ci".to_string();
        // The bucket refills at 100 a second; the loop takes microseconds (the bound
        // allows it half a second).
        let passed = (0..1_100).filter(|_| user.check_key(&key).is_ok()).count();
        assert!((1_000..1_050).contains(&passed), "{passed} of 1,100 passed");
        // Another user is not throttled by this one.
        assert!(user.check_key(&"user:other".to_string()).is_ok());
        let address = limiters.per_address.as_ref().unwrap();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let passed = (0..400).filter(|_| address.check_key(&ip).is_ok()).count();
        assert!((200..250).contains(&passed), "{passed} of 400 passed");
    }
}
