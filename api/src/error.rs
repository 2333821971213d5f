//! The one mapping from failures to HTTP: RFC 9457 `application/problem+json` documents
//! with a stable `code`, a human `detail`, and the offending field or script line.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use berth_core::wire::Problem;
use berth_db::DbError;

/// The media type of problem documents.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// `Retry-After` of a 503 for an unavailable database, seconds.
pub const UNAVAILABLE_RETRY_AFTER: &str = "2";

/// An error an api handler returns.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the input is malformed or names an invalid value.
    #[error("{detail}")]
    BadRequest {
        /// Stable code (`invalid_option`, `invalid_body`).
        code: &'static str,
        /// What is wrong.
        detail: String,
        /// The field or option.
        field: Option<String>,
        /// The script line (1-based).
        line: Option<usize>,
    },
    /// 401: no credentials, or credentials that do not verify.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: known caller, not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// 404: unknown, or not visible to the caller.
    #[error("{0}")]
    NotFound(String),
    /// 409: conflicts with the current state (an idempotency key reused with another body).
    #[error("{detail}")]
    Conflict {
        /// Stable code.
        code: &'static str,
        /// What clashed.
        detail: String,
    },
    /// 422: well-formed but impossible (more GPUs than any node has).
    #[error("{detail}")]
    Unprocessable {
        /// What is impossible.
        detail: String,
        /// The field or option.
        field: Option<String>,
    },
    /// 429: too many requests from this token or address; retry after `retry_after`
    /// seconds.
    #[error("too many requests from {what}; retry after {retry_after} s")]
    TooManyRequests {
        /// Seconds until a request would be accepted.
        retry_after: u64,
        /// Which limit (`this user`, `this address`).
        what: &'static str,
    },
    /// 429: the caller (or the api) holds as many open event streams as it may.
    #[error("{detail}")]
    TooManyStreams {
        /// Which limit, and how to get below it.
        detail: String,
        /// Seconds after which a stream may be opened again.
        retry_after: u64,
    },
    /// 431: the request headers are larger than the limit.
    #[error("request headers larger than {limit} bytes")]
    HeadersTooLarge {
        /// The limit, bytes.
        limit: usize,
    },
    /// 503: the request took longer than the api's request timeout.
    #[error("the request timed out")]
    Timeout,
    /// 503 with `Retry-After`: the database is unreachable, the pool exhausted, or a
    /// statement timed out.
    #[error("service unavailable")]
    Unavailable(#[source] DbError),
    /// 503 with `Retry-After`: the live queue holds `MaxJobCount` jobs (Slurm: "Slurm
    /// temporarily unable to accept job").
    #[error("Slurm temporarily unable to accept job: the queue holds MaxJobCount ({limit}) jobs; retry after {retry_after} s")]
    QueueFull {
        /// `MaxJobCount`.
        limit: u64,
        /// Seconds until a submission may be accepted.
        retry_after: u64,
    },
    /// 500: a bug or an unexpected failure; details are logged, never returned.
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// A 400 naming a field.
    pub fn bad_field(field: &str, detail: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code: "invalid_field",
            detail: detail.into(),
            field: Some(field.to_string()),
            line: None,
        }
    }

    fn parts(&self) -> (StatusCode, &'static str, &'static str) {
        match self {
            ApiError::BadRequest { code, .. } => (StatusCode::BAD_REQUEST, code, "Bad request"),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized", "Unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", "Forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", "Not found"),
            ApiError::Conflict { code, .. } => (StatusCode::CONFLICT, code, "Conflict"),
            ApiError::Unprocessable { .. } => (
                StatusCode::UNPROCESSABLE_ENTITY,
                "unsatisfiable",
                "Request cannot be satisfied",
            ),
            ApiError::TooManyRequests { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "Too many requests",
            ),
            ApiError::TooManyStreams { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                "Too many open streams",
            ),
            ApiError::HeadersTooLarge { .. } => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                "Request headers too large",
            ),
            ApiError::Timeout => (
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                "Request timed out",
            ),
            ApiError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Service unavailable",
            ),
            ApiError::QueueFull { .. } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "max_job_count",
                "Queue full",
            ),
            ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal server error",
            ),
        }
    }

    /// The problem document for this error.
    pub fn problem(&self) -> Problem {
        let (status, code, title) = self.parts();
        let (field, line) = match self {
            ApiError::BadRequest { field, line, .. } => (field.clone(), *line),
            ApiError::Unprocessable { field, .. } => (field.clone(), None),
            _ => (None, None),
        };
        Problem {
            problem_type: format!("urn:berth:problem:{}", code.replace('_', "-")),
            title: title.to_string(),
            status: status.as_u16(),
            detail: self.to_string(),
            code: code.to_string(),
            field,
            line,
            request_id: None,
        }
    }
}

/// The request field behind a CHECK constraint on a value a request sets (`None` for a
/// constraint on state, which a request can only conflict with).
fn check_field(constraint: &str) -> Option<&'static str> {
    Some(match constraint {
        "jobs_mem_mib_check" => "--mem",
        "jobs_time_limit_check" => "--time",
        "jobs_num_nodes_check" => "--nodes",
        "jobs_num_tasks_check" => "--ntasks",
        "jobs_cpus_per_task_check" => "--cpus-per-task",
        "jobs_gpus_per_node_check" => "--gpus-per-node",
        "jobs_array_max_running_check" | "jobs_array_task_count_check" => "--array",
        "idempotency_keys_key_check" => "Idempotency-Key",
        "api_tokens_name_check" => "name",
        "job_steps_cpus_per_task_check" => "cpus_per_task",
        "job_steps_gpus_per_task_check" => "gpus_per_task",
        "job_steps_command_check" => "command",
        _ => return None,
    })
}

impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        match (&e, e.constraint()) {
            (DbError::Unavailable(_) | DbError::TimedOut(_), _) => ApiError::Unavailable(e),
            (DbError::InvalidText(_), _) => ApiError::BadRequest {
                code: "invalid_text",
                detail: "the request holds text that cannot be stored (a NUL byte or an invalid character)".into(),
                field: None,
                line: None,
            },
            (DbError::ForeignKey { .. }, Some("jobs_partition_fkey")) => {
                ApiError::bad_field("--partition", "no such partition")
            }
            (DbError::Conflict { .. }, Some("idempotency_keys_pkey")) => ApiError::Conflict {
                code: "idempotency_conflict",
                detail: "a request with this Idempotency-Key is being processed".into(),
            },
            // The handlers validate first; these are the safety net, so that a value the
            // database refuses is the caller's 400 (naming the field), never a 500.
            (DbError::Check { .. }, Some(constraint)) => match check_field(constraint) {
                Some(field) => ApiError::bad_field(field, "value out of range"),
                None => {
                    tracing::warn!(constraint, "a check constraint refused a write: a state conflict");
                    ApiError::Conflict {
                        code: "state_conflict",
                        detail: "the change conflicts with the resource's current state".into(),
                    }
                }
            },
            _ => ApiError::Internal(Box::new(e)),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = self.problem();
        match &self {
            ApiError::Internal(_) | ApiError::Unavailable(_) => {
                tracing::error!(error = &self as &dyn std::error::Error, "request failed");
            }
            _ => tracing::debug!(error = %self, "request refused"),
        }
        let status =
            StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let mut response = (status, body).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        let retry_after = match &self {
            ApiError::TooManyRequests { retry_after, .. }
            | ApiError::TooManyStreams { retry_after, .. }
            | ApiError::QueueFull { retry_after, .. } => Some(*retry_after),
            // The database away or the request too slow: worth trying again shortly.
            ApiError::Unavailable(_) | ApiError::Timeout => Some(1),
            _ => None,
        };
        if let Some(v) = retry_after.and_then(|s| HeaderValue::from_str(&s.to_string()).ok()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if let ApiError::Unavailable(_) = &self {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_static(UNAVAILABLE_RETRY_AFTER),
            );
        }
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Axum's JSON and query rejections as problem documents naming what failed.
pub fn rejection(kind: &str, detail: String) -> ApiError {
    // serde names the field it missed or did not know: "missing field `reason`".
    let field = ["missing field `", "unknown field `", "duplicate field `"]
        .iter()
        .find_map(|marker| {
            let rest = &detail[detail.find(marker)? + marker.len()..];
            rest.find('`').map(|end| rest[..end].to_string())
        });
    ApiError::BadRequest {
        code: "invalid_body",
        detail: format!("invalid {kind}: {detail}"),
        field,
        line: None,
    }
}

/// Turns error answers that are not problem documents (axum's own rejections of a path
/// parameter that does not parse, tower-http's 413 for an oversized body, 405 …) into
/// problem documents with the same status, so every error a client sees has one shape.
pub async fn plain_errors_as_problems(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == PROBLEM_JSON.as_bytes());
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let code = match status {
        StatusCode::BAD_REQUEST => "invalid_parameter",
        StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        _ => "error",
    };
    let title = status.canonical_reason().unwrap_or("Error").to_string();
    let problem = Problem {
        problem_type: format!("urn:berth:problem:{}", code.replace('_', "-")),
        detail: if text.is_empty() { title.clone() } else { text },
        title,
        status: status.as_u16(),
        code: code.to_string(),
        field: None,
        line: None,
        request_id: None,
    };
    let mut response = (status, serde_json::to_vec(&problem).unwrap_or_default()).into_response();
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            response.headers_mut().insert(name.clone(), value.clone());
        }
    }
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_missing_or_naming_an_unknown_field_names_it() {
        let named = |detail: &str| match rejection("JSON body", detail.into()) {
            ApiError::BadRequest { field, .. } => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            named("missing field `reason` at line 1 column 2").as_deref(),
            Some("reason")
        );
        assert_eq!(
            named("unknown field `foo`, expected `reason`").as_deref(),
            Some("foo")
        );
        assert_eq!(named("expected value at line 1 column 1"), None);
    }
}
