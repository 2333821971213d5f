//! `berth hold`, `berth release`, `berth top` and `berth update job ID key=value…`
//! (scontrol's `hold`, `release`, `top` and `update job`).

use crate::client::{Client, ClientError};
use anyhow::bail;
use berth_core::scheduling::JobUpdate;
use berth_core::wire::Job;

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
            eprintln!("error: job {id}: {e}");
            status = 1;
        }
    }
    Ok(status)
}

/// `berth hold ID…`.
pub async fn hold(client: &Client, ids: &[i64]) -> anyhow::Result<i32> {
    each(ids, async |id| client.job_hold(id).await).await
}

/// `berth release ID…`.
pub async fn release(client: &Client, ids: &[i64]) -> anyhow::Result<i32> {
    each(ids, async |id| client.job_release(id).await).await
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

/// `berth cancel ID…` where an ID may name one array task (`12_3`): silent on success
/// like scancel, an error line per failure and status 1 if any failed.
pub async fn cancel(client: &Client, ids: &[JobRef]) -> anyhow::Result<i32> {
    let plain: Vec<i64> = ids
        .iter()
        .filter(|r| r.task.is_none())
        .map(|r| r.id)
        .collect();
    let mut status = crate::commands::cancel(client, &plain).await?;
    for r in ids.iter().filter(|r| r.task.is_some()) {
        let task = r.task.unwrap_or_default();
        if let Err(e) = client.job_task_cancel(r.id, task).await {
            eprintln!("error: job {r}: {e}");
            status = 1;
        }
    }
    Ok(status)
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
