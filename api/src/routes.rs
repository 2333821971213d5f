//! The HTTP handlers: thin, each extracts input, checks the caller, calls one service or
//! `db` function, and returns a view.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::{node_sync, submit, views, AppState};
use axum::body::Body;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use berth_core::state::JobState;
use berth_core::wire::{
    ClusterInfo, Job, JobCreate, JobCreated, JobList, JobListQuery, JobWillRun, Node, NodeList,
    NodeRegister, OutputChunk, OutputQuery, OutputStream, PartitionList, Problem, QueueFields,
    QueueJob, QueueList, QueueQuery, SparseQueueJob, SyncRequest, SyncResponse,
};
use berth_db::job::{JobFilter, JobRow};
use berth_db::{allocation, job, node, notify, output, partition, DbError};
use std::time::Duration;

fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(v)| v)
        .map_err(|e| rejection("JSON body", e.body_text()))
}

/// A comma-separated list parameter's values (`a,b` → `["a", "b"]`), empty items dropped.
fn list(s: Option<&str>) -> Option<Vec<String>> {
    s.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect()
    })
}

fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(v)| v)
        .map_err(|e| rejection("query", e.body_text()))
}

/// Loads a job the caller may see: admins and operators see every job, users their own
/// and those of the accounts they coordinate; others' jobs are 404.
pub(crate) async fn visible_job(
    state: &AppState,
    caller: &Caller,
    id: i64,
) -> Result<JobRow, ApiError> {
    caller.require_person()?;
    caller.require_job(id)?;
    let Some(row) = job::job_get(&state.pool, id).await? else {
        return Err(ApiError::NotFound(format!("no job {id}")));
    };
    if caller.sees_all_jobs() || row.user_name == caller.name {
        return Ok(row);
    }
    let coordinated = caller.coordinated_accounts(state).await?;
    match &row.account {
        Some(acct) if coordinated.contains(acct) => Ok(row),
        _ => Err(ApiError::NotFound(format!("no job {id}"))),
    }
}

pub(crate) async fn job_view(state: &AppState, row: &JobRow) -> Result<Job, ApiError> {
    let allocations = allocation::allocation_list_for_jobs(&state.pool, &[row.id]).await?;
    let mut view = views::job_view(row, &allocations.iter().collect::<Vec<_>>());
    view.output_truncated = !output::output_truncated_jobs(&state.pool, &[row.id])
        .await?
        .is_empty();
    if row.state == "PENDING" && !row.hold {
        view.queue_position = job::job_queue_positions(&state.pool, &[row.id])
            .await?
            .first()
            .and_then(|(_, p)| u64::try_from(*p).ok());
    }
    Ok(view)
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", operation_id = "health_live",
    responses((status = 200, description = "The process is alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "health", operation_id = "health_ready",
    responses((status = 200, description = "Ready", body = String),
              (status = 503, description = "The database is unreachable", body = Problem)))]
pub async fn readyz(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    berth_db::ping(&state.pool)
        .await
        .map_err(ApiError::Unavailable)?;
    Ok("ready")
}

/// Show the cluster.
///
/// Its name (what `-M/--clusters` of the Slurm-named commands must name) and the api's
/// version. Any valid credentials may ask.
#[utoipa::path(get, path = "/v1/cluster", tag = "health", operation_id = "cluster_get",
    responses((status = 200, description = "The cluster", body = ClusterInfo),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn cluster_get(_caller: Caller) -> Json<ClusterInfo> {
    Json(ClusterInfo {
        name: crate::cluster_name::get().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// Submit a batch job.
///
/// The body holds a batch script whose `#SBATCH` lines are read as `sbatch` reads them,
/// optional command-line options (which win), or a structured spec. A repeated request
/// with the same `Idempotency-Key` and body returns the first job (200) instead of making
/// another.
#[utoipa::path(post, path = "/v1/jobs", tag = "jobs", operation_id = "job_create",
    request_body = JobCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Makes retries safe: the same key and body return the same job")),
    responses(
        (status = 201, description = "Job created", body = JobCreated),
        (status = 200, description = "Same Idempotency-Key and body as an earlier request: that job", body = JobCreated),
        (status = 400, description = "A bad option or field, naming it (and the script line)", body = Problem),
        (status = 401, description = "No or bad credentials", body = Problem),
        (status = 409, description = "Idempotency-Key reused with another body", body = Problem),
        (status = 422, description = "No node could ever satisfy the request", body = Problem),
        (status = 503, description = "Database unavailable, or the live queue holds MaxJobCount jobs (code max_job_count); retry after Retry-After", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_create(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Json<JobCreate>, JsonRejection>,
) -> Result<Response, ApiError> {
    caller.require_person()?;
    let req = json_body(body)?;
    let key = match headers.get("idempotency-key") {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| ApiError::bad_field("Idempotency-Key", "must be visible ASCII"))?,
        ),
        None => None,
    };
    let (id, created) = submit::submit_job(&state, &caller.name, caller.role, &req, key).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut response = (status, Json(JobCreated { id })).into_response();
    if let Ok(location) = format!("/v1/jobs/{id}").parse() {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// Test a batch job without submitting it (`sbatch --test-only`).
///
/// The body is what `POST /v1/jobs` takes, checked the same way (the same errors); nothing
/// is stored. The answer says when and where the job would start if it were submitted now:
/// the scheduler's planner over the current queue, nodes and running jobs' time limits.
#[utoipa::path(post, path = "/v1/jobs/will-run", tag = "jobs", operation_id = "job_will_run",
    request_body = JobCreate,
    responses(
        (status = 200, description = "When and where the job would start", body = JobWillRun),
        (status = 400, description = "A bad option or field, naming it (and the script line)", body = Problem),
        (status = 401, description = "No or bad credentials", body = Problem),
        (status = 403, description = "An option the caller may not use (a negative --nice)", body = Problem),
        (status = 422, description = "No node could ever satisfy the request", body = Problem),
        (status = 503, description = "Database unavailable", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_will_run(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<JobCreate>, JsonRejection>,
) -> Result<Json<JobWillRun>, ApiError> {
    caller.require_person()?;
    let req = json_body(body)?;
    let answer = submit::will_run_job(&state, &caller.name, caller.role, &req).await?;
    Ok(Json(answer))
}

/// The database filter for a job list query as `caller` may run it: the states checked,
/// the page size checked against `max_limit` (`default_limit` when absent) and asked for
/// one more row (to know whether a page follows), the cursor read, and a plain user's
/// view narrowed to their own jobs and their coordinated accounts'.
///
/// # Errors
/// 400 naming `state`, `limit` or `cursor`.
async fn job_filter(
    state: &AppState,
    caller: &Caller,
    q: &JobListQuery,
    default_limit: u32,
    max_limit: u32,
) -> Result<JobFilter, ApiError> {
    let states = match &q.state {
        Some(s) => Some(
            s.split(',')
                .map(|st| {
                    st.parse::<JobState>()
                        .map(|st| st.as_str().to_string())
                        .map_err(|e| ApiError::bad_field("state", e.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|mut v| {
                    // Each state once: the list reads each state on its own.
                    v.sort();
                    v.dedup();
                    v
                })?,
        ),
        None => None,
    };
    let limit = q.limit.unwrap_or(default_limit);
    if !(1..=max_limit).contains(&limit) {
        return Err(ApiError::bad_field(
            "limit",
            format!("must be between 1 and {max_limit}"),
        ));
    }
    let after_id = match &q.cursor {
        Some(c) => c
            .parse::<i64>()
            .map_err(|_| ApiError::bad_field("cursor", "not a cursor from this api"))?,
        None => 0,
    };
    let (viewer, viewer_accounts) = if caller.sees_all_jobs() {
        (None, Vec::new())
    } else {
        (
            Some(caller.name.clone()),
            caller.coordinated_accounts(state).await?,
        )
    };
    Ok(JobFilter {
        states,
        user_name: q.user.clone(),
        partition: q.partition.clone(),
        name: q.name.clone(),
        accounts: list(q.account.as_deref()),
        qos: list(q.qos.as_deref()),
        after_id,
        limit: i64::from(limit) + 1,
        viewer,
        viewer_accounts,
        ended_after: None,
    })
}

/// List jobs.
///
/// Filters combine with AND; pages follow `next_cursor`. Plain users see only their own
/// jobs and those of the accounts they coordinate.
#[utoipa::path(get, path = "/v1/jobs", tag = "jobs", operation_id = "job_list",
    params(JobListQuery),
    responses((status = 200, description = "A page of jobs", body = JobList),
              (status = 400, description = "A bad filter", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_list(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<JobListQuery>, QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    caller.require_person()?;
    let q = query(q)?;
    let filter = job_filter(&state, &caller, &q, 100, 1000).await?;
    let limit = (filter.limit - 1) as usize;
    let rows = job::job_list(&state.pool, &filter).await?;
    let more = rows.len() > limit;
    let rows = &rows[..rows.len().min(limit)];
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let allocations = allocation::allocation_list_for_jobs(&state.pool, &ids).await?;
    let truncated = output::output_truncated_jobs(&state.pool, &ids).await?;
    let mut items = views::job_views(rows, &allocations);
    let pending: Vec<i64> = rows
        .iter()
        .filter(|r| r.state == "PENDING" && !r.hold)
        .map(|r| r.id)
        .collect();
    let positions: std::collections::HashMap<i64, i64> = if pending.is_empty() {
        Default::default()
    } else {
        job::job_queue_positions(&state.pool, &pending)
            .await?
            .into_iter()
            .collect()
    };
    for job in &mut items {
        job.output_truncated = truncated.contains(&job.id);
        job.queue_position = positions.get(&job.id).and_then(|p| u64::try_from(*p).ok());
    }
    Ok(Json(JobList {
        items,
        next_cursor: more
            .then(|| rows.last().map(|r| r.id.to_string()))
            .flatten(),
    }))
}

/// Since when an ended job still shows in the live queue (Slurm's `MinJobAge`).
fn live_queue_since(state: &AppState) -> Option<chrono::DateTime<chrono::Utc>> {
    state.limiters.limits().live_queue_since(chrono::Utc::now())
}

/// List the queue as squeue shows it.
///
/// The live queue, as slurmctld holds it: jobs not ended, and ended jobs for
/// `[scheduler] min_job_age_seconds` (Slurm's `MinJobAge`, 300 s) after their end; older
/// ones stay in `GET /v1/jobs` and accounting.
///
/// The jobs `GET /v1/jobs` lists for the same filters (and the same caller), with only
/// the fields squeue's formats show: no spec, environment or allocation detail, and no
/// queue position, by ascending id.
///
/// Two shapes, by `Accept`:
/// * `application/json` (the default): a page of up to `limit` jobs (1..=10000, default
///   10000); pages follow `next_cursor`.
/// * `application/x-ndjson`: one job a line (a [`QueueJob`] document), sent as the
///   database returns them, so that a client reads the first while the last are still
///   being read: every matching job, or the first `limit` (1..=10000) when it is given
///   (ask for the rest with `cursor` set to the last line's id). A stream cut short (the
///   database failed mid-way, the client took nothing for 5 s, or the whole took over
///   60 s) ends the connection without the chunked body's last chunk, never as a shorter
///   list that looks whole.
///
/// `fields` (`name,user,partition`) keeps only those fields of each job, beside `id` and
/// `state`, in either shape; a name that is no field of `QueueJob` is a 400 naming it.
#[utoipa::path(get, path = "/v1/queue", tag = "jobs", operation_id = "queue_list",
    params(JobListQuery, QueueQuery),
    responses((status = 200, description = "A page of the queue, or (`Accept: application/x-ndjson`) its jobs one a line",
                content((QueueList = "application/json"), (QueueJob = "application/x-ndjson"))),
              (status = 400, description = "A bad filter", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn queue_list(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    q: Result<Query<JobListQuery>, QueryRejection>,
    own: Result<Query<QueueQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    caller.require_person()?;
    let q = query(q)?;
    let fields = match query(own)?.fields {
        Some(list) => QueueFields::parse(&list).map_err(|e| ApiError::bad_field("fields", e))?,
        None => QueueFields::ALL,
    };
    if accepts_ndjson(&headers) {
        let limit = if q.limit.is_some() { 10_000 } else { u32::MAX };
        let mut filter = job_filter(&state, &caller, &q, limit, limit).await?;
        filter.ended_after = live_queue_since(&state);
        return queue_stream(&state, filter, fields).await;
    }
    let mut filter = job_filter(&state, &caller, &q, 10_000, 10_000).await?;
    filter.ended_after = live_queue_since(&state);
    let limit = (filter.limit - 1) as usize;
    let mut rows = job::job_queue_list(&state.pool, &filter).await?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next_cursor = more
        .then(|| rows.last().map(|r| r.id.to_string()))
        .flatten();
    let items: Vec<QueueJob> = rows.into_iter().map(views::queue_view).collect();
    /// [`QueueList`] with only `fields` of each job (with every field, the same document:
    /// `berth_core::wire`'s tests hold the two serializations equal).
    #[derive(serde::Serialize)]
    struct SparseQueueList<'a> {
        items: Vec<SparseQueueJob<'a>>,
        next_cursor: Option<String>,
    }
    let items = items
        .iter()
        .map(|job| SparseQueueJob { job, fields })
        .collect();
    Ok(Json(SparseQueueList { items, next_cursor }).into_response())
}

/// The media type of newline-delimited JSON (one document a line).
const NDJSON: &str = "application/x-ndjson";

/// The longest a `GET /v1/queue` stream may take from its first row to its last: past it
/// the stream is cut short.
pub const QUEUE_STREAM_DEADLINE: Duration = Duration::from_secs(60);

/// The longest a `GET /v1/queue` stream waits for its client to take the next piece
/// before it is cut short (a client that stops reading does not keep its database
/// connection).
pub const QUEUE_STREAM_STALL: Duration = Duration::from_secs(5);

/// Whether `Accept` names `application/x-ndjson`.
fn accepts_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|media| {
            media
                .split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(NDJSON))
        })
}

/// What the task reading the queue hands the response body.
enum QueuePiece {
    /// Lines of jobs.
    Lines(bytes::Bytes),
    /// Every job was sent.
    Done,
}

/// `GET /v1/queue` as `application/x-ndjson`: a task reads the rows and writes them in
/// pieces of about 64 KiB, which the body sends as they come. Holding one of the
/// [`AppState::queue_streams`] permits, it reads them from the open query (in a read-only
/// transaction of its own) while the client reads; without one it reads every row first
/// and frees the connection. The answer starts once the first row (or the end) has
/// arrived, so that a database that cannot be reached is a 503 problem, not a broken
/// stream.
async fn queue_stream(
    state: &AppState,
    filter: JobFilter,
    fields: QueueFields,
) -> Result<Response, ApiError> {
    use futures_util::StreamExt;
    let (started_tx, started) = tokio::sync::oneshot::channel::<Result<(), DbError>>();
    let (pieces_tx, pieces) = tokio::sync::mpsc::channel::<QueuePiece>(4);
    let pool = state.pool.clone();
    let permit = state.queue_streams.clone().try_acquire_owned().ok();
    // The query asks for one row more than a page, to tell whether there are more.
    let take = usize::try_from(filter.limit - 1).unwrap_or(usize::MAX);
    let work = async move {
        let mut started = Some(started_tx);
        let sent = match permit {
            Some(_permit) => match job::job_queue_begin(&pool).await {
                Ok(mut tx) => {
                    let rows = job::job_queue_rows(&mut tx, &filter).take(take).boxed();
                    let sent = send_queue_lines(rows, fields, &mut started, &pieces_tx).await;
                    // Read only: the commit only ends it.
                    let _ = tx.commit().await;
                    Ok(sent)
                }
                Err(e) => Err(e),
            },
            None => match job::job_queue_list(&pool, &filter).await {
                Ok(rows) => {
                    let rows = futures_util::stream::iter(rows.into_iter().take(take).map(Ok));
                    Ok(send_queue_lines(rows.boxed(), fields, &mut started, &pieces_tx).await)
                }
                Err(e) => Err(e),
            },
        };
        match sent {
            Ok(true) => drop(pieces_tx.send(QueuePiece::Done).await),
            Ok(false) => {}
            Err(e) => drop(started.take().map(|s| s.send(Err(e)))),
        }
    };
    tokio::spawn(async move {
        if tokio::time::timeout(QUEUE_STREAM_DEADLINE, work)
            .await
            .is_err()
        {
            tracing::warn!("the queue's stream was cut short: not read within its deadline");
        }
    });
    match started.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e.into()),
        Err(_) => return Err(ApiError::Timeout),
    }
    let body = futures_util::stream::unfold(Some(pieces), |pieces| async move {
        let mut pieces = pieces?;
        match pieces.recv().await {
            Some(QueuePiece::Lines(lines)) => Some((Ok(lines), Some(pieces))),
            Some(QueuePiece::Done) => None,
            None => Some((
                Err(std::io::Error::other("the queue's stream was cut short")),
                None,
            )),
        }
    });
    Ok(([(header::CONTENT_TYPE, NDJSON)], Body::from_stream(body)).into_response())
}

/// Writes `rows` as lines of [`QueueJob`]s (their `fields`) into pieces of about 64 KiB
/// on `pieces`, telling `started` once the first row or the end has come (or the error
/// before any). Whether every row was sent: false when the rows failed part-way, the
/// client went away, or it took no piece for [`QUEUE_STREAM_STALL`].
async fn send_queue_lines(
    mut rows: futures_util::stream::BoxStream<'_, Result<berth_db::job::JobQueueRow, DbError>>,
    fields: QueueFields,
    started: &mut Option<tokio::sync::oneshot::Sender<Result<(), DbError>>>,
    pieces: &tokio::sync::mpsc::Sender<QueuePiece>,
) -> bool {
    use futures_util::StreamExt;
    const PIECE: usize = 64 * 1024;
    let send = |lines: Vec<u8>| async move {
        matches!(
            tokio::time::timeout(
                QUEUE_STREAM_STALL,
                pieces.send(QueuePiece::Lines(lines.into()))
            )
            .await,
            Ok(Ok(()))
        )
    };
    let mut buf: Vec<u8> = Vec::with_capacity(PIECE + 4096);
    while let Some(row) = rows.next().await {
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                match started.take() {
                    Some(s) => drop(s.send(Err(e))),
                    None => tracing::warn!(error = %e, "the queue's stream was cut short"),
                }
                return false;
            }
        };
        if let Some(s) = started.take() {
            if s.send(Ok(())).is_err() {
                return false;
            }
        }
        // A `QueueJob` always serializes (strings, numbers, times).
        let job = views::queue_view(row);
        if serde_json::to_writer(&mut buf, &SparseQueueJob { job: &job, fields }).is_err() {
            return false;
        }
        buf.push(b'\n');
        if buf.len() >= PIECE {
            let piece = std::mem::replace(&mut buf, Vec::with_capacity(PIECE + 4096));
            if !send(piece).await {
                return false;
            }
        }
    }
    if let Some(s) = started.take() {
        if s.send(Ok(())).is_err() {
            return false;
        }
    }
    buf.is_empty() || send(buf).await
}

/// Show one job.
#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "jobs", operation_id = "job_get",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The job", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Job>, ApiError> {
    let row = visible_job(&state, &caller, id).await?;
    Ok(Json(job_view(&state, &row).await?))
}

/// Show a job's batch script.
///
/// The script as submitted (`#SBATCH` lines included; a `--wrap` job's generated
/// script), as `scontrol write batch_script` and `sacct -B` show it: `text/plain`.
#[utoipa::path(get, path = "/v1/jobs/{id}/script", tag = "jobs", operation_id = "job_script",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The batch script", body = String, content_type = "text/plain"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_script(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let row = visible_job(&state, &caller, id).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        row.script,
    )
        .into_response())
}

/// Cancel a job.
///
/// A pending job ends at once; a running one is marked CANCELLED and its processes are
/// signalled (SIGTERM, then SIGKILL after the grace) by its worker. Cancelling an ended job
/// changes nothing and returns it as it is.
#[utoipa::path(post, path = "/v1/jobs/{id}/cancel", tag = "jobs", operation_id = "job_cancel",
    params(("id" = i64, Path, description = "Job id")),
    responses((status = 200, description = "The job after the cancellation", body = Job),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> Result<Json<Job>, ApiError> {
    cancel_one(&state, &caller, id).await.map(Json)
}

/// Cancels job `id` (and the pending tasks of its array) for `caller` (see
/// [`job_cancel`]).
///
/// # Errors
/// 404 for a job the caller may not see; 503 when the database is unreachable.
pub(crate) async fn cancel_one(
    state: &AppState,
    caller: &Caller,
    id: i64,
) -> Result<Job, ApiError> {
    visible_job(state, caller, id).await?;
    let mut tx = berth_db::begin(&state.pool).await?;
    let tasks = job::job_array_cancel_in_tx(&mut tx, id, &caller.name).await?;
    for a in allocation::allocation_list_for_jobs(&mut *tx, &tasks).await? {
        notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
    }
    if let Some(row) = job::job_cancel_in_tx(&mut tx, id, &caller.name).await? {
        for a in allocation::allocation_list_for_jobs(&mut *tx, &[id]).await? {
            notify::notify(&mut *tx, notify::NODE_CHANNEL, &a.node_name).await?;
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, &row.id.to_string()).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    let row = visible_job(state, caller, id).await?;
    job_view(state, &row).await
}

/// The most chunks one page of an output read holds: a reader holds at most one page (a
/// chunk is at most [`MAX_OUTPUT_CHUNK_BYTES`], workers send 64 KiB).
const OUTPUT_PAGE_CHUNKS: i64 = 16;

/// The most bytes one uploaded output chunk may hold.
pub const MAX_OUTPUT_CHUNK_BYTES: usize = 1024 * 1024;

/// The line that ends a run's output cut at the cap.
fn truncation_marker(stream: &str, run: i32, bytes: i64) -> bytes::Bytes {
    bytes::Bytes::from(format!(
        "\n[berth: the {stream} of run {run} was truncated after {bytes} bytes (the api keeps \
         at most that much per run); the whole file is on the job's node]\n"
    ))
}

/// Where an output read is: the last chunk sent, the run it belonged to, the truncated
/// runs already marked, and whether it follows the job until it ends.
struct OutputCursor {
    pool: berth_db::Pool,
    id: i64,
    stream: &'static str,
    pos: (i32, i64),
    marked: Vec<i32>,
    follow: bool,
    done: bool,
}

impl OutputCursor {
    /// The next piece of the body: a page of chunks (with truncation lines where a
    /// truncated run ends), or `None` at the end. A database error ends the body.
    async fn next(&mut self) -> Option<bytes::Bytes> {
        loop {
            if self.done {
                return None;
            }
            // Whether the job had ended before this page was read: then an empty page
            // is the end (the worker uploads everything before it reports the exit).
            let terminal = if self.follow {
                match job::job_get(&self.pool, self.id).await {
                    Ok(Some(row)) => row
                        .state
                        .parse::<JobState>()
                        .map(|s| s.is_terminal())
                        .unwrap_or(true),
                    Ok(None) => true,
                    Err(_) => false,
                }
            } else {
                true
            };
            let page = match output::output_read(
                &self.pool,
                self.id,
                self.stream,
                self.pos.0,
                self.pos.1,
                OUTPUT_PAGE_CHUNKS,
            )
            .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(
                        job.id = self.id,
                        error = &e as &dyn std::error::Error,
                        "reading output failed"
                    );
                    self.done = true;
                    return None;
                }
            };
            let truncations = output::output_truncations(&self.pool, self.id, self.stream)
                .await
                .unwrap_or_default();
            let mut out = bytes::BytesMut::new();
            let mark_before = |out: &mut bytes::BytesMut, marked: &mut Vec<i32>, upto: i32| {
                for t in truncations.iter().filter(|t| t.run < upto) {
                    if !marked.contains(&t.run) {
                        marked.push(t.run);
                        out.extend_from_slice(&truncation_marker(self.stream, t.run, t.bytes));
                    }
                }
            };
            if page.is_empty() {
                // Runs up to the current one whose stored part is all sent (and, when
                // the job has ended, every one) end with their truncation line.
                let upto = if terminal { i32::MAX } else { self.pos.0 + 1 };
                mark_before(&mut out, &mut self.marked, upto);
                if terminal {
                    self.done = true;
                }
            } else {
                for chunk in page {
                    mark_before(&mut out, &mut self.marked, chunk.run);
                    out.extend_from_slice(&chunk.data);
                    self.pos = (chunk.run, chunk.offset);
                }
            }
            if !out.is_empty() {
                return Some(out.freeze());
            }
            if self.done {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Read a job's output.
///
/// Returns what the job has written to the stream so far, as text, streamed from the
/// database page by page. With `follow=true` the response stays open and new output is
/// streamed until the job ends. The api keeps at most its output cap per run (`[api]
/// output_cap_mib`); a run cut there ends with a line saying so (the file on the node is
/// whole).
#[utoipa::path(get, path = "/v1/jobs/{id}/output", tag = "jobs", operation_id = "job_output",
    params(("id" = i64, Path, description = "Job id"), OutputQuery),
    responses((status = 200, description = "The output", body = String, content_type = "text/plain"),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 404, description = "No such job (or not yours)", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_output(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    q: Result<Query<OutputQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    visible_job(&state, &caller, id).await?;
    let cursor = OutputCursor {
        pool: state.pool.clone(),
        id,
        stream: q.stream.unwrap_or(OutputStream::Stdout).as_str(),
        pos: (-1, -1),
        marked: Vec::new(),
        follow: q.follow,
        done: false,
    };
    let body = futures_util::stream::unfold(cursor, |mut cursor| async move {
        let piece = cursor.next().await?;
        Some((Ok::<_, std::convert::Infallible>(piece), cursor))
    });
    Ok((
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        Body::from_stream(body),
    )
        .into_response())
}

/// List nodes.
///
/// Of a GPU held by a job the caller may not see (another tenant's), the job's id and the
/// GPU's use are left out; it shows as allocated.
#[utoipa::path(get, path = "/v1/nodes", tag = "nodes", operation_id = "node_list",
    responses((status = 200, description = "Every node", body = NodeList),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<NodeList>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let nodes = node::node_list(&state.pool).await?;
    let gpus = node::gpu_list(&state.pool, None).await?;
    let partitions = partition::partition_list(&state.pool).await?;
    let busy: std::collections::HashSet<i64> =
        berth_db::allocation::allocation_busy_nodes(&state.pool)
            .await?
            .into_iter()
            .collect();
    let mut by_node: std::collections::HashMap<i64, Vec<_>> = std::collections::HashMap::new();
    for g in &gpus {
        by_node.entry(g.node_id).or_default().push(g);
    }
    let mut items: Vec<Node> = nodes
        .iter()
        .map(|n| {
            let mine = by_node.remove(&n.id).unwrap_or_default();
            views::node_view(n, &mine, &partitions, busy.contains(&n.id))
        })
        .collect();
    crate::nodes::hide_invisible_jobs(&state, &caller, &mut items).await?;
    Ok(Json(NodeList { items }))
}

/// List partitions.
#[utoipa::path(get, path = "/v1/partitions", tag = "partitions", operation_id = "partition_list",
    responses((status = 200, description = "Every partition", body = PartitionList),
              (status = 401, description = "No or bad credentials", body = Problem)),
    security(("bearer" = [])))]
pub async fn partition_list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<PartitionList>, ApiError> {
    caller.require_person()?;
    caller.require_unscoped()?;
    let rows = partition::partition_list(&state.pool).await?;
    let nodes = node::node_list(&state.pool).await?;
    let gpus = node::gpu_list(&state.pool, None).await?;
    Ok(Json(PartitionList {
        items: rows
            .iter()
            .map(|p| views::partition_view(p, &nodes, &gpus))
            .collect(),
    }))
}

/// Register a node (worker).
///
/// A worker announces its node and GPU inventory; registering again after a restart
/// updates the inventory.
#[utoipa::path(post, path = "/v1/nodes/register", tag = "nodes", operation_id = "node_register",
    request_body = NodeRegister,
    responses((status = 200, description = "The node as registered", body = berth_core::wire::Node),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not a node token for this node", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_register(
    State(state): State<AppState>,
    caller: Caller,
    body: Result<Json<NodeRegister>, JsonRejection>,
) -> Result<Json<berth_core::wire::Node>, ApiError> {
    let req = json_body(body)?;
    caller.require_node(&req.name)?;
    let row = node_sync::register(&state.pool, &req).await?;
    Ok(Json(crate::nodes::row_view(&state, &row).await?))
}

/// Sync a node (worker long poll).
///
/// Carries the worker's heartbeat, job reports (applied once each), GPU samples and the
/// signals it has sent; returns the batch scripts the node must run, the job runs it must
/// stop, the time limits of those it runs and the signals it must send to them. When there is nothing to say, the answer waits up to
/// `wait_seconds` for a change. A report about a run not placed on this node, or one that
/// can never apply, is refused alone and listed in `rejected` with why; a database that
/// forgot reports it acknowledged asks for them again (`resend_after`).
#[utoipa::path(post, path = "/v1/nodes/{name}/sync", tag = "nodes", operation_id = "node_sync",
    params(("name" = String, Path, description = "Node name")),
    request_body = SyncRequest,
    responses((status = 200, description = "What to run and stop", body = SyncResponse),
              (status = 400, description = "A bad field", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not a node token for this node", body = Problem),
              (status = 404, description = "Node not registered", body = Problem)),
    security(("bearer" = [])))]
pub async fn node_sync(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: Result<Json<SyncRequest>, JsonRejection>,
) -> Result<Json<SyncResponse>, ApiError> {
    caller.require_node(&name)?;
    let req = json_body(body)?;
    // Only the node itself (a node token) says its instance is being reclaimed.
    if req.interruption.is_some() && caller.role != berth_core::auth::Role::Node {
        return Err(ApiError::Forbidden(
            "interruption: only the node's own token reports its instance's interruption notice"
                .into(),
        ));
    }
    if req.wait_seconds > node_sync::MAX_WAIT_SECONDS {
        return Err(ApiError::bad_field(
            "wait_seconds",
            format!("at most {}", node_sync::MAX_WAIT_SECONDS),
        ));
    }
    let node_row = node::node_get_by_name(&state.pool, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("node {name} is not registered")))?;
    let memory = node_sync::report_state(&state.pool, &node_row).await?;
    node_sync::note_job_ids_seen(&state.pool, &node_row, &req, memory.job_id_seen).await?;
    let remembered = u64::try_from(memory.report_seq).unwrap_or(0);
    if let Some(remembered) = node_sync::forgotten_reports(&node_row, &req, remembered) {
        // The database forgot reports it had acknowledged: nothing is decided on its older
        // memory until the worker has sent them again.
        node_sync::heartbeat(&state.pool, &node_row, &req).await?;
        return Ok(resend_answer(&state, remembered));
    }
    let rejected = node_sync::apply_reports(&state.pool, &state.keys, &node_row, &req).await?;
    node_sync::note_reports_taken(&state.pool, &node_row, &req, remembered).await?;
    node_sync::ack_signals(&state.pool, &node_row, &req).await?;
    node_sync::heartbeat(&state.pool, &node_row, &req).await?;
    if let Some(notice) = &req.interruption {
        node_sync::reclaim(&state.pool, &node_row, notice).await?;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(u64::from(req.wait_seconds));
    // The running jobs' time limits as this hold began: one changed meanwhile (`scontrol
    // update … TimeLimit=`) is news for the worker too.
    let mut held_limits = None;
    loop {
        let mut wake = state.node_events.subscribe();
        let mut response = node_sync::desired(&state.pool, &state.keys, &node_row, &req).await?;
        response.rejected.clone_from(&rejected);
        let limits_changed = held_limits
            .as_ref()
            .is_some_and(|limits| *limits != response.run_limits);
        response.lease_ms = node_lease_ms(&state);
        if !response.cancellations.is_empty() {
            // Before stopping runs the database does not know: a failover during the hold
            // may have lost what the node reported (the run's start), and then the node's
            // journal, not the database's older memory, decides.
            let remembered = node_sync::reports_remembered(&state.pool, &node_row).await?;
            if let Some(remembered) = node_sync::forgotten_reports(&node_row, &req, remembered) {
                return Ok(resend_answer(&state, remembered));
            }
        }
        if !response.rejected.is_empty()
            || !response.assignments.is_empty()
            || !response.cancellations.is_empty()
            || !response.step_tasks.is_empty()
            || !response.step_cancellations.is_empty()
            || !response.pty_input.is_empty()
            || !response.signals.is_empty()
            || limits_changed
        {
            return Ok(Json(response));
        }
        held_limits.get_or_insert_with(|| response.run_limits.clone());
        // Wait for a notification naming this node (or any, after a listener restart),
        // or the deadline.
        let woke = tokio::time::timeout_at(deadline, async {
            loop {
                match wake.recv().await {
                    Ok(n) if n == name || n == "*" => return,
                    Ok(_) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        return;
                    }
                }
            }
        })
        .await;
        if woke.is_err() {
            return Ok(Json(response));
        }
    }
}

/// The answer to a sync when the database remembers the node's reports only up to
/// `remembered`: send the rest again; nothing else is decided.
fn resend_answer(state: &AppState, remembered: u64) -> Json<SyncResponse> {
    Json(SyncResponse {
        resend_after: Some(remembered),
        lease_ms: node_lease_ms(state),
        ..SyncResponse::default()
    })
}

/// The node lease a sync answer grants, milliseconds: it counts from the worker's sending,
/// before the heartbeat this answer records (`None` when the api has no node timeout).
fn node_lease_ms(state: &AppState) -> Option<u64> {
    state
        .node_lease
        .map(|lease| u64::try_from(lease.as_millis()).unwrap_or(u64::MAX))
}

/// Upload job output (worker).
///
/// Chunks are keyed by run, stream and offset: uploading the same chunk twice stores it
/// once. At most the api's output cap is kept per run and stream (`[api]
/// output_cap_mib`): the chunk that reaches it is cut, later ones are accepted (204) and
/// dropped, and the job shows `output_truncated`.
#[utoipa::path(post, path = "/v1/jobs/{id}/output", tag = "jobs", operation_id = "job_output_upload",
    params(("id" = i64, Path, description = "Job id")),
    request_body = OutputChunk,
    responses((status = 204, description = "Stored"),
              (status = 400, description = "A bad field (a chunk over 1 MiB)", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "Not a node token", body = Problem),
              (status = 404, description = "No such job", body = Problem)),
    security(("bearer" = [])))]
pub async fn job_output_upload(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
    body: Result<Json<OutputChunk>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    if !matches!(
        caller.role,
        berth_core::auth::Role::Node | berth_core::auth::Role::Admin
    ) {
        return Err(ApiError::Forbidden("only workers upload output".into()));
    }
    let chunk = json_body(body)?;
    let offset =
        i64::try_from(chunk.offset).map_err(|_| ApiError::bad_field("offset", "too large"))?;
    let run = i32::try_from(chunk.run).map_err(|_| ApiError::bad_field("run", "too large"))?;
    // The batch output of a run comes from the node that runs (or ran) its batch script: a
    // node's credential uploads only that of its own runs; `node:*` and admins only that
    // of runs placed somewhere.
    let batch_nodes = allocation::allocation_batch_nodes_of_run(&state.pool, id, run).await?;
    let allowed = match caller.own_node() {
        Some(node) => batch_nodes.iter().any(|n| n == node),
        None => !batch_nodes.is_empty(),
    };
    if !allowed {
        let on = caller
            .own_node()
            .map(|node| format!(" on node {node}"))
            .unwrap_or_default();
        return Err(ApiError::NotFound(format!("no run {run} of job {id}{on}")));
    }
    if chunk.incarnation.is_some() {
        // Output of another job that had this id (a failover handed it out again) is not
        // this job's.
        let ours = berth_db::job::job_get(&state.pool, id)
            .await?
            .map(|job| job.incarnation);
        if !ours
            .is_some_and(|ours| berth_core::wire::same_incarnation(chunk.incarnation, Some(ours)))
        {
            tracing::warn!(
                job.id = id,
                job.run = run,
                "output of another job that had this id refused"
            );
            return Err(ApiError::NotFound(format!(
                "no run {run} of job {id} of this incarnation"
            )));
        }
    }
    if chunk.data.len() > MAX_OUTPUT_CHUNK_BYTES {
        return Err(ApiError::bad_field(
            "data",
            format!("a chunk holds at most {MAX_OUTPUT_CHUNK_BYTES} bytes"),
        ));
    }
    let cap = state.limiters.limits().output_cap_bytes;
    let mut tx = berth_db::begin(&state.pool).await?;
    let appended = match output::output_append_in_tx(
        &mut tx,
        id,
        run,
        chunk.stream.as_str(),
        offset,
        &chunk.data,
        cap,
    )
    .await
    {
        Ok(appended) => appended,
        Err(DbError::ForeignKey { .. }) => return Err(ApiError::NotFound(format!("no job {id}"))),
        Err(e) => return Err(e.into()),
    };
    tx.commit().await.map_err(DbError::from)?;
    if appended.truncated && appended.stored < chunk.data.len() {
        tracing::debug!(
            job.id = id,
            job.run = run,
            stream = chunk.stream.as_str(),
            "output past the cap dropped"
        );
    }
    Ok(StatusCode::NO_CONTENT)
}
