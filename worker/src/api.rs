//! The worker's HTTP client for the api: bearer token, JSON bodies, RFC 9457 problem
//! documents turned into [`WorkerError::Api`], and a retry helper with capped,
//! jittered exponential backoff.

use crate::WorkerError;
use rand::Rng;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;

/// Extra time allowed beyond the long-poll hold before a sync is given up.
const SYNC_SLACK: Duration = Duration::from_secs(30);
/// Time allowed for requests that are not held.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A client of the api, cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct ApiClient {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl ApiClient {
    /// A client for `base` (`http://host:port`), authenticating with `token`.
    pub(crate) fn new(base: &str, token: &str) -> Result<Self, WorkerError> {
        Self::with_ca(base, token, None)
    }

    /// A client that also trusts the certificates of `ca_pem` (PEM), for an api whose
    /// TLS certificate a private CA signed.
    pub(crate) fn with_ca(
        base: &str,
        token: &str,
        ca_pem: Option<&[u8]>,
    ) -> Result<Self, WorkerError> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("berth-worker/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = ca_pem {
            for cert in reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|source| WorkerError::Client { source })?
            {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
            .build()
            .map_err(|source| WorkerError::Client { source })?;
        Ok(ApiClient {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
        })
    }

    /// `POST {base}{path}` with a JSON body, decoding the answer's JSON body. `hold` is
    /// how long the api may hold the request (long poll), zero for none.
    pub(crate) async fn post<B: Serialize, R: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
        hold: Duration,
    ) -> Result<R, WorkerError> {
        let (url, response) = self.send(path, body, hold).await?;
        response
            .json::<R>()
            .await
            .map_err(|source| WorkerError::Decode { url, source })
    }

    /// `POST {base}{path}` with a JSON body, ignoring the answer's body.
    pub(crate) async fn post_ignore<B: Serialize>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<(), WorkerError> {
        self.send(path, body, Duration::ZERO).await.map(|_| ())
    }

    async fn send<B: Serialize>(
        &self,
        path: &str,
        body: &B,
        hold: Duration,
    ) -> Result<(String, reqwest::Response), WorkerError> {
        let url = format!("{}{}", self.base, path);
        let timeout = if hold.is_zero() {
            REQUEST_TIMEOUT
        } else {
            hold + SYNC_SLACK
        };
        let response = self
            .http
            .post(&url)
            .bearer_auth(&self.token)
            .timeout(timeout)
            .json(body)
            .send()
            .await
            .map_err(|source| WorkerError::Http {
                url: url.clone(),
                source,
            })?;
        let status = response.status();
        if status.is_success() {
            return Ok((url, response));
        }
        let text = response.text().await.unwrap_or_default();
        let detail = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|problem| {
                problem
                    .get("detail")
                    .and_then(|detail| detail.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| {
                let text = text.trim();
                if text.is_empty() {
                    status.canonical_reason().unwrap_or("error").to_string()
                } else {
                    text.chars().take(500).collect()
                }
            });
        Err(WorkerError::Api {
            url,
            status: status.as_u16(),
            detail,
        })
    }
}

/// Capped exponential backoff with jitter: 0.5 s, 1 s, 2 s, 4 s, then 5 s (short, so a
/// worker is back within seconds of an api or database outage, well inside the node
/// timeout).
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(500);
    const MAX: Duration = Duration::from_secs(5);

    pub(crate) fn new() -> Self {
        Backoff { next: Self::FIRST }
    }

    /// The next delay (with up to 25 % jitter either way); doubles the one after.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        base.mul_f64(rand::rng().random_range(0.75..1.25))
    }

    /// Starts over after a success.
    pub(crate) fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}
