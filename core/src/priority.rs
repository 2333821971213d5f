//! Slurm's multifactor priority and classic fairshare, as pure formulas shared by the
//! scheduler (which orders the queue with them) and the api (which shows them, as
//! `sprio` and `sshare` do).
//!
//! **Priority** (an integer, higher runs first):
//! ```text
//! priority = w_age       × min(age, max_age) / max_age
//!          + w_fairshare × F
//!          + w_job_size  × job GPUs / cluster GPUs
//!          + w_partition × partition tier / highest tier
//!          + w_qos       × QOS priority / highest QOS priority
//!          − nice + admin adjustment
//! ```
//! **Fairshare** is Slurm's classic factor `F = 2^(−U/S)`:
//! * `S`, the normalized shares of an association (account, user): the product, down the
//!   account tree from `root`, of each account's `shares / sum of its siblings' shares`,
//!   divided equally among the users known in the account;
//! * `U`, the normalized usage: the association's decayed usage over the whole cluster's;
//! * usage is charged when a job run ends: `elapsed seconds × billing × QOS usage factor`,
//!   with `billing = Σ TRES count × billing weight` (by default a GPU weighs 32 CPUs);
//! * usage decays with a half-life (default 7 days): `U(t) = U(t0) × 2^(−(t−t0)/half_life)`.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use utoipa::ToSchema;

/// Weights of the priority factors (Slurm's `PriorityWeight*`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PriorityWeights {
    /// `PriorityWeightAge`.
    pub age: f64,
    /// `PriorityWeightFairshare`.
    pub fairshare: f64,
    /// `PriorityWeightJobSize` (larger GPU requests rank higher, Slurm's default).
    pub job_size: f64,
    /// `PriorityWeightPartition`.
    pub partition: f64,
    /// `PriorityWeightQOS`.
    pub qos: f64,
}

impl Default for PriorityWeights {
    fn default() -> Self {
        PriorityWeights {
            age: 1000.0,
            fairshare: 10000.0,
            job_size: 1000.0,
            partition: 1000.0,
            qos: 10000.0,
        }
    }
}

/// Seven days, Slurm's default `PriorityMaxAge`, in seconds.
pub const DEFAULT_MAX_AGE: i64 = 7 * 24 * 3600;

/// Seven days, Slurm's default `PriorityDecayHalfLife`, in seconds.
pub const DEFAULT_HALF_LIFE: i64 = 7 * 24 * 3600;

/// What one job's priority is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PriorityInputs {
    /// Seconds since the job became eligible (its submission).
    pub age_seconds: i64,
    /// `PriorityMaxAge`, seconds: the age factor is 1 from this age on.
    pub max_age_seconds: i64,
    /// The association's fairshare factor, 0..=1.
    pub fairshare: f64,
    /// GPUs the job asks for in total.
    pub job_gpus: u32,
    /// GPUs in the cluster.
    pub cluster_gpus: u32,
    /// The partition's priority tier.
    pub partition_tier: u32,
    /// The highest partition priority tier.
    pub max_partition_tier: u32,
    /// The QOS priority.
    pub qos_priority: u32,
    /// The highest QOS priority.
    pub max_qos_priority: u32,
    /// `--nice` (subtracted).
    pub nice: i32,
    /// An administrator's adjustment (added; `berth update job ID priority=` / `top`).
    pub adjust: i64,
}

/// Each factor of a priority (0..=1 before weighting) and the total.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PriorityFactors {
    /// The age factor.
    pub age: f64,
    /// The fairshare factor.
    pub fairshare: f64,
    /// The job-size factor.
    pub job_size: f64,
    /// The partition factor.
    pub partition: f64,
    /// The QOS factor.
    pub qos: f64,
    /// The nice value (subtracted).
    pub nice: i32,
    /// The administrator's adjustment (added).
    pub adjust: i64,
    /// The priority: the weighted sum, minus nice, plus the adjustment.
    pub priority: i64,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b <= 0.0 {
        0.0
    } else {
        (a / b).clamp(0.0, 1.0)
    }
}

/// Slurm's multifactor priority (see the module docs).
pub fn priority(w: &PriorityWeights, i: &PriorityInputs) -> PriorityFactors {
    let age = ratio(
        i.age_seconds.clamp(0, i.max_age_seconds.max(0)) as f64,
        i.max_age_seconds as f64,
    );
    let fairshare = i.fairshare.clamp(0.0, 1.0);
    let job_size = ratio(f64::from(i.job_gpus), f64::from(i.cluster_gpus));
    let partition = ratio(f64::from(i.partition_tier), f64::from(i.max_partition_tier));
    let qos = ratio(f64::from(i.qos_priority), f64::from(i.max_qos_priority));
    let weighted = w.age * age
        + w.fairshare * fairshare
        + w.job_size * job_size
        + w.partition * partition
        + w.qos * qos;
    let priority = (weighted.round() as i64)
        .saturating_sub(i64::from(i.nice))
        .saturating_add(i.adjust);
    PriorityFactors {
        age,
        fairshare,
        job_size,
        partition,
        qos,
        nice: i.nice,
        adjust: i.adjust,
        priority,
    }
}

/// TRES billing weights (Slurm's `TRESBillingWeights`): what one unit of each resource
/// costs per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BillingWeights {
    /// Per CPU.
    pub cpu: f64,
    /// Per GPU.
    pub gpu: f64,
}

impl Default for BillingWeights {
    fn default() -> Self {
        BillingWeights {
            cpu: 1.0,
            gpu: 32.0,
        }
    }
}

/// The billing of a job run: `cpus × w.cpu + gpus × w.gpu`.
pub fn billing(w: &BillingWeights, cpus: u64, gpus: u64) -> f64 {
    cpus as f64 * w.cpu + gpus as f64 * w.gpu
}

/// The usage a run is charged: `elapsed seconds × billing × QOS usage factor`.
pub fn charge(elapsed_seconds: i64, billing: f64, qos_usage_factor: f64) -> f64 {
    elapsed_seconds.max(0) as f64 * billing * qos_usage_factor
}

/// Usage decayed over `elapsed_seconds` with half-life `half_life_seconds` (no decay when
/// the half-life is 0 or less).
pub fn decay(usage: f64, elapsed_seconds: i64, half_life_seconds: i64) -> f64 {
    if half_life_seconds <= 0 || elapsed_seconds <= 0 {
        return usage;
    }
    usage * 0.5f64.powf(elapsed_seconds as f64 / half_life_seconds as f64)
}

/// The classic fairshare factor `2^(−U/S)` (0 when the association has no shares).
pub fn fairshare_factor(norm_shares: f64, norm_usage: f64) -> f64 {
    if norm_shares <= 0.0 {
        0.0
    } else {
        2f64.powf(-norm_usage / norm_shares)
    }
}

/// An account of the tree, as fairshare needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAccount {
    /// Its name (`root` is the top).
    pub name: String,
    /// Its parent (`None` for `root`).
    pub parent: Option<String>,
    /// Its shares among its siblings.
    pub shares: u32,
}

/// One association's fairshare, as `sshare` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FairshareRow {
    /// The account.
    pub account: String,
    /// The user.
    pub user: String,
    /// Normalized shares `S`, 0..=1.
    pub norm_shares: f64,
    /// Decayed usage (billing-seconds).
    pub raw_usage: f64,
    /// Normalized usage `U`, 0..=1.
    pub norm_usage: f64,
    /// The factor `2^(−U/S)`.
    pub fairshare: f64,
}

/// Fairshare of every association in `usage` (account, user, decayed usage) and
/// `associations` (account, user pairs with no usage yet). Accounts missing from the tree
/// count as children of `root` with one share.
pub fn fairshare_table(
    accounts: &[ShareAccount],
    usage: &[(String, String, f64)],
    associations: &[(String, String)],
) -> Vec<FairshareRow> {
    let mut tree: BTreeMap<String, (Option<String>, u32)> = accounts
        .iter()
        .map(|a| (a.name.clone(), (a.parent.clone(), a.shares)))
        .collect();
    tree.entry("root".into()).or_insert((None, 1));
    let mut users: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut raw: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (a, u, v) in usage {
        users.entry(a.clone()).or_default().insert(u.clone());
        *raw.entry((a.clone(), u.clone())).or_default() += v.max(0.0);
    }
    for (a, u) in associations {
        users.entry(a.clone()).or_default().insert(u.clone());
        raw.entry((a.clone(), u.clone())).or_default();
    }
    for a in users.keys() {
        tree.entry(a.clone())
            .or_insert((Some("root".to_string()), 1));
    }
    let mut sibling_sum: BTreeMap<Option<String>, u64> = BTreeMap::new();
    for (parent, shares) in tree.values() {
        *sibling_sum.entry(parent.clone()).or_default() += u64::from(*shares);
    }
    let norm = |account: &str| -> f64 {
        let mut s = 1.0;
        let mut current = account.to_string();
        for _ in 0..64 {
            let Some((parent, shares)) = tree.get(&current) else {
                return 0.0;
            };
            let Some(parent) = parent else {
                return s;
            };
            let sum = sibling_sum.get(&Some(parent.clone())).copied().unwrap_or(0);
            if sum == 0 {
                return 0.0;
            }
            s *= f64::from(*shares) / sum as f64;
            current = parent.clone();
        }
        s
    };
    let total: f64 = raw.values().sum();
    raw.iter()
        .map(|((a, u), v)| {
            let n_users = users.get(a).map(BTreeSet::len).unwrap_or(1).max(1);
            let norm_shares = norm(a) / n_users as f64;
            let norm_usage = if total > 0.0 { v / total } else { 0.0 };
            FairshareRow {
                account: a.clone(),
                user: u.clone(),
                norm_shares,
                raw_usage: *v,
                norm_usage,
                fairshare: fairshare_factor(norm_shares, norm_usage),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_caps_at_max_age_and_nice_subtracts() {
        let w = PriorityWeights::default();
        let base = PriorityInputs {
            max_age_seconds: 1000,
            ..Default::default()
        };
        let old = priority(
            &w,
            &PriorityInputs {
                age_seconds: 5000,
                ..base
            },
        );
        assert_eq!(old.age, 1.0);
        assert_eq!(old.priority, 1000);
        let half = priority(
            &w,
            &PriorityInputs {
                age_seconds: 500,
                nice: 100,
                ..base
            },
        );
        assert_eq!(half.priority, 400);
    }

    #[test]
    fn usage_lowers_fairshare_and_decays_by_half_life() {
        let accounts = vec![ShareAccount {
            name: "root".into(),
            parent: None,
            shares: 1,
        }];
        let rows = fairshare_table(
            &accounts,
            &[("root".into(), "alice".into(), 100.0)],
            &[("root".into(), "bob".into())],
        );
        let alice = rows.iter().find(|r| r.user == "alice").unwrap();
        let bob = rows.iter().find(|r| r.user == "bob").unwrap();
        assert_eq!(bob.fairshare, 1.0);
        assert_eq!(alice.norm_shares, 0.5);
        assert_eq!(alice.fairshare, 0.25);
        assert_eq!(decay(100.0, 3600, 3600), 50.0);
        assert_eq!(decay(100.0, 7200, 3600), 25.0);
    }

    #[test]
    fn account_shares_multiply_down_the_tree() {
        let acc = |n: &str, p: &str, s| ShareAccount {
            name: n.into(),
            parent: Some(p.into()),
            shares: s,
        };
        let accounts = vec![
            ShareAccount {
                name: "root".into(),
                parent: None,
                shares: 1,
            },
            acc("physics", "root", 3),
            acc("bio", "root", 1),
            acc("hep", "physics", 1),
            acc("astro", "physics", 1),
        ];
        let rows = fairshare_table(
            &accounts,
            &[],
            &[("hep".into(), "u".into()), ("bio".into(), "v".into())],
        );
        let hep = rows.iter().find(|r| r.account == "hep").unwrap();
        let bio = rows.iter().find(|r| r.account == "bio").unwrap();
        assert_eq!(hep.norm_shares, 0.375);
        assert_eq!(bio.norm_shares, 0.25);
    }

    #[test]
    fn gpus_dominate_billing() {
        let w = BillingWeights::default();
        assert_eq!(
            charge(3600, billing(&w, 8, 8), 1.0),
            3600.0 * (8.0 * 32.0 + 8.0)
        );
    }
}
