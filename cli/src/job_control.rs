//! `berth hold`, `berth release`, `berth top` and `berth update job ID key=value…`
//! (scontrol's `hold`, `release`, `top` and `update job`), and `berth cancel`.
//! `cancel`, `hold` and `release` send one request for all the jobs named
//! (`POST /v1/jobs/cancel` …, as `scancel 1 2 3` is one RPC), with one error line per job
//! that failed.

use crate::client::{problem_message, Client, ClientError};
use anyhow::bail;
use berth_core::scheduling::JobUpdate;
use berth_core::wire::{Job, JobBatch, JobBatchResult};

impl Client {
    /// `POST /v1/jobs/{id}/hold`.
    pub async fn job_hold(&self, id: i64) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/hold"));
        self.json(self.http.post(&url), format!("POST {url}")).await
    }

    /// `POST /v1/jobs/{id}/release`.
    pub async fn job_release(&self, id: i64) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/release"));
        self.json(self.http.post(&url), format!("POST {url}")).await
    }

    /// `POST /v1/jobs/{id}/top`.
    pub async fn job_top(&self, id: i64) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/top"));
        self.json(self.http.post(&url), format!("POST {url}")).await
    }

    /// `PATCH /v1/jobs/{id}`.
    pub async fn job_update(&self, id: i64, update: &JobUpdate) -> Result<Job, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}"));
        self.json(self.http.patch(&url).json(update), format!("PATCH {url}"))
            .await
    }

    /// `POST /v1/jobs/{action}` (`cancel`, `hold`, `release`) for `jobs` (`12`, `12_3`):
    /// each job's outcome, in order.
    pub async fn job_batch(
        &self,
        action: &str,
        jobs: &[String],
    ) -> Result<JobBatchResult, ClientError> {
        let url = self.url(&format!("/v1/jobs/{action}"));
        let body = JobBatch {
            jobs: jobs.to_vec(),
        };
        self.json(self.http.post(&url).json(&body), format!("POST {url}"))
            .await
    }
}

/// The most jobs one batch request names (the api's limit).
const BATCH_SIZE: usize = 1000;

/// Prints one job's failure as scancel does: `error: <message>`, naming the job when the
/// message does not; the message escaped for the terminal.
fn report_failure(job: &str, message: &str) {
    let message = berth_core::text::escape(message);
    if message.contains(job) {
        eprintln!("error: {message}");
    } else {
        eprintln!("error: job {job}: {message}");
    }
}

/// `action` on every job of `jobs`, in requests of up to [`BATCH_SIZE`]; an api without
/// the batch routes (405) gets one request per job through `single`. Status 1 if any
/// job failed.
async fn batch(
    client: &Client,
    action: &str,
    jobs: &[String],
    single: impl AsyncFn(&str) -> Result<Job, ClientError>,
) -> anyhow::Result<i32> {
    let mut status = 0;
    for chunk in jobs.chunks(BATCH_SIZE) {
        match client.job_batch(action, chunk).await {
            Ok(result) => {
                for item in result.items.iter().filter(|i| i.status != 200) {
                    let message = match &item.problem {
                        Some(p) => problem_message(p),
                        None => format!("the api answered HTTP {}", item.status),
                    };
                    report_failure(&item.job, &message);
                    status = 1;
                }
            }
            Err(e) if e.status() == Some(405) => {
                for job in chunk {
                    if let Err(e) = single(job).await {
                        report_failure(job, &e.to_string());
                        status = 1;
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(status)
}

/// Reads scontrol-style `key=value` assignments: `nice=`, `priority=` (the admin
/// adjustment), `timelimit=`, `begintime=` (also `StartTime=`), case-insensitive.
///
/// # Errors
/// A message naming the unknown key or bad value.
pub fn parse_update(assignments: &[String]) -> anyhow::Result<JobUpdate> {
    let mut update = JobUpdate::default();
    for a in assignments {
        let Some((key, value)) = a.split_once('=') else {
            bail!("expected key=value, got {a:?}");
        };
        match key.to_ascii_lowercase().as_str() {
            "nice" => {
                update.nice = Some(
                    value
                        .parse()
                        .map_err(|_| anyhow::anyhow!("nice={value}: not an integer"))?,
                )
            }
            "priority" => {
                update.priority_adjust = Some(
                    value
                        .parse()
                        .map_err(|_| anyhow::anyhow!("priority={value}: not an integer"))?,
                )
            }
            "timelimit" | "time" => update.time_limit = Some(value.to_string()),
            "begintime" | "starttime" | "begin" => update.begin = Some(value.to_string()),
            other => bail!("cannot update {other:?} (nice, priority, timelimit, begintime)"),
        }
    }
    Ok(update)
}

async fn each(
    ids: &[i64],
    f: impl AsyncFn(i64) -> Result<Job, ClientError>,
) -> anyhow::Result<i32> {
    let mut status = 0;
    for &id in ids {
        if let Err(e) = f(id).await {
            report_failure(&id.to_string(), &e.to_string());
            status = 1;
        }
    }
    Ok(status)
}

fn id_names(ids: &[i64]) -> Vec<String> {
    ids.iter().map(i64::to_string).collect()
}

async fn one_id(
    job: &str,
    f: impl AsyncFn(i64) -> Result<Job, ClientError>,
) -> Result<Job, ClientError> {
    // The names come from i64s: they parse back.
    f(job.parse().unwrap_or_default()).await
}

/// `berth hold ID…`: one request.
pub async fn hold(client: &Client, ids: &[i64]) -> anyhow::Result<i32> {
    batch(client, "hold", &id_names(ids), async |job| {
        one_id(job, async |id| client.job_hold(id).await).await
    })
    .await
}

/// `berth release ID…`: one request.
pub async fn release(client: &Client, ids: &[i64]) -> anyhow::Result<i32> {
    batch(client, "release", &id_names(ids), async |job| {
        one_id(job, async |id| client.job_release(id).await).await
    })
    .await
}

/// `berth top ID…`: the jobs first among their user's pending jobs of the same
/// partition, account and QOS, in the order given (`scontrol top`'s ordered job list: the
/// last is topped first, the first last, so the first ends up first).
pub async fn top(client: &Client, ids: &[i64]) -> anyhow::Result<i32> {
    let reversed: Vec<i64> = ids.iter().rev().copied().collect();
    each(&reversed, async |id| client.job_top(id).await).await
}

/// `berth update job ID key=value…`.
pub async fn update_job(client: &Client, id: i64, assignments: &[String]) -> anyhow::Result<i32> {
    let update = parse_update(assignments)?;
    each(&[id], async |id| client.job_update(id, &update).await).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scontrol_style_assignments() {
        let u = parse_update(&["Nice=10".into(), "TimeLimit=1:00:00".into()]).unwrap();
        assert_eq!(u.nice, Some(10));
        assert_eq!(u.time_limit.as_deref(), Some("1:00:00"));
        assert!(parse_update(&["partition=x".into()]).is_err());
        assert!(parse_update(&["nice".into()]).is_err());
    }
}

/// A job named on the command line: `12`, or one array task `12_3` (scancel's form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobRef {
    /// The job (for a task, the array's) id.
    pub id: i64,
    /// The array task index.
    pub task: Option<u32>,
}

impl From<i64> for JobRef {
    fn from(id: i64) -> Self {
        JobRef { id, task: None }
    }
}

impl std::str::FromStr for JobRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("'{s}' is not a job id (12) or an array task (12_3)");
        match s.split_once('_') {
            Some((id, task)) => Ok(JobRef {
                id: id.parse().map_err(|_| bad())?,
                task: Some(task.parse().map_err(|_| bad())?),
            }),
            None => Ok(JobRef {
                id: s.parse().map_err(|_| bad())?,
                task: None,
            }),
        }
    }
}

impl std::fmt::Display for JobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.task {
            Some(t) => write!(f, "{}_{t}", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}

#[cfg(test)]
mod job_ref_tests {
    use super::JobRef;

    #[test]
    fn job_refs_parse_ids_and_array_tasks() {
        assert_eq!("12".parse::<JobRef>(), Ok(JobRef::from(12)));
        assert_eq!(
            "12_3".parse::<JobRef>(),
            Ok(JobRef {
                id: 12,
                task: Some(3)
            })
        );
        assert!("12_x".parse::<JobRef>().unwrap_err().contains("12_x"));
        assert!("abc".parse::<JobRef>().is_err());
        assert_eq!("12_3".parse::<JobRef>().unwrap().to_string(), "12_3");
    }
}
