//! The fairshare and priority api calls (used by [`crate::sshare`] and [`crate::sprio`])
//! and `berth qos list|set` (sacctmgr's QOS commands).

use crate::client::{Client, ClientError};
use anyhow::{anyhow, bail};
use berth_core::qos::{FairshareList, JobPriority, PreemptMode, Qos, QosSpec, TresLimits};

impl Client {
    /// `GET /v1/fairshare`.
    pub async fn fairshare_list(&self) -> Result<FairshareList, ClientError> {
        let url = self.url("/v1/fairshare");
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET /v1/jobs/{id}/priority`.
    pub async fn job_priority(&self, id: i64) -> Result<JobPriority, ClientError> {
        let url = self.url(&format!("/v1/jobs/{id}/priority"));
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET /v1/qos`.
    pub async fn qos_list(&self) -> Result<Vec<Qos>, ClientError> {
        let url = self.url("/v1/qos");
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `GET /v1/qos/{name}`.
    pub async fn qos_get(&self, name: &str) -> Result<Qos, ClientError> {
        let url = self.url(&format!("/v1/qos/{name}"));
        self.json(self.http.get(&url), format!("GET {url}")).await
    }

    /// `PUT /v1/qos/{name}`.
    pub async fn qos_put(&self, name: &str, spec: &QosSpec) -> Result<Qos, ClientError> {
        let url = self.url(&format!("/v1/qos/{name}"));
        self.json(self.http.put(&url).json(spec), format!("PUT {url}"))
            .await
    }
}

/// Applies sacctmgr-style `key=value` assignments to a QOS definition: `priority=`,
/// `usagefactor=`, `maxtresperuser=`, `maxtresperaccount=`, `grptres=` (TRES lists like
/// `gres/gpu=8,cpu=64`), `maxjobsperuser=`, `maxsubmitjobsperuser=`, `maxwall=` (Slurm's
/// time format), `preempt=` (QOS list), `preemptmode=` (`cancel`|`requeue`),
/// `gracetime=` and `preemptexempttime=` (seconds), `description=`; case-insensitive.
///
/// # Errors
/// A message naming the unknown key or bad value.
pub fn apply_qos_assignments(spec: &mut QosSpec, assignments: &[String]) -> anyhow::Result<()> {
    for a in assignments {
        let Some((key, value)) = a.split_once('=') else {
            bail!("expected key=value, got {a:?}");
        };
        let bad = |what: &str| anyhow!("{key}={value}: {what}");
        let count = |v: &str| v.parse::<u32>().map_err(|_| bad("not a count"));
        let opt = |v: &str| -> anyhow::Result<Option<u32>> {
            if v.is_empty() || v == "-1" {
                Ok(None)
            } else {
                count(v).map(Some)
            }
        };
        let tres = |v: &str| TresLimits::parse(v).map_err(|e| bad(&e));
        match key.to_ascii_lowercase().as_str() {
            "priority" => spec.priority = count(value)?,
            "usagefactor" => spec.usage_factor = value.parse().map_err(|_| bad("not a number"))?,
            "maxtresperuser" | "maxtrespu" => spec.max_tres_per_user = tres(value)?,
            "maxtresperaccount" | "maxtrespa" => spec.max_tres_per_account = tres(value)?,
            "grptres" => spec.grp_tres = tres(value)?,
            "maxjobsperuser" | "maxjobspu" => spec.max_jobs_per_user = opt(value)?,
            "maxsubmitjobsperuser" | "maxsubmitjobspu" => {
                spec.max_submit_jobs_per_user = opt(value)?
            }
            "maxwall" => {
                spec.max_wall = if value.is_empty() || value == "-1" {
                    None
                } else {
                    Some(
                        berth_core::duration::parse_duration(value)
                            .map_err(|e| bad(&e.to_string()))?
                            .ok_or_else(|| bad("must be a limited time"))?,
                    )
                }
            }
            "preempt" => {
                spec.preempt = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            }
            "preemptmode" => {
                spec.preempt_mode = match value.to_ascii_lowercase().as_str() {
                    "cancel" => PreemptMode::Cancel,
                    "requeue" => PreemptMode::Requeue,
                    _ => return Err(bad("cancel or requeue")),
                }
            }
            "gracetime" => spec.grace_time = value.parse().map_err(|_| bad("not seconds"))?,
            "preemptexempttime" => {
                spec.preempt_exempt_time = value.parse().map_err(|_| bad("not seconds"))?
            }
            "description" => spec.description = value.to_string(),
            other => bail!("cannot set {other:?} on a QOS"),
        }
    }
    Ok(())
}

/// `berth qos list [--json]`.
pub async fn qos_list(client: &Client, json: bool) -> anyhow::Result<i32> {
    let list = client.qos_list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(0);
    }
    println!(
        "{:<12} {:>8} {:>8} {:<20} {:<20} {:>8} {:<16} {:<8}",
        "Name", "Priority", "UsageF", "MaxTRESPU", "GrpTRES", "MaxWall", "Preempt", "Mode"
    );
    for q in &list {
        let s = &q.spec;
        println!(
            "{:<12} {:>8} {:>8} {:<20} {:<20} {:>8} {:<16} {:<8}",
            q.name,
            s.priority,
            s.usage_factor,
            s.max_tres_per_user.to_string(),
            s.grp_tres.to_string(),
            s.max_wall.map(|w| w.to_string()).unwrap_or_default(),
            s.preempt.join(","),
            s.preempt_mode.as_str()
        );
    }
    Ok(0)
}

/// `berth qos set NAME key=value…`: creates the QOS or changes the given settings of it.
pub async fn qos_set(client: &Client, name: &str, assignments: &[String]) -> anyhow::Result<i32> {
    let mut spec = match client.qos_get(name).await {
        Ok(q) => q.spec,
        Err(ClientError::Problem { status: 404, .. }) => QosSpec::default(),
        Err(e) => return Err(e.into()),
    };
    apply_qos_assignments(&mut spec, assignments)?;
    let q = client.qos_put(name, &spec).await?;
    println!("{}", serde_json::to_string_pretty(&q)?);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos_assignments_read_slurm_names() {
        let mut spec = QosSpec::default();
        apply_qos_assignments(
            &mut spec,
            &[
                "Priority=100".into(),
                "MaxTRESPerUser=gres/gpu=8,cpu=64".into(),
                "MaxWall=1-0".into(),
                "PreemptMode=requeue".into(),
                "Preempt=low,scavenger".into(),
            ],
        )
        .unwrap();
        assert_eq!(spec.priority, 100);
        assert_eq!(spec.max_tres_per_user.gpu, Some(8));
        assert_eq!(spec.max_tres_per_user.cpu, Some(64));
        assert_eq!(spec.max_wall, Some(86400));
        assert_eq!(spec.preempt_mode, PreemptMode::Requeue);
        assert_eq!(spec.preempt, vec!["low", "scavenger"]);
        let err = apply_qos_assignments(&mut spec, &["MaxTRESPerUser=gres/tpu=1".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("tpu"), "{err}");
    }
}
