//! A slurmrestd-compatible subset: `/slurm/v0.0.44/` and `/slurmdb/v0.0.44/`, for the
//! clients that speak Slurm's REST api (Slurm-web, Slinky's slurm-client, GCM,
//! ColdFront).
//!
//! The shapes follow slurmrestd's published OpenAPI document for `v0.0.44` (Slurm 25.11;
//! `slurm-v0.0.44.json` as SlinkyProject/slurm-client publishes it), not Berth's
//! (`openapi/berth.json` leaves these routes out). Every answer is an object with
//! `meta`, `errors`, `warnings` and the operation's payload; an error keeps the payload's
//! required fields (empty) and says what went wrong in `errors` (`description`,
//! `error_number`: Slurm's errno, `error`: its text, `source`: the field or parameter),
//! with the HTTP status Berth's `/v1` would give.
//!
//! Each operation runs Berth's own code in-process: the `/v1` handler with the caller's
//! identity, so what a caller may see or change is exactly what `/v1` allows
//! (visibility by account membership, roles, API-token scopes, job tokens).
//!
//! Served: `GET ping/`, `GET diag/`, `POST job/submit`, `GET jobs/`,
//! `GET|POST|DELETE job/{job_id}`, `GET nodes/`, `GET node/{node_name}`,
//! `GET partitions/`, `GET partition/{partition_name}`, `GET reservations/`,
//! `GET reservation/{reservation_name}`, `GET shares` under `/slurm/v0.0.44/`; `GET jobs/`,
//! `GET job/{job_id}`, `GET accounts/`, `GET users/`, `GET qos/` under
//! `/slurmdb/v0.0.44/`. Paths answer with and without their trailing slash. The
//! document's other operations answer 501 (`ESLURM_NOT_SUPPORTED`) in their documented
//! shape ([`document`]); paths outside it 404.
//!
//! Authentication ([`auth`]): `X-SLURM-USER-TOKEN` (a Berth token: JWT, API token or an
//! OIDC issuer's token) with `X-SLURM-USER-NAME`, which must name the token's own user
//! (401 otherwise: the header never picks whom to act as), or `Authorization: Bearer`.

pub(crate) mod auth;
mod cluster;
mod document;
mod jobs;
mod sinfo;
mod slurmdb;
mod types;

use crate::error::{ApiError, PROBLEM_JSON};
use crate::AppState;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use serde_json::{json, Map, Value};
use types::{Meta, MetaClient, MetaPlugin, MetaSlurm, NoVal, OpenapiError, OpenapiResp};

/// The data parser version served.
pub const VERSION: &str = "v0.0.44";
/// The Slurm release whose document this subset follows.
pub const SLURM_RELEASE: &str = "25.11.7";

/// Slurm's errno values used in `errors[].error_number` (slurm/slurm_errno.h), with
/// their `slurm_strerror()` texts.
pub(crate) mod errno {
    /// `SLURM_ERROR`.
    pub const ERROR: (i32, &str) = (-1, "Unspecified error");
    /// `ESLURM_ACCESS_DENIED`.
    pub const ACCESS_DENIED: (i32, &str) = (2002, "Access/permission denied");
    /// `ESLURM_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: (i32, &str) =
        (2036, "Requested operation not supported on this system");
    /// `ESLURM_INVALID_JOB_ID`.
    pub const INVALID_JOB_ID: (i32, &str) = (2017, "Invalid job id specified");
    /// `ESLURM_REST_INVALID_QUERY`.
    pub const INVALID_QUERY: (i32, &str) = (9000, "Query empty or incorrect type");
    /// `ESLURM_REST_FAIL_PARSING`.
    pub const FAIL_PARSING: (i32, &str) = (9001, "Unable to parse request");
    /// `ESLURM_REST_EMPTY_RESULT`.
    pub const EMPTY_RESULT: (i32, &str) = (9003, "Nothing found with query");
    /// `ESLURM_REST_UNKNOWN_URL`.
    pub const UNKNOWN_URL: (i32, &str) = (9006, "Unable to find requested URL endpoint");
    /// `ESLURM_REST_UNKNOWN_URL_METHOD`.
    pub const UNKNOWN_METHOD: (i32, &str) = (9007, "Unknown HTTP method requested on known URL");
    /// `ESLURM_REST_AUTH_FAIL`.
    pub const AUTH_FAIL: (i32, &str) = (9008, "Authentication failure");
}

/// Whether `path` is one of these routes' (`/slurm/…`, `/slurmdb/…`).
pub fn is_slurm_path(path: &str) -> bool {
    path.starts_with("/slurm/") || path.starts_with("/slurmdb/")
}

/// The routes, to merge into the api's router.
pub fn routes() -> Router<AppState> {
    let mut router = Router::new();
    let slurm = format!("/slurm/{VERSION}");
    let db = format!("/slurmdb/{VERSION}");
    // (path, handler) pairs; each answers with and without a trailing slash.
    let gets: Vec<(String, axum::routing::MethodRouter<AppState>)> = vec![
        (format!("{slurm}/ping"), get(cluster::ping)),
        (format!("{slurm}/diag"), get(cluster::diag)),
        (
            format!("{slurm}/job/submit"),
            axum::routing::post(jobs::submit),
        ),
        (format!("{slurm}/jobs"), get(jobs::list)),
        (
            format!("{slurm}/job/{{job_id}}"),
            get(jobs::get_one).post(jobs::update).delete(jobs::cancel),
        ),
        (format!("{slurm}/nodes"), get(cluster::nodes)),
        (format!("{slurm}/node/{{node_name}}"), get(cluster::node)),
        (format!("{slurm}/partitions"), get(cluster::partitions)),
        (
            format!("{slurm}/partition/{{partition_name}}"),
            get(cluster::partition),
        ),
        (format!("{slurm}/reservations"), get(cluster::reservations)),
        (
            format!("{slurm}/reservation/{{reservation_name}}"),
            get(cluster::reservation),
        ),
        (format!("{slurm}/shares"), get(cluster::shares)),
        (format!("{db}/jobs"), get(slurmdb::jobs)),
        (format!("{db}/job/{{job_id}}"), get(slurmdb::job_get)),
        (format!("{db}/accounts"), get(slurmdb::accounts)),
        (format!("{db}/users"), get(slurmdb::users)),
        (format!("{db}/qos"), get(slurmdb::qos)),
    ];
    for (path, handler) in gets {
        let handler = handler.fallback(other_method);
        router = router
            .route(&format!("{path}/"), handler.clone())
            .route(&path, handler);
    }
    router
        .route("/slurm/{*rest}", axum::routing::any(unknown_url))
        .route("/slurmdb/{*rest}", axum::routing::any(unknown_url))
}

/// Any other path under `/slurm/` or `/slurmdb/`: an operation of slurmrestd's document
/// that Berth does not serve is 501 (`ESLURM_NOT_SUPPORTED`), anything else 404
/// (`ESLURM_REST_UNKNOWN_URL`); either answer carries the operation's required payload,
/// empty ([`errors_as_openapi_resp`]).
async fn unknown_url(method: Method, uri: axum::http::Uri) -> Response {
    if document::documented(&method, uri.path()) {
        return SlurmError::new(
            StatusCode::NOT_IMPLEMENTED,
            errno::NOT_SUPPORTED,
            format!(
                "Berth serves a subset of slurmrestd {VERSION}: {method} {} is not served",
                uri.path()
            ),
            "path",
        )
        .into_response();
    }
    SlurmError::new(
        StatusCode::NOT_FOUND,
        errno::UNKNOWN_URL,
        format!(
            "Berth serves a subset of slurmrestd {VERSION}: no {method} {}",
            uri.path()
        ),
        "path",
    )
    .into_response()
}

/// Another method on a path Berth serves: 501 when slurmrestd's document has the
/// operation ([`unknown_url`]), else 405 (`ESLURM_REST_UNKNOWN_URL_METHOD`).
async fn other_method(method: Method, uri: axum::http::Uri) -> Response {
    if document::documented(&method, uri.path()) {
        return unknown_url(method, uri).await;
    }
    SlurmError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        errno::UNKNOWN_METHOD,
        format!("slurmrestd {VERSION} has no {method} {}", uri.path()),
        "method",
    )
    .into_response()
}

/// The document Slurm's `squeue --json` prints (data parser v0.0.44,
/// `v0.0.44_openapi_job_info_resp`, as `GET /slurm/v0.0.44/jobs` answers) for `jobs`,
/// asked by `user`: what the CLI prints for `squeue --json`/`--yaml`, and for
/// `scontrol show job --json`/`--yaml` (slurmrestd's `job/{job_id}` answers in the same
/// shape).
pub fn squeue_document(jobs: &[berth_core::wire::Job], user: &str) -> serde_json::Value {
    let payload = jobs::job_info_payload(jobs.iter().map(jobs::job_info).collect());
    document("/slurm/v0.0.44/jobs", user, payload)
}

/// The document Slurm's `sinfo --json` prints (Slurm 23.02 and later: `{"sinfo": [...],
/// "meta", "errors", "warnings"}`, data parser v0.0.44's `SINFO_DATA`; see [`sinfo`] for
/// the fields and how nodes are grouped) for `partitions` over `nodes`, asked by `user`.
/// `all_nodes` names every node (a partition with no member list holds them all);
/// `node_oriented` is sinfo's `-N` (one entry per node and partition); `filtered` says
/// that a node filter (`-n`, `-t`, `-r`, `-d`, `-R`) chose `nodes`, so that a partition
/// with none of them is left out rather than shown empty.
pub fn sinfo_document(
    partitions: &[berth_core::wire::Partition],
    nodes: &[berth_core::wire::Node],
    all_nodes: &[String],
    node_oriented: bool,
    filtered: bool,
    user: &str,
) -> serde_json::Value {
    let list = sinfo::entries(partitions, nodes, all_nodes, node_oriented, filtered);
    document("/slurm/v0.0.44/sinfo", user, json!({ "sinfo": list }))
}

/// The document `scontrol show node --json` prints (`v0.0.44_openapi_nodes_resp`, as
/// `GET /slurm/v0.0.44/nodes` answers) for `nodes`, asked by `user`.
pub fn nodes_document(nodes: &[berth_core::wire::Node], user: &str) -> serde_json::Value {
    let list: Vec<types::NodeInfo> = nodes.iter().map(cluster::node_info).collect();
    document(
        "/slurm/v0.0.44/nodes",
        user,
        json!({ "nodes": list, "last_update": now() }),
    )
}

/// The document `scontrol show partition --json` prints
/// (`v0.0.44_openapi_partition_resp`, as `GET /slurm/v0.0.44/partitions` answers) for
/// `partitions`, asked by `user`; `all_nodes` names every node (a partition with no
/// member list holds them all).
pub fn partitions_document(
    partitions: &[berth_core::wire::Partition],
    all_nodes: &[String],
    user: &str,
) -> serde_json::Value {
    let list: Vec<Value> = partitions
        .iter()
        .map(|p| cluster::partition_info(p, all_nodes))
        .collect();
    document(
        "/slurm/v0.0.44/partitions",
        user,
        json!({ "partitions": list, "last_update": now() }),
    )
}

/// The document `scontrol show reservation --json` prints
/// (`v0.0.44_openapi_reservation_resp`, as `GET /slurm/v0.0.44/reservations` answers)
/// for `reservations`, asked by `user`.
pub fn reservations_document(
    reservations: &[berth_core::wire::Reservation],
    user: &str,
) -> serde_json::Value {
    let list: Vec<types::ReservationInfo> =
        reservations.iter().map(cluster::reservation_info).collect();
    document(
        "/slurm/v0.0.44/reservations",
        user,
        json!({ "reservations": list, "last_update": now() }),
    )
}

/// The document Slurm's `sacct --json` prints (`v0.0.44_openapi_slurmdbd_jobs_resp`, as
/// `GET /slurmdb/v0.0.44/jobs` answers) for `runs`, asked by `user`.
pub fn sacct_document(runs: &[berth_core::accounting::AcctJob], user: &str) -> serde_json::Value {
    let list: Vec<serde_json::Value> = runs.iter().map(slurmdb::job).collect();
    document(
        "/slurmdb/v0.0.44/jobs",
        user,
        serde_json::json!({ "jobs": list }),
    )
}

fn document(path: &str, user: &str, payload: serde_json::Value) -> serde_json::Value {
    serde_json::to_value(OpenapiResp {
        payload,
        meta: meta(path, user),
        errors: Vec::new(),
        warnings: Vec::new(),
    })
    .unwrap_or_default()
}

/// The `meta` of an answer for `user` (empty when unknown) on `path`.
pub(crate) fn meta(path: &str, user: &str) -> Meta {
    let (plugin, name) = if path.starts_with("/slurmdb/") {
        ("openapi/slurmdbd", "Slurm OpenAPI slurmdbd")
    } else {
        ("openapi/slurmctld", "Slurm OpenAPI slurmctld")
    };
    Meta {
        plugin: MetaPlugin {
            plugin_type: plugin.into(),
            name: name.into(),
            data_parser: format!("data_parser/{VERSION}"),
            accounting_storage: "accounting_storage/berth".into(),
        },
        client: MetaClient {
            source: "berth".into(),
            user: user.into(),
            group: String::new(),
        },
        command: Vec::new(),
        slurm: MetaSlurm {
            version: [("major", "25"), ("micro", "7"), ("minor", "11")]
                .into_iter()
                .collect(),
            release: SLURM_RELEASE.into(),
            cluster: crate::cluster_name::get().into(),
        },
    }
}

/// A successful answer: `payload`'s fields with `meta`, no errors, and `warnings`.
pub(crate) fn answer<T: Serialize>(
    path: &str,
    user: &str,
    payload: T,
    warnings: Vec<types::OpenapiWarning>,
) -> Response {
    axum::Json(OpenapiResp {
        payload,
        meta: meta(path, user),
        errors: Vec::new(),
        warnings,
    })
    .into_response()
}

/// A successful answer on `uri` for `caller`, with no warnings ([`answer`]).
pub(crate) fn answer_ok<T: Serialize>(
    uri: &axum::http::Uri,
    caller: &crate::auth::Caller,
    payload: T,
) -> Response {
    answer(uri.path(), &caller.name, payload, Vec::new())
}

/// An error as slurmrestd answers one: the status and one entry of `errors`. The
/// payload's required fields are added on the way out ([`errors_as_openapi_resp`]).
#[derive(Debug)]
pub struct SlurmError {
    status: StatusCode,
    error: OpenapiError,
}

impl SlurmError {
    pub(crate) fn new(
        status: StatusCode,
        (number, text): (i32, &str),
        description: impl Into<String>,
        source: &str,
    ) -> Self {
        SlurmError {
            status,
            error: OpenapiError {
                description: description.into(),
                error_number: number,
                error: text.into(),
                source: source.into(),
            },
        }
    }

    /// A 400 naming `field`.
    pub(crate) fn bad_field(field: &str, description: impl Into<String>) -> Self {
        SlurmError::new(
            StatusCode::BAD_REQUEST,
            errno::FAIL_PARSING,
            format!("{field}: {}", description.into()),
            field,
        )
    }
}

/// The header that marks a body as a slurmrestd error made here (the outer middleware
/// adds the payload's required fields and `meta`, and removes the header).
const SLURM_ERROR_HEADER: &str = "x-berth-slurmrestd-error";

impl IntoResponse for SlurmError {
    fn into_response(self) -> Response {
        let body = json!({ "errors": [self.error], "warnings": [] });
        let mut response = (self.status, axum::Json(body)).into_response();
        // Marked as an error document so that the api's error middleware leaves it be;
        // [`errors_as_openapi_resp`] gives it its final shape and type.
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        response
            .headers_mut()
            .insert(SLURM_ERROR_HEADER, HeaderValue::from_static("1"));
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<ApiError> for SlurmError {
    fn from(e: ApiError) -> Self {
        let problem = e.problem();
        from_problem(&problem, "")
    }
}

/// The slurmrestd error for a problem document of status `problem.status`.
fn from_problem(problem: &berth_core::wire::Problem, path: &str) -> SlurmError {
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let (number, source) = match status {
        StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => {
            (errno::FAIL_PARSING, problem.field.clone())
        }
        StatusCode::UNAUTHORIZED => (errno::AUTH_FAIL, None),
        StatusCode::FORBIDDEN => (errno::ACCESS_DENIED, None),
        StatusCode::NOT_FOUND if path.contains("/job/") => (errno::INVALID_JOB_ID, None),
        StatusCode::NOT_FOUND => (errno::EMPTY_RESULT, None),
        StatusCode::METHOD_NOT_ALLOWED => (errno::UNKNOWN_METHOD, None),
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            (errno::INVALID_QUERY, None)
        }
        _ => (errno::ERROR, None),
    };
    let mut description = problem.detail.clone();
    if let Some(id) = &problem.request_id {
        description = format!("{description} (request {id})");
    }
    SlurmError::new(
        status,
        number,
        description,
        source.as_deref().unwrap_or(&problem.code),
    )
}

/// The middleware that gives every error answer under `/slurm/` and `/slurmdb/` the shape
/// slurmrestd's document promises (`errors`, `meta` and the operation's required
/// payload), whatever produced it: a handler, the rate limiter (429), the body limit
/// (413), the router (405), the authentication (401).
pub async fn errors_as_openapi_resp(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    if !is_slurm_path(&path) {
        return next.run(request).await;
    }
    let method = request.method().clone();
    let response = next.run(request).await;
    let (mut parts, body) = response.into_parts();
    let ours = parts.headers.remove(SLURM_ERROR_HEADER).is_some();
    let is_problem = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == PROBLEM_JSON.as_bytes());
    if !ours && !is_problem {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, 256 * 1024).await else {
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let mut object = match (ours, serde_json::from_slice::<Value>(&bytes)) {
        (true, Ok(Value::Object(map))) => map,
        (false, Ok(value)) => match serde_json::from_value::<berth_core::wire::Problem>(value) {
            Ok(problem) => {
                let error = from_problem(&problem, &path);
                let mut map = Map::new();
                map.insert("errors".into(), json!([error.error]));
                map.insert("warnings".into(), json!([]));
                map
            }
            Err(_) => Map::new(),
        },
        _ => Map::new(),
    };
    for (k, v) in document::empty_payload(&method, &path) {
        object.entry(k).or_insert(v);
    }
    object.insert(
        "meta".into(),
        serde_json::to_value(meta(&path, "")).unwrap_or(Value::Null),
    );
    object.entry("errors").or_insert_with(|| json!([]));
    object.entry("warnings").or_insert_with(|| json!([]));
    let body = serde_json::to_vec(&Value::Object(object)).unwrap_or_default();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// Seconds since the epoch of `t` as a set `*_no_val` number; unset when `None`.
pub(crate) fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> NoVal<i64> {
    NoVal::opt(t.map(|t| t.timestamp()))
}

/// Minutes (rounded up) of a time limit in seconds; `None` is `infinite`.
pub(crate) fn minutes(seconds: Option<u64>) -> NoVal<i64> {
    NoVal::limit(seconds.map(|s| i64::try_from(s.div_ceil(60)).unwrap_or(i64::MAX)))
}

/// Now, as a set `*_no_val` number (`last_update`, `last_backfill`).
pub(crate) fn now() -> NoVal<i64> {
    NoVal::num(chrono::Utc::now().timestamp())
}
