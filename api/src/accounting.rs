//! Job accounting (`GET /v1/accounting/jobs`, what `sacct` reads): one item per job run,
//! from the records written when runs end (see [`berth_db::accounting`]) and, for runs
//! not over, live from `jobs`.

use crate::auth::Caller;
use crate::error::{rejection, ApiError};
use crate::AppState;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use berth_core::accounting::{
    job_id_display, parse_job_ids, parse_states, AcctJob, AcctJobList, AcctJobQuery, AcctStep, Tres,
};
use berth_core::wire::Problem;
use berth_db::accounting::{self, AcctFilter, AcctRunRow, AcctStepRow};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Rows per page when the request names no `limit`.
const DEFAULT_LIMIT: u32 = 1000;
/// The most rows per page.
const MAX_LIMIT: u32 = 10_000;

fn list(value: &Option<String>) -> Option<Vec<String>> {
    value.as_ref().map(|v| {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    })
}

fn time(field: &str, value: &Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    value
        .as_deref()
        .map(|v| {
            berth_core::accounting::parse_sacct_time(v, Utc::now())
                .map_err(|e| ApiError::bad_field(field, e))
        })
        .transpose()
}

/// The filter a query asks for, checked.
fn filter(q: &AcctJobQuery) -> Result<AcctFilter, ApiError> {
    let start = time("start", &q.start)?;
    let end = time("end", &q.end)?;
    if let (Some(s), Some(e)) = (start, end) {
        if e < s {
            return Err(ApiError::bad_field(
                "end",
                "the window ends before it starts",
            ));
        }
    }
    let states = q
        .state
        .as_deref()
        .map(parse_states)
        .transpose()
        .map_err(|e| ApiError::bad_field("state", e))?;
    let nodes = match &q.node {
        Some(v) => Some(
            berth_core::hostlist::expand(v)
                .map_err(|e| ApiError::bad_field("node", e.to_string()))?,
        ),
        None => None,
    };
    let (job_ids, array_tasks) = match &q.job {
        Some(v) => {
            let (ids, tasks) = parse_job_ids(v).map_err(|e| ApiError::bad_field("job", e))?;
            (
                Some(ids),
                Some(tasks.into_iter().unzip::<i64, i32, Vec<_>, Vec<_>>()),
            )
        }
        None => (None, None),
    };
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_field(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        ));
    }
    let after = match &q.cursor {
        Some(c) => c
            .split_once('.')
            .and_then(|(j, r)| Some((j.parse::<i64>().ok()?, r.parse::<i32>().ok()?)))
            .ok_or_else(|| ApiError::bad_field("cursor", "not a cursor from this api"))?,
        None => (0, -1),
    };
    Ok(AcctFilter {
        start,
        end,
        users: list(&q.user),
        accounts: list(&q.account),
        partitions: list(&q.partition),
        states,
        qos: list(&q.qos),
        nodes,
        job_ids,
        array_tasks,
        duplicates: q.duplicates.unwrap_or(false),
        after,
        limit: i64::from(limit) + 1,
        viewer: None,
        viewer_accounts: Vec::new(),
    })
}

fn gpu_models(value: &serde_json::Value) -> BTreeMap<String, u64> {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn u64_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn nodelist(nodes: &[String]) -> String {
    if nodes.is_empty() {
        "None assigned".to_string()
    } else {
        berth_core::hostlist::compress(nodes)
    }
}

/// A run's view.
fn job_view(r: &AcctRunRow) -> AcctJob {
    let alloc_mem = u64_of(r.alloc_mem_mib);
    AcctJob {
        job_id: r.job_id,
        job_id_display: job_id_display(
            r.job_id,
            r.array_job_id,
            r.array_task_id,
            r.array_pending.as_deref(),
        ),
        run: u32::try_from(r.run).unwrap_or(0),
        name: r.name.clone(),
        user: r.user_name.clone(),
        account: r.account.clone(),
        partition: r.partition.clone(),
        qos: r.qos.clone(),
        state: r.state.clone(),
        // Slurm's name for an ended run's reason (a requeued run's state is not a job
        // state: its stored reason stands).
        reason: match r.state.parse::<berth_core::state::JobState>() {
            Ok(state) => berth_core::reason::shown_reason(
                state,
                r.exit_code,
                r.exit_signal,
                r.reason.clone(),
            ),
            Err(_) => r.reason.clone(),
        },
        requeue_reason: r.requeue_reason.clone(),
        exit_code: r.exit_code,
        exit_signal: r.exit_signal,
        submit_time: r.submit_time,
        eligible_time: r.eligible_time,
        start_time: r.start_time,
        end_time: r.end_time,
        elapsed: u64_of(r.elapsed),
        time_limit: r.time_limit.map(u64_of),
        req_tres: Tres {
            billing: u64_of(r.req_cpus),
            cpu: u64_of(r.req_cpus),
            mem_mib: r.req_mem_mib.map(u64_of),
            gpus: u64_of(r.req_gpus),
            gpu_models: match &r.req_gpu_type {
                Some(t) if r.req_gpus > 0 => [(t.to_lowercase(), u64_of(r.req_gpus))].into(),
                _ => BTreeMap::new(),
            },
            nodes: u32::try_from(r.req_nodes).unwrap_or(0),
        },
        alloc_tres: Tres {
            billing: u64_of(r.alloc_cpus),
            cpu: u64_of(r.alloc_cpus),
            mem_mib: (alloc_mem > 0).then_some(alloc_mem),
            gpus: u64_of(r.alloc_gpus),
            gpu_models: gpu_models(&r.alloc_gpu_models),
            nodes: u32::try_from(r.alloc_nodes).unwrap_or(0),
        },
        nodelist: nodelist(&r.nodes),
        restarts: u32::try_from(r.run).unwrap_or(0),
        gpu_seconds: r.gpu_seconds,
        gpu_util_avg: r.gpu_util_avg,
        gpu_mem_peak_mib: r.gpu_mem_peak_mib.map(u64_of),
        energy_j: r.energy_j,
        cpu_time_s: r.cpu_time_s,
        max_rss_mib: r.max_rss_mib.map(u64_of),
        cost: r.cost,
        steps: Vec::new(),
    }
}

/// The steps of a run as sacct lists them: `batch` (the batch script on the first node,
/// for a run that started), then its `srun` steps.
fn step_views(job: &AcctJob, steps: &[&AcctStepRow], now: DateTime<Utc>) -> Vec<AcctStep> {
    let mut out = Vec::new();
    if let Some(start) = job.start_time {
        let first_node = job.nodelist.split(',').next().unwrap_or_default();
        out.push(AcctStep {
            step: "batch".to_string(),
            name: "batch".to_string(),
            state: match job.state.as_str() {
                "REQUEUED" | "PREEMPTED" | "NODE_FAIL" | "TIMEOUT" => "CANCELLED".to_string(),
                s => s.to_string(),
            },
            exit_code: job.exit_code,
            exit_signal: job.exit_signal,
            start_time: Some(start),
            end_time: job.end_time,
            elapsed: job.elapsed,
            ntasks: 1,
            nodelist: if job.alloc_tres.nodes > 1 {
                // The batch script runs on the first node of the allocation.
                berth_core::hostlist::expand(&job.nodelist)
                    .ok()
                    .and_then(|n| n.into_iter().next())
                    .unwrap_or_else(|| first_node.to_string())
            } else {
                job.nodelist.clone()
            },
            alloc_tres: Tres {
                billing: job.alloc_tres.billing,
                cpu: job.alloc_tres.cpu,
                mem_mib: job.alloc_tres.mem_mib,
                gpus: job.alloc_tres.gpus,
                gpu_models: job.alloc_tres.gpu_models.clone(),
                nodes: 1,
            },
        });
    }
    for s in steps {
        let end = s.end_time.unwrap_or(now);
        out.push(AcctStep {
            step: s.step_id.to_string(),
            name: s.name.rsplit('/').next().unwrap_or(&s.name).to_string(),
            state: s.state.clone(),
            exit_code: s.exit_code,
            exit_signal: s.exit_signal,
            start_time: Some(s.start_time),
            end_time: s.end_time,
            elapsed: u64_of((end - s.start_time).num_seconds()),
            ntasks: u32::try_from(s.ntasks).unwrap_or(0),
            nodelist: nodelist(&s.nodes),
            alloc_tres: Tres {
                billing: job.alloc_tres.cpu,
                cpu: job.alloc_tres.cpu,
                mem_mib: job.alloc_tres.mem_mib,
                gpus: u64_of(s.gpus),
                gpu_models: BTreeMap::new(),
                nodes: u32::try_from(s.nodes.len()).unwrap_or(0),
            },
        });
    }
    out
}

/// List job accounting records (sacct).
///
/// One item per job run, by job id then run: by default each job's latest run
/// (`duplicates=true`: every run, one row per requeue), with TRES requested and
/// allocated, times, state, exit code, node list, GPU-seconds, GPU utilisation, memory
/// and energy, and cloud cost; pending and running jobs are read live. Filters combine
/// with AND; pages follow `next_cursor`. Plain users see their own jobs and those of the
/// accounts they coordinate.
#[utoipa::path(get, path = "/v1/accounting/jobs", tag = "accounting", operation_id = "accounting_job_list",
    params(AcctJobQuery),
    responses((status = 200, description = "A page of job runs", body = AcctJobList),
              (status = 400, description = "A bad filter, naming it", body = Problem),
              (status = 401, description = "No or bad credentials", body = Problem),
              (status = 403, description = "A node token", body = Problem)),
    security(("bearer" = [])))]
pub async fn accounting_job_list(
    State(state): State<AppState>,
    caller: Caller,
    q: Result<Query<AcctJobQuery>, QueryRejection>,
) -> Result<Json<AcctJobList>, ApiError> {
    caller.require_person()?;
    let q = q
        .map(|Query(v)| v)
        .map_err(|e| rejection("query", e.body_text()))?;
    let mut f = filter(&q)?;
    if !caller.sees_all_jobs() {
        f.viewer = Some(caller.name.clone());
        f.viewer_accounts = caller.coordinated_accounts(&state).await?;
    }
    let limit = usize::try_from(f.limit - 1).unwrap_or(0);
    let mut rows = accounting::acct_job_list(&state.pool, &f).await?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let mut items: Vec<AcctJob> = rows.iter().map(job_view).collect();
    if q.steps.unwrap_or(false) && !rows.is_empty() {
        let ids: Vec<i64> = rows.iter().map(|r| r.job_id).collect();
        let runs: Vec<i32> = rows.iter().map(|r| r.run).collect();
        let steps = accounting::acct_step_list(&state.pool, &ids, &runs).await?;
        let now = Utc::now();
        for (item, row) in items.iter_mut().zip(&rows) {
            let mine: Vec<&AcctStepRow> = steps
                .iter()
                .filter(|s| s.job_id == row.job_id && s.run == row.run)
                .collect();
            item.steps = step_views(item, &mine, now);
        }
    }
    Ok(Json(AcctJobList {
        next_cursor: more
            .then(|| rows.last().map(|r| format!("{}.{}", r.job_id, r.run)))
            .flatten(),
        items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_filters_name_their_parameter() {
        let field = |q: AcctJobQuery| match filter(&q) {
            Err(ApiError::BadRequest { field, .. }) => field,
            other => panic!("expected a bad request, got {other:?}"),
        };
        let q = |f: fn(&mut AcctJobQuery)| {
            let mut q = AcctJobQuery::default();
            f(&mut q);
            q
        };
        assert_eq!(
            field(q(|q| q.start = Some("yesterday".into()))).as_deref(),
            Some("start")
        );
        assert_eq!(
            field(q(|q| q.state = Some("CD,XX".into()))).as_deref(),
            Some("state")
        );
        assert_eq!(
            field(q(|q| q.job = Some("12_x".into()))).as_deref(),
            Some("job")
        );
        assert_eq!(
            field(q(|q| q.cursor = Some("nope".into()))).as_deref(),
            Some("cursor")
        );
        assert_eq!(field(q(|q| q.limit = Some(0))).as_deref(), Some("limit"));
        assert_eq!(
            field(q(|q| {
                q.start = Some("2026-12-02T00:00:00Z".into());
                q.end = Some("2026-12-01T00:00:00Z".into());
            }))
            .as_deref(),
            Some("end")
        );
    }
}
