//! Protection against floods and oversized requests: rate limits per bearer token and per
//! client address (GCRA through `governor`; `429` with `Retry-After`), a limit on the
//! total size of the request headers (`431`), and a request timeout (`503`). The body
//! size limit is tower-http's (`413`), and a bounded database pool answers `503` when it
//! is exhausted (see [`crate::error`]).

use crate::error::ApiError;
use crate::AppState;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// The api's protective limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Requests per second allowed per bearer token (0: no limit).
    pub per_token_per_second: u32,
    /// Requests per client address per second (0: no limit).
    pub per_address_per_second: u32,
    /// How many requests beyond the rate a burst may bring (at least 1).
    pub burst: u32,
    /// The most bytes a request body may have.
    pub max_body_bytes: usize,
    /// The most bytes all request headers together may have (names and values).
    pub max_header_bytes: usize,
    /// How long a request may take to be answered (the worker's long poll waits at most
    /// 60 s, so keep this above).
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_token_per_second: 100,
            per_address_per_second: 200,
            burst: 200,
            max_body_bytes: 8 * 1024 * 1024,
            max_header_bytes: 16 * 1024,
            request_timeout: Duration::from_secs(90),
        }
    }
}

/// The rate limiters (shared by every request of this process).
#[derive(Clone)]
pub struct RateLimiters {
    limits: Limits,
    per_token: Option<Arc<DefaultKeyedRateLimiter<[u8; 32]>>>,
    per_address: Option<Arc<DefaultKeyedRateLimiter<IpAddr>>>,
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
            per_token: keyed(limits.per_token_per_second, limits.burst),
            per_address: keyed(limits.per_address_per_second, limits.burst),
            limits,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Drops the state of keys that are back to a full burst (run now and then).
    pub fn shrink(&self) {
        if let Some(l) = &self.per_token {
            l.retain_recent();
        }
        if let Some(l) = &self.per_address {
            l.retain_recent();
        }
    }
}

fn retry_after(not_until: &governor::NotUntil<governor::clock::QuantaInstant>) -> u64 {
    let wait = not_until.wait_time_from(DefaultClock::default().now());
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// The middleware: header size, rate limits, then the request under the timeout.
pub async fn protect(State(state): State<AppState>, request: Request, next: Next) -> Response {
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
    if let (Some(limiter), Some(ConnectInfo(addr))) = (
        &limiters.per_address,
        request.extensions().get::<ConnectInfo<SocketAddr>>(),
    ) {
        if let Err(not_until) = limiter.check_key(&addr.ip()) {
            return ApiError::TooManyRequests {
                retry_after: retry_after(&not_until),
                what: "this address",
            }
            .into_response();
        }
    }
    if let (Some(limiter), Some(auth)) = (
        &limiters.per_token,
        request.headers().get(axum::http::header::AUTHORIZATION),
    ) {
        let key: [u8; 32] = Sha256::digest(auth.as_bytes()).into();
        if let Err(not_until) = limiter.check_key(&key) {
            return ApiError::TooManyRequests {
                retry_after: retry_after(&not_until),
                what: "this token",
            }
            .into_response();
        }
    }
    match tokio::time::timeout(limiters.limits.request_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}
