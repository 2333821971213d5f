//! `berth hold`, `berth release` and `berth update job ID key=value…` (scontrol's `hold`,
//! `release` and `update job`).

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
