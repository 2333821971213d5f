//! `job/submit`, `jobs/`, `job/{job_id}` (GET, POST, DELETE): Berth's submission,
//! listing, update and cancellation, in slurmrestd's shapes.
//!
//! A submission's `job_desc_msg` becomes the `sbatch` options Berth parses
//! (`name` → `--job-name`, `time_limit` → `--time` in minutes …) and goes through
//! `POST /v1/jobs`'s path ([`crate::submit::submit_job`]), so it is checked exactly as
//! `sbatch` and `/v1` are. A field Berth does not honour is refused (400 naming it), never
//! dropped, unless it asks for nothing (`null`, `false`, `""`, `[]`, an unset number).

use super::auth::SlurmCaller;
use super::types::{ExitCode, ExitSignal, JobInfo, NoVal, NoValIn, NoValValue};
use super::{answer, answer_ok, errno, minutes, now, time, SlurmError};
use crate::error::ApiError;
use crate::AppState;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use axum::Json;
use berth_core::state::JobState;
use berth_core::wire::{Job, JobCreate, JobListQuery};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A comma-separated string, or a list of strings (Slurm's `csv_string`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Csv {
    One(String),
    Many(Vec<String>),
}

impl Csv {
    fn joined(&self) -> String {
        match self {
            Csv::One(s) => s.clone(),
            Csv::Many(v) => v.join(","),
        }
    }
}

/// The `job_desc_msg` fields Berth honours; the rest land in `other`.
#[derive(Debug, Default, Deserialize)]
struct JobDesc {
    account: Option<String>,
    argv: Option<Vec<String>>,
    array: Option<String>,
    begin_time: Option<NoValIn>,
    comment: Option<String>,
    constraints: Option<String>,
    cpus_per_task: Option<i64>,
    current_working_directory: Option<String>,
    dependency: Option<String>,
    environment: Option<Vec<String>>,
    excluded_nodes: Option<Csv>,
    hold: Option<bool>,
    job_id: Option<i64>,
    mail_type: Option<Vec<String>>,
    mail_user: Option<String>,
    maximum_nodes: Option<i64>,
    memory_per_cpu: Option<NoValIn>,
    memory_per_node: Option<NoValIn>,
    minimum_nodes: Option<i64>,
    name: Option<String>,
    nice: Option<i64>,
    nodes: Option<String>,
    open_mode: Option<Vec<String>>,
    overcommit: Option<bool>,
    partition: Option<String>,
    qos: Option<String>,
    required_nodes: Option<Csv>,
    requeue: Option<bool>,
    reservation: Option<String>,
    script: Option<String>,
    shared: Option<Vec<String>>,
    standard_error: Option<String>,
    standard_output: Option<String>,
    tasks: Option<i64>,
    tasks_per_node: Option<i64>,
    time_limit: Option<NoValIn>,
    time_minimum: Option<NoValIn>,
    tres_per_job: Option<String>,
    tres_per_node: Option<String>,
    tres_per_task: Option<String>,
    wait_all_nodes: Option<bool>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// `v0.0.44_job_submit_req`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SubmitReq {
    script: Option<String>,
    job: Option<JobDesc>,
    jobs: Option<Value>,
}

/// Whether a value asks for nothing: `null`, `false`, `""`, `[]`, `{}` or an unset
/// `*_no_val` (`{"set": false, "infinite": false}`).
fn asks_nothing(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => {
            o.is_empty()
                || (o.get("set") == Some(&Value::Bool(false))
                    && o.get("infinite") != Some(&Value::Bool(true)))
        }
        Value::Number(_) | Value::Bool(true) => false,
    }
}

/// Refuses the fields of `other` that ask for something Berth does not do.
fn refuse_other(other: &BTreeMap<String, Value>, what: &str) -> Result<(), SlurmError> {
    match other.iter().find(|(_, v)| !asks_nothing(v)) {
        Some((name, _)) => Err(SlurmError::bad_field(
            &format!("job.{name}"),
            format!("Berth does not support this field {what}"),
        )),
        None => Ok(()),
    }
}

fn body_error(e: &JsonRejection) -> SlurmError {
    let text = e.body_text();
    let field = ["unknown field `", "missing field `"].iter().find_map(|m| {
        let rest = &text[text.find(m)? + m.len()..];
        rest.find('`').map(|end| rest[..end].to_string())
    });
    match field {
        Some(f) => SlurmError::bad_field(&f, text.clone()),
        None => SlurmError::bad_field("body", text),
    }
}

/// `sbatch` options from a `job_desc_msg`, with the field each came from (to name it in
/// errors).
#[derive(Debug)]
struct Options {
    args: Vec<String>,
    fields: Vec<(&'static str, &'static str)>,
}

impl Options {
    fn push(&mut self, option: &'static str, field: &'static str, value: Option<String>) {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            self.args.push(format!("{option}={value}"));
            self.fields.push((option, field));
        }
    }
    fn flag(&mut self, option: &'static str, field: &'static str, on: bool) {
        if on {
            self.args.push(option.to_string());
            self.fields.push((option, field));
        }
    }
    /// The job_desc field behind `option` (as `job.time_limit (--time)`).
    fn field_of(&self, option: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|(o, _)| *o == option)
            .map(|(o, f)| format!("job.{f} ({o})"))
    }
}

fn non_negative(field: &str, v: i64) -> Result<String, SlurmError> {
    if v < 0 {
        return Err(SlurmError::bad_field(field, "must not be negative"));
    }
    Ok(v.to_string())
}

/// A `*_no_val` count: a number, unset, or (where `infinite` means something)
/// `infinite_as`.
fn no_val_arg(
    field: &str,
    v: &Option<NoValIn>,
    infinite_as: Option<&str>,
) -> Result<Option<String>, SlurmError> {
    match v.as_ref().map(NoValIn::value) {
        None | Some(NoValValue::Unset) => Ok(None),
        Some(NoValValue::Infinite) => match infinite_as {
            Some(s) => Ok(Some(s.to_string())),
            None => Err(SlurmError::bad_field(field, "cannot be infinite")),
        },
        Some(NoValValue::Number(n)) => non_negative(field, n).map(Some),
    }
}

/// `begin_time` (a UNIX timestamp, as sbatch's `--begin` gives slurmctld) as `--begin`'s
/// `YYYY-MM-DDTHH:MM:SS` (UTC, which Berth's `--begin` takes zoneless times as).
fn begin_arg(v: &Option<NoValIn>) -> Result<Option<String>, SlurmError> {
    let Some(seconds) = no_val_arg("job.begin_time", v, None)? else {
        return Ok(None);
    };
    let at = seconds
        .parse::<i64>()
        .ok()
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .ok_or_else(|| SlurmError::bad_field("job.begin_time", "not a UNIX timestamp"))?;
    Ok(Some(at.format("%Y-%m-%dT%H:%M:%S").to_string()))
}

/// `gres/gpu:2`, `gres:gpu:a100:2`, `gres/gpu=2` → `gpu:2` …: the GRES items of a TRES
/// string; other TRES are refused.
fn gres_items(field: &str, tres: &str) -> Result<Vec<String>, SlurmError> {
    tres.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let gres = item
                .strip_prefix("gres/")
                .or_else(|| item.strip_prefix("gres:"))
                .ok_or_else(|| {
                    SlurmError::bad_field(
                        field,
                        format!("{item:?}: Berth schedules GRES only (gres/gpu:N, gres/shard:N)"),
                    )
                })?;
            Ok(gres.replacen('=', ":", 1))
        })
        .collect()
}

/// The GPU count (with its type) of a `tres_per_job`/`tres_per_task` string:
/// `gres/gpu:4` → `4`, `gres/gpu:h100:4` → `h100:4`.
fn gpu_count(field: &str, tres: &str) -> Result<String, SlurmError> {
    let items = gres_items(field, tres)?;
    match items.as_slice() {
        [one] => one
            .strip_prefix("gpu:")
            .map(str::to_string)
            .ok_or_else(|| SlurmError::bad_field(field, "Berth takes only gres/gpu here")),
        _ => Err(SlurmError::bad_field(field, "one gres/gpu item")),
    }
}

/// Builds the `sbatch` options of a submission's `job_desc_msg`.
fn submission_options(job: &JobDesc) -> Result<Options, SlurmError> {
    refuse_other(&job.other, "in a submission")?;
    if job.job_id.is_some_and(|id| id != 0) {
        return Err(SlurmError::bad_field(
            "job.job_id",
            "Berth assigns job ids: leave it out",
        ));
    }
    let mut o = Options {
        args: Vec::new(),
        fields: Vec::new(),
    };
    o.push("--job-name", "name", job.name.clone());
    o.push("--partition", "partition", job.partition.clone());
    o.push("--account", "account", job.account.clone());
    o.push("--qos", "qos", job.qos.clone());
    o.push("--comment", "comment", job.comment.clone());
    o.push("--array", "array", job.array.clone());
    o.push("--dependency", "dependency", job.dependency.clone());
    o.push("--reservation", "reservation", job.reservation.clone());
    o.push("--constraint", "constraints", job.constraints.clone());
    o.push("--mail-user", "mail_user", job.mail_user.clone());
    o.push("--output", "standard_output", job.standard_output.clone());
    o.push("--error", "standard_error", job.standard_error.clone());
    o.push(
        "--chdir",
        "current_working_directory",
        job.current_working_directory.clone(),
    );
    o.push(
        "--time",
        "time_limit",
        no_val_arg("job.time_limit", &job.time_limit, Some("UNLIMITED"))?,
    );
    o.push("--begin", "begin_time", begin_arg(&job.begin_time)?);
    o.push(
        "--time-min",
        "time_minimum",
        no_val_arg("job.time_minimum", &job.time_minimum, None)?,
    );
    o.push(
        "--mem",
        "memory_per_node",
        no_val_arg("job.memory_per_node", &job.memory_per_node, None)?,
    );
    o.push(
        "--mem-per-cpu",
        "memory_per_cpu",
        no_val_arg("job.memory_per_cpu", &job.memory_per_cpu, None)?,
    );
    if let Some(tres) = job.tres_per_node.as_deref().filter(|t| !t.is_empty()) {
        let gres = gres_items("job.tres_per_node", tres)?.join(",");
        o.push("--gres", "tres_per_node", Some(gres));
    }
    if let Some(tres) = job.tres_per_job.as_deref().filter(|t| !t.is_empty()) {
        o.push(
            "--gpus",
            "tres_per_job",
            Some(gpu_count("job.tres_per_job", tres)?),
        );
    }
    if let Some(tres) = job.tres_per_task.as_deref().filter(|t| !t.is_empty()) {
        o.push(
            "--gpus-per-task",
            "tres_per_task",
            Some(gpu_count("job.tres_per_task", tres)?),
        );
    }
    let nodes = match (&job.nodes, job.minimum_nodes, job.maximum_nodes) {
        (Some(n), None, None) => Some(n.clone()),
        (None, min, max) => match (min, max) {
            (None, None) => None,
            (Some(min), None) => Some(non_negative("job.minimum_nodes", min)?),
            (min, Some(max)) => Some(format!(
                "{}-{}",
                non_negative("job.minimum_nodes", min.unwrap_or(1))?,
                non_negative("job.maximum_nodes", max)?
            )),
        },
        (Some(_), _, _) => {
            return Err(SlurmError::bad_field(
                "job.nodes",
                "give nodes, or minimum_nodes/maximum_nodes, not both",
            ))
        }
    };
    o.push("--nodes", "nodes", nodes);
    for (option, field, value) in [
        ("--ntasks", "tasks", job.tasks),
        ("--ntasks-per-node", "tasks_per_node", job.tasks_per_node),
        ("--cpus-per-task", "cpus_per_task", job.cpus_per_task),
    ] {
        if let Some(v) = value {
            o.push(
                option,
                field,
                Some(non_negative(&format!("job.{field}"), v)?),
            );
        }
    }
    if let Some(nice) = job.nice {
        o.push("--nice", "nice", Some(nice.to_string()));
    }
    o.push(
        "--nodelist",
        "required_nodes",
        job.required_nodes.as_ref().map(Csv::joined),
    );
    o.push(
        "--exclude",
        "excluded_nodes",
        job.excluded_nodes.as_ref().map(Csv::joined),
    );
    o.push(
        "--mail-type",
        "mail_type",
        job.mail_type.as_ref().map(|v| v.join(",")),
    );
    match job.open_mode.as_deref() {
        None | Some([]) => {}
        Some([mode]) => o.push("--open-mode", "open_mode", Some(mode.to_lowercase())),
        Some(_) => return Err(SlurmError::bad_field("job.open_mode", "one mode")),
    }
    match job.shared.as_deref() {
        None | Some([]) => {}
        Some([s]) if s == "none" => o.flag("--exclusive", "shared", true),
        Some(_) => {
            return Err(SlurmError::bad_field(
                "job.shared",
                "Berth takes only [\"none\"] (--exclusive)",
            ))
        }
    }
    o.flag("--hold", "hold", job.hold == Some(true));
    o.flag("--overcommit", "overcommit", job.overcommit == Some(true));
    match job.requeue {
        Some(true) => o.flag("--requeue", "requeue", true),
        Some(false) => o.flag("--no-requeue", "requeue", true),
        None => {}
    }
    if let Some(all) = job.wait_all_nodes {
        o.push(
            "--wait-all-nodes",
            "wait_all_nodes",
            Some(if all { "1" } else { "0" }.into()),
        );
    }
    Ok(o)
}

/// The environment list (`["K=V", …]`) as a map.
fn environment(list: Option<&Vec<String>>) -> Result<BTreeMap<String, String>, SlurmError> {
    let mut env = BTreeMap::new();
    for item in list.into_iter().flatten() {
        let (k, v) = item.split_once('=').ok_or_else(|| {
            SlurmError::bad_field("job.environment", format!("{item:?} is not NAME=value"))
        })?;
        if k.is_empty() {
            return Err(SlurmError::bad_field(
                "job.environment",
                format!("{item:?} has no name"),
            ));
        }
        env.insert(k.to_string(), v.to_string());
    }
    Ok(env)
}

/// The batch script's arguments of `job.argv`: slurmstepd puts the script's path in
/// `argv[0]` (slurmrestd's document: "argv[0] should be a throwaway value"), so the
/// script gets `argv[1..]` as `$1`, `$2` … (never through a shell).
fn script_args(argv: Option<&[String]>) -> Vec<String> {
    argv.map(|a| a.iter().skip(1).cloned().collect())
        .unwrap_or_default()
}

/// `POST /slurm/v0.0.44/job/submit`: submits a batch job (`sbatch`); `job.argv[1..]`
/// are the script's arguments.
pub(super) async fn submit(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    body: Result<Json<SubmitReq>, JsonRejection>,
) -> Result<Response, SlurmError> {
    let Json(req) = body.map_err(|e| body_error(&e))?;
    if req.jobs.as_ref().is_some_and(|j| !asks_nothing(j)) {
        return Err(SlurmError::bad_field(
            "jobs",
            "heterogeneous jobs are not supported: send one job in `job`",
        ));
    }
    let job = req.job.unwrap_or_default();
    let options = submission_options(&job)?;
    let script = match (&req.script, &job.script) {
        (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() && a != b => {
            return Err(SlurmError::bad_field(
                "script",
                "`script` and `job.script` differ: send one",
            ))
        }
        (Some(a), _) if !a.is_empty() => Some(a.clone()),
        (_, b) => b.clone(),
    };
    let create = JobCreate {
        script,
        args: options.args.clone(),
        spec: None,
        submit_dir: job
            .current_working_directory
            .clone()
            .filter(|d| !d.is_empty()),
        environment: environment(job.environment.as_ref())?,
        script_name: None,
        script_args: script_args(job.argv.as_deref()),
    };
    let (id, _) = crate::submit::submit_job(&state, &caller.name, caller.role, &create, None)
        .await
        .map_err(|e| match e {
            ApiError::BadRequest {
                code,
                detail,
                field: Some(option),
                line,
            } => {
                let field = options.field_of(&option).unwrap_or(option);
                SlurmError::from(ApiError::BadRequest {
                    code,
                    detail: format!("{field}: {detail}"),
                    field: Some(field),
                    line,
                })
            }
            e => e.into(),
        })?;
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "job_id": id, "step_id": "batch", "job_submit_user_msg": "" }),
    ))
}

/// An error about job `id`: one the caller may not see (or that does not exist) is
/// Slurm's `ESLURM_INVALID_JOB_ID`.
fn job_error(e: ApiError) -> SlurmError {
    match e {
        ApiError::NotFound(detail) => SlurmError::new(
            StatusCode::NOT_FOUND,
            errno::INVALID_JOB_ID,
            detail,
            "job_id",
        ),
        e => e.into(),
    }
}

/// A job id from the path (`12`).
fn job_id(raw: &str) -> Result<i64, SlurmError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        SlurmError::new(
            StatusCode::BAD_REQUEST,
            errno::INVALID_JOB_ID,
            format!("job_id: {raw:?} is not a job id (Berth takes numeric ids)"),
            "job_id",
        )
    })
}

/// A job id from the path of `GET job/{job_id}`: `12`, or `12_3` (task 3 of array 12).
fn array_job_id(raw: &str) -> Result<(i64, Option<i32>), SlurmError> {
    let bad = || {
        SlurmError::new(
            StatusCode::BAD_REQUEST,
            errno::INVALID_JOB_ID,
            format!("job_id: {raw:?} is not a job id (`12`, or `12_3` for an array task)"),
            "job_id",
        )
    };
    match raw.split_once('_') {
        Some((job, task)) => {
            let task = task
                .parse::<i32>()
                .ok()
                .filter(|t| *t >= 0)
                .ok_or_else(bad)?;
            Ok((job_id(job).map_err(|_| bad())?, Some(task)))
        }
        None => Ok((job_id(raw)?, None)),
    }
}

/// How a process ended, as `process_exit_code_verbose`: `ended` says whether it has.
pub(super) fn exit_code(ended: bool, code: Option<i32>, signal: Option<i32>) -> ExitCode {
    let signal = signal.filter(|s| *s > 0);
    let status = match (ended, signal, code) {
        (false, _, _) => "PENDING",
        (true, Some(_), _) => "SIGNALED",
        (true, _, Some(0)) => "SUCCESS",
        (true, _, Some(_)) => "ERROR",
        (true, _, None) => "INVALID",
    };
    ExitCode {
        status: vec![status],
        // As Slurm's data_parser: a signalled process has no return code (a step's
        // 128 + signal is not one).
        return_code: NoVal::opt(code.filter(|_| ended && signal.is_none()).map(i64::from)),
        signal: ExitSignal {
            id: NoVal::opt(signal.map(i64::from)),
            name: signal.map(signal_name).unwrap_or_default(),
        },
    }
}

/// `SIGKILL` for 9 …; `SIG<n>` for numbers without a name here.
pub(super) fn signal_name(n: i32) -> String {
    let name = match n {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return format!("SIG{n}"),
    };
    name.to_string()
}

/// Slurm's TRES string of what a job asks (`cpu=4,mem=8G,node=1,billing=4,gres/gpu=2`),
/// or with `allocated`, of what it holds (its memory: what its nodes gave it, the whole
/// usable memory of each for `--mem=0`).
fn tres_string(job: &Job, allocated: bool) -> String {
    let mut parts = vec![format!("cpu={}", job.num_cpus)];
    let held: u64 = job.allocations.iter().map(|a| a.memory_mib).sum();
    let mem = if allocated && held > 0 {
        Some(held)
    } else {
        job.spec
            .mem_mib
            .filter(|m| *m > 0)
            .map(|m| m.saturating_mul(u64::from(job.num_nodes)))
    };
    if let Some(mem) = mem {
        parts.push(format!("mem={mem}M"));
    }
    parts.push(format!("node={}", job.num_nodes));
    parts.push(format!("billing={}", job.num_cpus));
    let gpus = job.gpus_per_node.saturating_mul(job.num_nodes);
    if gpus > 0 {
        parts.push(format!("gres/gpu={gpus}"));
    }
    parts.join(",")
}

/// A Berth job as slurmrestd's `job_info`.
pub(super) fn job_info(job: &Job) -> JobInfo {
    let state = job.state;
    let held = state == JobState::Pending
        && job
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("JobHeld"));
    let placed = !job.allocations.is_empty();
    JobInfo {
        account: job.account.clone(),
        array_job_id: job.array_job_id.map(NoVal::num),
        array_task_id: job.array_task_id.map(|t| NoVal::num(i64::from(t))),
        array_task_string: job.array_tasks_pending.clone(),
        batch_flag: Some(true),
        batch_host: job.allocations.first().map(|a| a.node.clone()),
        cluster: Some(crate::cluster_name::get().into()),
        comment: job.spec.comment.clone(),
        cpus_per_task: job.spec.cpus_per_task.map(|c| NoVal::num(i64::from(c))),
        dependency: job.spec.dependency.clone(),
        derived_exit_code: Some(exit_code(
            state.is_terminal(),
            job.exit_code,
            job.exit_signal,
        )),
        eligible_time: None,
        end_time: Some(time(job.end_time)),
        excluded_nodes: job.spec.exclude.clone(),
        exit_code: Some(exit_code(
            state.is_terminal(),
            job.exit_code,
            job.exit_signal,
        )),
        features: job.spec.constraint.clone(),
        job_id: Some(job.id),
        job_state: Some(vec![state.as_str().to_string()]),
        name: Some(job.name.clone()),
        nodes: job.nodelist.clone(),
        nice: Some(job.nice),
        cpus: Some(NoVal::num(i64::from(job.num_cpus))),
        node_count: Some(NoVal::num(i64::from(job.num_nodes))),
        tasks: Some(NoVal::num(i64::from(job.num_tasks))),
        tasks_per_node: job.spec.ntasks_per_node.map(|n| NoVal::num(i64::from(n))),
        partition: Some(job.partition.clone()),
        memory_per_cpu: job
            .spec
            .mem_per_cpu_mib
            .map(|m| NoVal::num(i64::try_from(m).unwrap_or(i64::MAX))),
        memory_per_node: job
            .spec
            .mem_mib
            .map(|m| NoVal::num(i64::try_from(m).unwrap_or(i64::MAX))),
        hold: Some(held),
        priority: Some(NoVal::opt(job.priority)),
        qos: job.qos.clone(),
        required_nodes: job.spec.nodelist.clone(),
        requeue: job.spec.requeue,
        restart_cnt: Some(i64::from(job.restart_count)),
        resv_name: job.spec.reservation.clone(),
        start_time: Some(time(job.start_time)),
        state_description: Some(job.state_description.clone().unwrap_or_default()),
        state_reason: Some(job.reason.clone().unwrap_or_else(|| "None".into())),
        standard_output: job.spec.output.clone(),
        standard_error: job.spec.error.clone(),
        stdout_expanded: job.stdout_path.clone(),
        stderr_expanded: job.stderr_path.clone(),
        submit_time: Some(time(Some(job.submit_time))),
        time_limit: Some(minutes(job.time_limit)),
        time_minimum: job.spec.time_min.map(|t| minutes(Some(t))),
        tres_per_node: (job.gpus_per_node > 0).then(|| format!("gres/gpu:{}", job.gpus_per_node)),
        tres_per_job: job.spec.gpus.map(|g| format!("gres/gpu:{g}")),
        tres_per_task: job.spec.gpus_per_task.map(|g| format!("gres/gpu:{g}")),
        tres_req_str: Some(tres_string(job, false)),
        tres_alloc_str: placed.then(|| tres_string(job, true)),
        user_name: Some(job.user.clone()),
        current_working_directory: job.work_dir.clone(),
    }
}

pub(super) fn job_info_payload(jobs: Vec<JobInfo>) -> Value {
    json!({ "jobs": jobs, "last_backfill": now(), "last_update": now() })
}

/// `update_time` and `flags` of the job and node lists: accepted; Berth always answers
/// with the current state.
#[derive(Debug, Deserialize)]
pub(super) struct InfoQuery {
    #[serde(default)]
    #[allow(dead_code)]
    update_time: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    flags: Option<String>,
}

pub(super) fn info_query(q: Result<Query<InfoQuery>, QueryRejection>) -> Result<(), SlurmError> {
    q.map(|_| ())
        .map_err(|e| SlurmError::bad_field("query", e.body_text()))
}

/// The states `GET jobs/` lists besides the jobs ended in the last `[scheduler]
/// min_job_age_seconds` (Slurm's `MinJobAge`; slurmctld's view; older ended jobs are in
/// `slurmdb/…/jobs/`, and each stays readable at `job/{job_id}`).
const ACTIVE_STATES: &str = "PENDING,RUNNING,SUSPENDED,COMPLETING";

/// The most jobs one `GET jobs/` answers with.
const MAX_LISTED: usize = 10_000;

/// `GET /slurm/v0.0.44/jobs/`: the jobs the caller may see that have not ended, or
/// ended within `[scheduler] min_job_age_seconds` (Slurm's `MinJobAge`: what slurmctld
/// still holds), by id.
pub(super) async fn list(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    q: Result<Query<InfoQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    info_query(q)?;
    let mut jobs = Vec::new();
    let mut cursor = None;
    let mut warnings = Vec::new();
    loop {
        let Json(page) = crate::routes::job_list(
            State(state.clone()),
            caller.clone(),
            Ok(Query(JobListQuery {
                state: Some(ACTIVE_STATES.into()),
                limit: Some(1000),
                cursor: cursor.take(),
                ..JobListQuery::default()
            })),
        )
        .await?;
        jobs.extend(page.items.iter().map(job_info));
        match page.next_cursor {
            Some(next) if jobs.len() < MAX_LISTED => cursor = Some(next),
            Some(_) => {
                warnings.push(super::types::OpenapiWarning {
                    description: format!("only the first {MAX_LISTED} jobs are listed"),
                    source: "jobs".into(),
                });
                break;
            }
            None => break,
        }
    }
    let since = state
        .limiters
        .limits()
        .live_queue_since(chrono::Utc::now())
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC);
    if jobs.len() < MAX_LISTED {
        let ended = berth_db::job::job_ended_since_ids(&state.pool, since, MAX_LISTED as i64)
            .await
            .map_err(ApiError::from)?;
        let ended: std::collections::BTreeSet<i64> = ended.into_iter().collect();
        // Read in pages as `GET /v1/jobs` lists ended jobs from the first of them (so a
        // job the caller may not see is left out), keeping those that ended recently.
        let ended_states = JobState::ALL
            .iter()
            .filter(|s| s.is_terminal())
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let mut more = Vec::new();
        let mut cursor = ended.first().map(|first| (first - 1).to_string());
        let last = ended.last().copied().unwrap_or(0);
        while let Some(after) = cursor.take() {
            let Json(page) = crate::routes::job_list(
                State(state.clone()),
                caller.clone(),
                Ok(Query(JobListQuery {
                    state: Some(ended_states.clone()),
                    limit: Some(1000),
                    cursor: Some(after),
                    ..JobListQuery::default()
                })),
            )
            .await?;
            more.extend(
                page.items
                    .iter()
                    .filter(|j| ended.contains(&j.id))
                    .map(job_info),
            );
            let past_last = page.items.last().is_none_or(|j| j.id >= last);
            if !past_last && jobs.len() + more.len() < MAX_LISTED {
                cursor = page.next_cursor;
            }
        }
        more.truncate(MAX_LISTED.saturating_sub(jobs.len()));
        jobs.extend(more);
        jobs.sort_by_key(|j| j.job_id);
        // A job that ended between the two reads is listed once.
        jobs.dedup_by_key(|j| j.job_id);
    }
    Ok(answer(
        uri.path(),
        &caller.name,
        job_info_payload(jobs),
        warnings,
    ))
}

/// `GET /slurm/v0.0.44/job/{job_id}`: a job the caller may see (any state). As in
/// Slurm, `12` of an array gives the whole array (its record of the tasks not started,
/// then each task that has a job of its own), and `12_3` one task: its own job, or the
/// array's record while task 3 has not started.
pub(super) async fn get_one(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(raw): Path<String>,
    q: Result<Query<InfoQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    info_query(q)?;
    let (id, task) = array_job_id(&raw)?;
    let get = |id: i64| crate::routes::job_get(State(state.clone()), caller.clone(), Path(id));
    let jobs = match task {
        Some(task) => {
            let own = berth_db::job::job_array_task_get(&state.pool, id, task)
                .await
                .map_err(ApiError::from)?;
            match own {
                Some(task_id) => vec![get(task_id).await.map_err(job_error)?.0],
                None => {
                    let Json(master) = get(id).await.map_err(job_error)?;
                    let pending = master
                        .array_tasks_pending
                        .as_deref()
                        .and_then(|p| berth_core::array::IndexSet::parse(p).ok())
                        .is_some_and(|set| u32::try_from(task).is_ok_and(|t| set.contains(t)));
                    if master.array_job_id != Some(id) || !pending {
                        return Err(job_error(ApiError::NotFound(format!("no job {id}_{task}"))));
                    }
                    vec![master]
                }
            }
        }
        None => {
            let Json(job) = get(id).await.map_err(job_error)?;
            if job.array_job_id == Some(id) {
                let mut all = vec![job];
                let members = berth_db::job::job_array_member_ids(&state.pool, id)
                    .await
                    .map_err(ApiError::from)?;
                for member in members.into_iter().filter(|m| *m != id) {
                    match get(member).await {
                        Ok(Json(task)) => all.push(task),
                        Err(ApiError::NotFound(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                all
            } else {
                vec![job]
            }
        }
    };
    Ok(answer_ok(
        &uri,
        &caller,
        job_info_payload(jobs.iter().map(job_info).collect()),
    ))
}

/// Splits task `task` of array `array` (which the caller may see), still pending in the
/// array's record, out into its own pending job; its id. 404 (`Invalid job id
/// specified`) for no such pending task.
async fn split_array_task(state: &AppState, array: i64, task: i32) -> Result<i64, SlurmError> {
    let mut tx = berth_db::begin(&state.pool).await.map_err(ApiError::from)?;
    let split = berth_db::job::job_array_split_in_tx(&mut tx, array, task)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(|| job_error(ApiError::NotFound(format!("no job {array}_{task}"))))?;
    tx.commit()
        .await
        .map_err(|e| ApiError::from(berth_db::DbError::from(e)))?;
    Ok(split)
}

/// The `job_desc_msg` fields a job update honours (`scontrol update job`).
#[derive(Debug, Deserialize)]
pub(super) struct UpdateDesc {
    time_limit: Option<NoValIn>,
    nice: Option<i64>,
    hold: Option<bool>,
    job_id: Option<i64>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// `POST /slurm/v0.0.44/job/{job_id}`: changes a job's time limit, nice or hold, as
/// `PATCH /v1/jobs/{id}` and `POST /v1/jobs/{id}/hold|release` do (with their rules:
/// only admins raise a time limit or lower nice below 0 …). `job_id` may name an array
/// task (`12_3`): a task not started yet is first split out of the array into its own
/// pending job, as Slurm's update of one task does; `12` changes the array's record.
pub(super) async fn update(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(raw): Path<String>,
    body: Result<Json<UpdateDesc>, JsonRejection>,
) -> Result<Response, SlurmError> {
    let (path_id, task) = array_job_id(&raw)?;
    let Json(desc) = body.map_err(|e| body_error(&e))?;
    refuse_other(
        &desc.other,
        "in an update (Berth updates time_limit, nice and hold)",
    )?;
    if desc.job_id.is_some_and(|j| j != path_id && j != 0) {
        return Err(SlurmError::bad_field(
            "job.job_id",
            format!("names another job than the path's {path_id}"),
        ));
    }
    let time_limit = match desc.time_limit.as_ref().map(NoValIn::value) {
        None | Some(NoValValue::Unset) => None,
        Some(NoValValue::Infinite) => {
            return Err(SlurmError::bad_field(
                "job.time_limit",
                "must be a finite limit",
            ))
        }
        Some(NoValValue::Number(n)) => Some(non_negative("job.time_limit", n)?),
    };
    let nice = desc
        .nice
        .map(|n| i32::try_from(n).map_err(|_| SlurmError::bad_field("job.nice", "out of range")))
        .transpose()?;
    if desc.hold.is_some()
        && caller.job_id.is_some()
        && !crate::auth::job_token_allows(&Method::POST, &format!("/v1/jobs/{path_id}/hold"))
    {
        return Err(
            ApiError::Forbidden("a job's token may not hold or release jobs".into()).into(),
        );
    }
    if time_limit.is_none() && nice.is_none() && desc.hold.is_none() {
        return Err(SlurmError::bad_field(
            "job",
            "nothing to change: give time_limit, nice or hold",
        ));
    }
    // Checked first, so that a refused hold changes nothing else.
    let master = crate::routes::visible_job(&state, &caller, path_id)
        .await
        .map_err(job_error)?;
    // `12_3`: the task's own job; a task not started yet is split out of its array
    // first (its own pending job, as Slurm's update of one task makes it), once the
    // update is known to be allowed (the task has the array's limits), so that a refused
    // update splits nothing.
    let id = match task {
        None => path_id,
        Some(task) => match berth_db::job::job_array_task_get(&state.pool, path_id, task)
            .await
            .map_err(ApiError::from)?
        {
            Some(own) => own,
            None => {
                let raises = time_limit
                    .as_deref()
                    .and_then(|t| berth_core::duration::parse_duration(t).ok().flatten())
                    .is_some_and(|secs| {
                        master
                            .time_limit
                            .is_none_or(|cur| i64::try_from(secs).unwrap_or(i64::MAX) > cur)
                    });
                if !caller.sees_all_jobs() && (raises || nice.is_some_and(|n| n < 0)) {
                    return Err(ApiError::Forbidden(
                        "only admins and operators may raise a time limit or set a negative nice"
                            .into(),
                    )
                    .into());
                }
                split_array_task(&state, path_id, task).await?
            }
        },
    };
    if time_limit.is_some() || nice.is_some() {
        let _updated = crate::job_control::job_update(
            State(state.clone()),
            caller.clone(),
            Path(id),
            Ok(Json(berth_core::scheduling::JobUpdate {
                nice,
                time_limit,
                ..Default::default()
            })),
        )
        .await?;
    }
    match desc.hold {
        Some(true) => {
            crate::job_control::hold_one(&state, &caller, id).await?;
        }
        Some(false) => {
            crate::job_control::release_one(&state, &caller, id).await?;
        }
        None => {}
    }
    Ok(answer_ok(
        &uri,
        &caller,
        json!({ "results": [{
            "job_id": id, "step_id": "", "error": "No error", "error_code": 0,
            "why": "Job updated",
        }] }),
    ))
}

/// `DELETE job/{job_id}` parameters.
#[derive(Debug, Deserialize)]
pub(super) struct CancelQuery {
    #[serde(default)]
    signal: Option<String>,
    #[serde(default)]
    flags: Option<String>,
}

/// `DELETE /slurm/v0.0.44/job/{job_id}`: cancels a job (scancel), as
/// `POST /v1/jobs/{id}/cancel`, when `signal` is absent or `KILL` (`SIGKILL`, `9`; the
/// job's processes get SIGTERM, then SIGKILL after the grace). Any other signal (`USR1`,
/// `SIGTERM`, `10` …) is sent as `scancel --signal` sends it
/// (`POST /v1/jobs/{id}/signal`) and the job goes on running: to every step's tasks; to
/// the batch shell alone with `flags=BATCH_JOB`; to the batch shell, what it started and
/// every step with `FULL_JOB` (`FULL_STEPS_ONLY`, `VERBOSE` and `HURRY` change nothing;
/// other flags, comma-separated or not, are refused). `status` lists no job on success
/// (slurmrestd's entries for signalled jobs cannot validate against its own document); a
/// failure is in `errors`. `12_3` cancels or signals task 3 of array 12 alone, `12` the
/// whole array.
pub(super) async fn cancel(
    State(state): State<AppState>,
    SlurmCaller(caller): SlurmCaller,
    uri: Uri,
    Path(raw): Path<String>,
    q: Result<Query<CancelQuery>, QueryRejection>,
) -> Result<Response, SlurmError> {
    let Query(q) = q.map_err(|e| SlurmError::bad_field("query", e.body_text()))?;
    let (id, task) = array_job_id(&raw)?;
    let task = task.map(|t| t.unsigned_abs());
    let signal = match q.signal.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => Some(berth_core::signal::parse_signal(text).ok_or_else(|| {
            SlurmError::bad_field("signal", "not a signal: a name (USR1, SIGUSR1) or a number")
        })?),
        None => None,
    };
    let (mut batch, mut full) = (false, false);
    for flag in q.flags.as_deref().unwrap_or("").split(',').map(str::trim) {
        match flag {
            "BATCH_JOB" => batch = true,
            "FULL_JOB" => full = true,
            "" | "FULL_STEPS_ONLY" | "VERBOSE" | "HURRY" => {}
            _ => {
                return Err(SlurmError::bad_field(
                    "flags",
                    "Berth takes BATCH_JOB, FULL_JOB, FULL_STEPS_ONLY, VERBOSE and HURRY",
                ))
            }
        }
    }
    match signal {
        Some(signal) if signal != berth_core::signal::SIGKILL => {
            let request = berth_core::signal::JobSignal {
                signal: berth_core::signal::SignalSpec::Number(i64::from(signal)),
                batch,
                full,
                step: None,
                array_task: task,
            };
            crate::job_signal::signal_one(&state, &caller, id, &request)
                .await
                .map_err(job_error)?;
        }
        _ => match task {
            Some(task) => {
                crate::job_control::task_cancel_one(&state, &caller, id, task)
                    .await
                    .map_err(job_error)?;
            }
            None => {
                crate::routes::cancel_one(&state, &caller, id)
                    .await
                    .map_err(job_error)?;
            }
        },
    }
    Ok(answer_ok(&uri, &caller, json!({ "status": [] })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 29: a step whose task got SIGTERM (kept as 143 beside signal 15) is
    /// `SIGNALED` with the signal and no return code, as Slurm's data_parser dumps a
    /// signalled wait status; an exit code stays one.
    #[test]
    fn a_signalled_process_has_no_return_code() {
        let killed = exit_code(true, Some(143), Some(15));
        assert_eq!(killed.status, vec!["SIGNALED"]);
        assert!(!killed.return_code.set);
        assert_eq!((killed.signal.id.set, killed.signal.id.number), (true, 15));
        assert_eq!(killed.signal.name, "SIGTERM");
        let failed = exit_code(true, Some(4), None);
        assert_eq!(failed.status, vec!["ERROR"]);
        assert_eq!(
            (failed.return_code.set, failed.return_code.number),
            (true, 4)
        );
    }

    fn desc(v: Value) -> JobDesc {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_job_desc_becomes_sbatch_options() {
        let o = submission_options(&desc(json!({
            "name": "train", "partition": "gpu", "time_limit": {"set": true, "number": 90},
            "tres_per_node": "gres/gpu:2", "tasks": 4, "cpus_per_task": 2,
            "memory_per_node": {"set": true, "number": 4096}, "hold": true,
            "current_working_directory": "/tmp", "environment": ["A=1"],
            "minimum_nodes": 2, "maximum_nodes": 3, "requeue": false,
            "user_id": "", "argv": [], "begin_time": {"set": false, "infinite": false},
        })))
        .unwrap();
        assert_eq!(
            o.args,
            [
                "--job-name=train",
                "--partition=gpu",
                "--chdir=/tmp",
                "--time=90",
                "--mem=4096",
                "--gres=gpu:2",
                "--nodes=2-3",
                "--ntasks=4",
                "--cpus-per-task=2",
                "--hold",
                "--no-requeue",
            ]
        );
        assert_eq!(
            o.field_of("--time").as_deref(),
            Some("job.time_limit (--time)")
        );
        let unlimited =
            submission_options(&desc(json!({"time_limit": {"infinite": true}}))).unwrap();
        assert_eq!(unlimited.args, ["--time=UNLIMITED"]);
        let bare = submission_options(&desc(json!({"time_limit": 5}))).unwrap();
        assert_eq!(bare.args, ["--time=5"]);
        // begin_time: a UNIX timestamp, as sbatch --begin sends it.
        let begin = submission_options(&desc(
            json!({"begin_time": {"set": true, "number": 1_796_000_000}}),
        ))
        .unwrap();
        assert_eq!(begin.args, ["--begin=2026-11-30T00:53:20"]);
        let unset =
            submission_options(&desc(json!({"begin_time": {"set": false, "number": 0}}))).unwrap();
        assert!(unset.args.is_empty(), "{:?}", unset.args);
    }

    #[test]
    fn fields_berth_does_not_honour_are_refused_by_name() {
        for (body, field) in [
            (json!({"licenses": "matlab:1"}), "job.licenses"),
            (
                json!({"begin_time": {"set": true, "infinite": true}}),
                "job.begin_time",
            ),
            (json!({"tres_per_node": "license/x:1"}), "job.tres_per_node"),
            (json!({"tres_per_job": "gres/shard:2"}), "job.tres_per_job"),
            (json!({"shared": ["user"]}), "job.shared"),
            (json!({"tasks": -1}), "job.tasks"),
            (json!({"job_id": 5}), "job.job_id"),
            (json!({"nodes": "2", "minimum_nodes": 2}), "job.nodes"),
        ] {
            let e = submission_options(&desc(body.clone())).unwrap_err();
            assert_eq!(e.error.source, field, "{body}");
        }
        let e = environment(Some(&vec!["NOEQUALS".into()])).unwrap_err();
        assert_eq!(e.error.source, "job.environment");
    }

    #[test]
    fn argv_gives_the_script_its_arguments_after_argv0() {
        let job = desc(json!({"argv": ["ignored", "a b", "--lr=3"]}));
        assert_eq!(script_args(job.argv.as_deref()), ["a b", "--lr=3"]);
        assert!(script_args(None).is_empty());
        assert!(submission_options(&job).is_ok(), "argv is honoured");
    }

    #[test]
    fn job_ids_of_the_path_take_array_tasks() {
        assert_eq!(array_job_id("12").unwrap(), (12, None));
        assert_eq!(array_job_id("12_3").unwrap(), (12, Some(3)));
        for bad in ["12_", "_3", "12_x", "12_-1", "0_1", "x"] {
            let e = array_job_id(bad).unwrap_err();
            assert_eq!(e.error.source, "job_id", "{bad}");
        }
    }

    #[test]
    fn gres_tres_strings() {
        assert_eq!(
            gres_items("f", "gres/gpu:a100:2,gres/shard=1").unwrap(),
            ["gpu:a100:2", "shard:1"]
        );
        assert_eq!(gpu_count("f", "gres/gpu:h100:4").unwrap(), "h100:4");
        assert_eq!(gpu_count("f", "gres:gpu:4").unwrap(), "4");
    }
}
