//! A small client of Berth's REST api: a base URL and a bearer token over reqwest. Error
//! answers (RFC 9457 problem documents) become [`ClientError::Problem`], whose message
//! reads like the api's (`line 3: --nodes={{ nodes }}: not a number`).
//!
//! A request refused with 429 (rate limited: never processed) is sent again after the
//! answer's `Retry-After`, with jitter so that parallel clients spread out, up to
//! [`MAX_RETRIES`] times; so is one answered 503 (database away, timeout) when sending
//! it again is harmless (not a `POST`, or a `POST` with an `Idempotency-Key`). A `POST`
//! with an `Idempotency-Key` (a submission) is also sent again when the api cannot be
//! reached, and is retried for [`RETRY_FOR`] rather than a number of times; a client
//! given a retry notice ([`Client::with_retry_notice`]) says so before each wait.

use berth_core::wire::{
    Job, JobCreate, JobCreated, JobList, JobListQuery, NodeList, OutputStream, PartitionList,
    Problem, QueueJob,
};
use futures_util::StreamExt;
use std::fmt;
use std::time::Duration;

/// How many times one request is sent again after a 429 or 503.
pub const MAX_RETRIES: u32 = 10;

/// The longest wait between two tries, whatever `Retry-After` says.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// How long a `POST` with an `Idempotency-Key` is sent again while the api answers 503
/// or cannot be reached (a database switch, an api restart).
pub const RETRY_FOR: Duration = Duration::from_secs(60);

/// Told before each wait for another try: why (`service unavailable`, the connection
/// error) and how long the wait is.
pub type RetryNotice = std::sync::Arc<dyn Fn(&str, Duration) + Send + Sync>;

/// The wait `Retry-After` asks for (seconds, or an HTTP date), or a backoff of 0.5 s
/// doubling per `attempt` (at most 8 s) when there is none; plus up to half of it (at
/// least 250 ms) of random jitter, at most [`MAX_RETRY_WAIT`].
pub fn retry_wait(
    retry_after: Option<&str>,
    attempt: u32,
    now: chrono::DateTime<chrono::Utc>,
) -> Duration {
    let asked = retry_after.and_then(|v| {
        let v = v.trim();
        match v.parse::<u64>() {
            Ok(secs) => Some(Duration::from_secs(secs)),
            Err(_) => chrono::DateTime::parse_from_rfc2822(v).ok().map(|at| {
                (at.with_timezone(&chrono::Utc) - now)
                    .to_std()
                    .unwrap_or_default()
            }),
        }
    });
    let base = asked
        .unwrap_or_else(|| Duration::from_millis(500).saturating_mul(1 << attempt.min(4)))
        .min(MAX_RETRY_WAIT);
    let spread = (base / 2).max(Duration::from_millis(250));
    let jitter = spread.mul_f64(rand::random::<f64>());
    (base + jitter).min(MAX_RETRY_WAIT)
}

/// What went wrong talking to the api.
#[derive(Debug)]
pub enum ClientError {
    /// The request did not get an answer (connection refused, timeout, bad body …).
    Http {
        /// What was asked (`GET http://…/v1/jobs/3`).
        request: String,
        /// The cause.
        source: reqwest::Error,
    },
    /// The api answered with a problem document.
    Problem {
        /// The HTTP status.
        status: u16,
        /// The document.
        problem: Box<Problem>,
    },
    /// The api answered with an error that is not a problem document.
    Status {
        /// The HTTP status.
        status: u16,
        /// The body, as text.
        body: String,
    },
}

impl ClientError {
    /// The HTTP status of an error answer; `None` when there was no answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Http { .. } => None,
            ClientError::Problem { status, .. } | ClientError::Status { status, .. } => {
                Some(*status)
            }
        }
    }

    /// The problem document, when the api sent one.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            ClientError::Problem { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

/// Renders a problem document as one line: the script line and the offending option
/// first when the detail does not already name them (`line 3: --nodes=x: not a number`).
pub fn problem_message(problem: &Problem) -> String {
    let mut detail = problem.detail.trim().to_string();
    if detail.is_empty() {
        detail = problem.title.clone();
    }
    if let Some(field) = &problem.field {
        if !field.is_empty() && !detail.contains(field.as_str()) {
            detail = format!("{field}: {detail}");
        }
    }
    if let Some(line) = problem.line {
        if !detail.starts_with(&format!("line {line}")) {
            detail = format!("line {line}: {detail}");
        }
    }
    detail
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Http { request, source } => {
                // The innermost cause says what happened (`Connection refused`).
                let mut root: &dyn std::error::Error = source;
                while let Some(c) = root.source() {
                    root = c;
                }
                if source.is_connect() {
                    // No server at that address: name it once, and where it came from.
                    let origin = request
                        .split_once(' ')
                        .and_then(|(_, url)| reqwest::Url::parse(url).ok())
                        .map(|u| u.origin().ascii_serialization())
                        .unwrap_or_else(|| request.clone());
                    return write!(
                        f,
                        "no server answers at {origin} ({root}): is the api running there? \
                         (the address comes from --url, BERTH_URL or the client configuration \
                         file that `berth dev` writes)"
                    );
                }
                // reqwest's own message repeats the URL the request already names.
                let message = source.to_string();
                let message = match message.split_once(" for url (") {
                    Some((head, _)) => head.to_string(),
                    None => message,
                };
                write!(f, "{request}: {message}")?;
                let mut cause = std::error::Error::source(source);
                while let Some(c) = cause {
                    write!(f, ": {c}")?;
                    cause = c.source();
                }
                Ok(())
            }
            ClientError::Problem { problem, .. } => f.write_str(&problem_message(problem)),
            ClientError::Status { status, body } => {
                let body = body.trim();
                if body.is_empty() {
                    write!(f, "the api answered HTTP {status}")
                } else {
                    write!(f, "the api answered HTTP {status}: {body}")
                }
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// A client of one cluster's api.
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    base: String,
    token: String,
    retry_notice: Option<RetryNotice>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("retry_notice", &self.retry_notice.is_some())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the api at `base_url` (`http://127.0.0.1:8750`) using `token`.
    pub fn new(base_url: &str, token: &str) -> Client {
        Self::with_ca(base_url, token, &[])
            .expect("a reqwest client with default TLS settings builds")
    }

    /// A client that also trusts `ca_certificates` (for an api whose TLS certificate a
    /// private CA signed).
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn with_ca(
        base_url: &str,
        token: &str,
        ca_certificates: &[reqwest::Certificate],
    ) -> Result<Client, reqwest::Error> {
        let mut builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(10));
        for cert in ca_certificates {
            builder = builder.add_root_certificate(cert.clone());
        }
        let http = builder.build()?;
        Ok(Client {
            http,
            base: base_url.trim_end_matches('/').to_string(),
            token: token.to_string(),
            retry_notice: None,
        })
    }

    /// The same client, telling `notice` before each wait for another try of a request
    /// (sbatch prints Slurm's "temporarily unable to accept job" line).
    pub fn with_retry_notice(mut self, notice: RetryNotice) -> Client {
        self.retry_notice = Some(notice);
        self
    }

    /// The certificates of a PEM file, for [`Client::with_ca`].
    ///
    /// # Errors
    /// When the file cannot be read or holds no certificate.
    pub fn read_ca_file(path: &std::path::Path) -> anyhow::Result<Vec<reqwest::Certificate>> {
        use anyhow::Context;
        let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .with_context(|| format!("reading certificates from {}", path.display()))?;
        anyhow::ensure!(!certs.is_empty(), "{} holds no certificate", path.display());
        Ok(certs)
    }

    /// The api's base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The bearer token this client sends (for a child process that must reach the api
    /// as the same user: salloc's command).
    pub fn token(&self) -> &str {
        &self.token
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        what: String,
    ) -> Result<reqwest::Response, ClientError> {
        let mut request = request.bearer_auth(&self.token);
        // A 503 is answered again only where sending twice is harmless; a submission with
        // an Idempotency-Key also when the api cannot be reached, for RETRY_FOR.
        let built = request.try_clone().and_then(|r| r.build().ok());
        let keyed_post = built.as_ref().is_some_and(|r| {
            r.method() == reqwest::Method::POST && r.headers().contains_key("idempotency-key")
        });
        let retry_503 = keyed_post
            || built
                .as_ref()
                .is_some_and(|r| r.method() != reqwest::Method::POST);
        let started = std::time::Instant::now();
        let mut attempt = 0;
        let response = loop {
            // A body that streams cannot be sent twice: such a request is not retried.
            let again = request.try_clone();
            let within = |attempt: u32| {
                if keyed_post {
                    started.elapsed() < RETRY_FOR
                } else {
                    attempt < MAX_RETRIES
                }
            };
            let sent = request.send().await;
            let why = match &sent {
                Ok(response) => match response.status().as_u16() {
                    429 => Some("too many requests".to_string()),
                    503 if retry_503 => Some("service unavailable".to_string()),
                    _ => None,
                },
                Err(source) if keyed_post && (source.is_connect() || source.is_timeout()) => {
                    Some(format!("no answer from {}: {source}", self.base))
                }
                Err(_) => None,
            };
            if let (Some(next), Some(why)) = (again, why) {
                if within(attempt) {
                    let wait = retry_wait(
                        sent.as_ref()
                            .ok()
                            .and_then(|r| r.headers().get(reqwest::header::RETRY_AFTER))
                            .and_then(|v| v.to_str().ok()),
                        attempt,
                        chrono::Utc::now(),
                    );
                    let wait = if keyed_post {
                        wait.min(RETRY_FOR.saturating_sub(started.elapsed()))
                    } else {
                        wait
                    };
                    if let Some(notice) = &self.retry_notice {
                        notice(&why, wait);
                    }
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    request = next;
                    continue;
                }
            }
            break sent.map_err(|source| ClientError::Http {
                request: what.clone(),
                source,
            })?;
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        let problem = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|mut v| {
                crate::format::escape_strings(&mut v);
                serde_json::from_value::<Problem>(v).ok()
            });
        match problem {
            Some(problem) => Err(ClientError::Problem {
                status: status.as_u16(),
                problem: Box::new(problem),
            }),
            None => Err(ClientError::Status {
                status: status.as_u16(),
                body: berth_core::text::escape_keep_lines(&body).into_owned(),
            }),
        }
    }

    /// Sends `request` and decodes its JSON answer as `T`, every string in it escaped
    /// for the terminal ([`crate::format::escape_strings`]).
    pub(crate) async fn json<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        what: String,
    ) -> Result<T, ClientError> {
        self.json_escaped(request, what, true).await
    }

    async fn json_escaped<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        what: String,
        escape: bool,
    ) -> Result<T, ClientError> {
        let response = self.send(request, what.clone()).await?;
        let mut value = response
            .json::<serde_json::Value>()
            .await
            .map_err(|source| ClientError::Http {
                request: what.clone(),
                source,
            })?;
        // Every string a command may print is made printable here, once for all of them.
        if escape {
            crate::format::escape_strings(&mut value);
        }
        serde_json::from_value(value).map_err(|e| ClientError::Status {
            status: 200,
            body: format!("{what}: an answer this client cannot read: {e}"),
        })
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (reqwest::RequestBuilder, String) {
        let url = self.url(path);
        let what = format!("{method} {url}");
        let mut request = self.http.request(method, &url);
        if let Some(body) = body {
            request = request.json(body);
        }
        (request, what)
    }

    /// `method path` with an optional JSON body; the answer's JSON decoded as `T`.
    pub async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, ClientError> {
        let (request, what) = self.request(method, path, body);
        self.json(request, what).await
    }

    /// `method path` with an optional JSON body, for answers without one (204).
    pub async fn call_empty(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(), ClientError> {
        let (request, what) = self.request(method, path, body);
        self.send(request, what).await.map(|_| ())
    }

    /// `POST /v1/jobs`, with an `Idempotency-Key` header when `idempotency_key` is given.
    pub async fn job_create(
        &self,
        job: &JobCreate,
        idempotency_key: Option<&str>,
    ) -> Result<JobCreated, ClientError> {
        let url = self.url("/v1/jobs");
        let mut request = self.http.post(&url).json(job);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        self.json(request, format!("POST {url}")).await
    }

    /// `query` as query-string parameters (those set).
    fn job_list_params(query: &JobListQuery) -> Vec<(&'static str, String)> {
        let text = [
            ("state", &query.state),
            ("user", &query.user),
            ("partition", &query.partition),
            ("name", &query.name),
            ("account", &query.account),
            ("qos", &query.qos),
            ("cursor", &query.cursor),
        ];
        let mut params: Vec<(&str, String)> = text
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.clone()?)))
            .collect();
        if let Some(v) = query.limit {
            params.push(("limit", v.to_string()));
        }
        params
    }

    /// `GET /v1/jobs` with the given filters: one page.
    pub async fn job_list(&self, query: &JobListQuery) -> Result<JobList, ClientError> {
        let url = self.url("/v1/jobs");
        let params = Self::job_list_params(query);
        self.json(self.http.get(&url).query(&params), format!("GET {url}"))
            .await
    }

    /// `GET /v1/queue` as `application/x-ndjson` (squeue's columns of the jobs `GET
    /// /v1/jobs` would list): every matching job, by ascending id, each read as its line
    /// arrives (while the api is still sending the rest), with every string made printable
    /// as [`Client::json`] does. `fields` (`name,user`, as the api's `fields` takes them)
    /// asks for only those fields beside `id` and `state` (the others read as their
    /// defaults: see [`QueueJob`]); `None` for every field.
    ///
    /// # Errors
    /// [`ClientError`]: the request failed or was refused, a line is not a job, or the
    /// stream was cut short (it does not end with a whole line).
    pub async fn queue_list_all(
        &self,
        query: &JobListQuery,
        fields: Option<&str>,
    ) -> Result<Vec<QueueJob>, ClientError> {
        let url = self.url("/v1/queue");
        let query = JobListQuery {
            limit: None,
            cursor: None,
            ..query.clone()
        };
        let mut params = Self::job_list_params(&query);
        if let Some(fields) = fields {
            params.push(("fields", fields.to_string()));
        }
        let what = format!("GET {url}");
        let mut response = self
            .send(
                self.http
                    .get(&url)
                    .header(reqwest::header::ACCEPT, "application/x-ndjson")
                    .query(&params),
                what.clone(),
            )
            .await?;
        let unreadable = |e: String| ClientError::Status {
            status: 200,
            body: format!("{what}: an answer this client cannot read: {e}"),
        };
        let mut jobs = Vec::new();
        // The bytes after the last whole line so far.
        let mut rest: Vec<u8> = Vec::new();
        loop {
            let chunk = response.chunk().await.map_err(|source| ClientError::Http {
                request: what.clone(),
                source,
            })?;
            let Some(chunk) = chunk else { break };
            let mut read_lines = |lines: &[u8]| -> Result<(), ClientError> {
                for line in lines.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    // Straight to the type (reading 10,000 jobs through
                    // `serde_json::Value` took five times as long).
                    let job: QueueJob =
                        serde_json::from_slice(line).map_err(|e| unreadable(e.to_string()))?;
                    jobs.push(crate::format::escape_queue_job(job));
                }
                Ok(())
            };
            let Some(last) = chunk.iter().rposition(|b| *b == b'\n') else {
                rest.extend_from_slice(&chunk);
                continue;
            };
            if rest.is_empty() {
                read_lines(&chunk[..last])?;
            } else {
                rest.extend_from_slice(&chunk[..last]);
                read_lines(&rest)?;
                rest.clear();
            }
            rest.extend_from_slice(&chunk[last + 1..]);
        }
        if !rest.is_empty() {
            return Err(unreadable(
                "the list ends in the middle of a job".to_string(),
            ));
        }
        Ok(jobs)
    }

    /// `GET /v1/jobs`, following `next_cursor` until the last page: every matching job,
    /// by ascending id.
    pub async fn job_list_all(&self, query: &JobListQuery) -> Result<Vec<Job>, ClientError> {
        let mut query = query.clone();
        let mut jobs = Vec::new();
        loop {
            let page = self.job_list(&query).await?;
            jobs.extend(page.items);
            match page.next_cursor {
                Some(cursor) if query.cursor.as_deref() != Some(cursor.as_str()) => {
                    query.cursor = Some(cursor)
                }
                _ => return Ok(jobs),
            }
        }
    }

    /// `GET /v1/jobs/{id}`.
    pub async fn job_get(&self, id: i64) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}"));
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET /v1/jobs/{id}` as raw JSON (every field the api sends, known here or not).
    pub async fn job_get_json(&self, id: i64) -> Result<serde_json::Value, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}"));
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `POST /v1/jobs/{id}/cancel`: the job after the cancel.
    pub async fn job_cancel(&self, id: i64) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/cancel"));
        self.json(self.http.post(&url), format!("POST {url}")).await
    }

    /// `POST /v1/jobs/{id}/tasks/{task}/cancel`: cancels one task of an array.
    pub async fn job_task_cancel(&self, id: i64, task: u32) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/tasks/{task}/cancel"));
        self.json(self.http.post(&url), format!("POST {url}")).await
    }

    /// `GET /v1/jobs/{id}/output`: the output so far, as text.
    pub async fn job_output(&self, id: i64, stream: OutputStream) -> Result<String, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/output"));
        let request = self.http.get(&url).query(&[("stream", stream.as_str())]);
        let response = self.send(request, format!("GET {url}")).await?;
        response.text().await.map_err(|source| ClientError::Http {
            request: format!("GET {url}"),
            source,
        })
    }

    /// `GET /v1/jobs/{id}/output?follow=true`: hands each chunk to `sink` as it arrives,
    /// until the api ends the body (the job reached a terminal state).
    pub async fn job_output_follow(
        &self,
        id: i64,
        stream: OutputStream,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/output"));
        let request = self
            .http
            .get(&url)
            .query(&[("stream", stream.as_str()), ("follow", "true")]);
        let what = format!("GET {url}");
        let response = self.send(request, what.clone()).await?;
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|source| ClientError::Http {
                request: what.clone(),
                source,
            })?;
            sink(&chunk);
        }
        Ok(())
    }

    /// `GET /v1/nodes`.
    pub async fn node_list(&self) -> Result<NodeList, ClientError> {
        let url = self.url("/v1/nodes");
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET /v1/partitions`.
    pub async fn partition_list(&self) -> Result<PartitionList, ClientError> {
        let url = self.url("/v1/partitions");
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET /healthz`: whether the api answers with a success status.
    pub async fn healthz(&self) -> bool {
        let url = self.url("/healthz");
        match self
            .http
            .get(&url)
            .timeout(Duration::from_secs(2))
            .send()
            .await
        {
            Ok(response) => response.status().is_success(),
            Err(_) => false,
        }
    }

    /// `GET {path}` (`/v1/...`), decoding the JSON answer: for endpoints without a
    /// dedicated method.
    pub async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<T, ClientError> {
        let url = self.url(path);
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET {path}` for output chunks (a step's tasks' output, `srun`), decoded without
    /// escaping: a job's own output is printed as it is, as `berth logs` prints it.
    pub async fn get_output_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<T, ClientError> {
        let url = self.url(path);
        self.json_escaped(self.http.get(&url), format!("GET {url}"), false)
            .await
    }

    /// `POST {path}` with a JSON body, decoding the JSON answer.
    pub async fn post_json<B: serde::Serialize, T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let url = self.url(path);
        self.json(self.http.post(&url).json(body), format!("POST {url}"))
            .await
    }

    /// Polls `GET /v1/jobs/{id}` every `interval` until the job is in a terminal state.
    pub async fn job_wait(&self, id: i64, interval: Duration) -> Result<Job, ClientError> {
        loop {
            let job = self.job_get(id).await?;
            if job.state.is_terminal() {
                return Ok(job);
            }
            tokio::time::sleep(interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_waits_follow_retry_after_with_bounded_jitter() {
        let now = chrono::Utc::now();
        for _ in 0..50 {
            let w = retry_wait(Some("2"), 0, now);
            assert!(
                w >= Duration::from_secs(2) && w <= Duration::from_secs(3),
                "{w:?}"
            );
            let w = retry_wait(None, 0, now);
            assert!(
                w >= Duration::from_millis(500) && w <= Duration::from_millis(750),
                "{w:?}"
            );
            let w = retry_wait(None, 30, now);
            assert!(
                w >= Duration::from_secs(8) && w <= Duration::from_secs(12),
                "{w:?}"
            );
            assert!(retry_wait(Some("999999"), 0, now) <= MAX_RETRY_WAIT);
        }
        let later = (now + chrono::Duration::seconds(5)).to_rfc2822();
        let w = retry_wait(Some(&later), 0, now);
        assert!(
            w >= Duration::from_secs(4) && w <= Duration::from_secs(8),
            "{w:?}"
        );
    }

    fn problem(detail: &str, field: Option<&str>, line: Option<usize>) -> Problem {
        Problem {
            problem_type: "urn:berth:problem:invalid-option".into(),
            title: "Invalid option".into(),
            status: 400,
            detail: detail.into(),
            code: "invalid_option".into(),
            field: field.map(Into::into),
            line,
            request_id: None,
        }
    }

    #[test]
    fn problem_message_names_line_and_option_once() {
        let p = problem("not a number", Some("--nodes={{ nodes }}"), Some(3));
        assert_eq!(
            problem_message(&p),
            "line 3: --nodes={{ nodes }}: not a number"
        );
        let p = problem(
            "line 3: --nodes={{ nodes }}: not a number",
            Some("--nodes"),
            Some(3),
        );
        assert_eq!(
            problem_message(&p),
            "line 3: --nodes={{ nodes }}: not a number"
        );
        let p = problem("job 99 not found", None, None);
        assert_eq!(problem_message(&p), "job 99 not found");
    }
}
