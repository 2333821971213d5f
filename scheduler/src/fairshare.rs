//! Fairshare in the running scheduler: charging ended job runs and reading every
//! association's fairshare factor.
//!
//! * **Charging** (a reconciler): each cycle looks for job runs whose allocations are all
//!   released and that have no charge yet (among the runs a release queued in
//!   `usage_pending`, so the cost follows what ended since, not the history), and charges
//!   each once
//!   (`elapsed × Σ TRES × billing weight × QOS usage factor`, see
//!   [`berth_core::priority`]) to its association (the job's account, else its user's
//!   default account, else `root`). The ledger's primary key makes a second charge of a
//!   run impossible, so a cycle that fails half-way, or two leaders, charge nothing twice.
//! * **Decay**: stored usage is decayed to now (with the configured half-life) when it is
//!   charged, by a reconciler for rows older than a minute, and exactly to `now` when
//!   read here.
//! * **Factor**: Slurm's classic `2^(−U/S)` over the account tree
//!   ([`berth_core::priority::fairshare_table`]).

use berth_core::priority::{self, BillingWeights, FairshareRow, ShareAccount};
use berth_db::usage::{self, Charge, UsageRow};
use berth_db::{DbError, Pool};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use tracing::instrument;

/// The most runs charged per cycle.
const CHARGE_BATCH: i64 = 1000;

/// The decay reconciler leaves rows younger than this alone, seconds.
const DECAY_EVERY: i64 = 60;

/// Charges every ended, uncharged run (up to a batch per call) and decays stale usage
/// rows. Returns how many runs were charged.
///
/// # Errors
/// [`DbError`] from the driver.
#[instrument(skip(pool, billing), err)]
pub async fn charge_ended_runs(
    pool: &Pool,
    now: DateTime<Utc>,
    billing: &BillingWeights,
    half_life: i64,
) -> Result<usize, DbError> {
    let runs = usage::usage_uncharged_runs(pool, now, CHARGE_BATCH).await?;
    let mut charged = 0;
    if !runs.is_empty() {
        let mut tx = berth_db::begin(pool).await?;
        for r in &runs {
            let bill = priority::billing(billing, r.cpus.max(0) as u64, r.gpus.max(0) as u64);
            let charge = Charge {
                job_id: r.job_id,
                run: r.run,
                account: r.account.clone(),
                user_name: r.user_name.clone(),
                elapsed: r.elapsed,
                billing: bill,
                usage_factor: r.usage_factor,
                amount: priority::charge(r.elapsed, bill, r.usage_factor),
            };
            if usage::usage_charge_in_tx(&mut tx, &charge, r.ended, half_life).await? {
                charged += 1;
                tracing::debug!(
                    job.id = r.job_id,
                    run = r.run,
                    amount = charge.amount,
                    "usage charged"
                );
            }
        }
        tx.commit().await?;
    }
    usage::usage_pending_prune(pool, now).await?;
    usage::usage_decay(pool, now, half_life, DECAY_EVERY).await?;
    Ok(charged)
}

/// Every association's fairshare as of `now`.
#[derive(Debug, Clone, Default)]
pub struct Fairshare {
    /// The table, as sshare shows it.
    pub rows: Vec<FairshareRow>,
    /// account → user → factor.
    factors: HashMap<String, HashMap<String, f64>>,
}

impl Fairshare {
    /// The fairshare factor of an association (1 for one never seen).
    pub fn factor(&self, account: &str, user: &str) -> f64 {
        self.factors
            .get(account)
            .and_then(|users| users.get(user))
            .copied()
            .unwrap_or(1.0)
    }
}

/// Decays usage to `now` and computes every association's fairshare factor.
///
/// * `accounts`: the account tree with shares;
/// * `usage`: each association's stored usage (decayed from its `updated_at`);
/// * `associations`: the (account, user) pairs the shares are divided among (users'
///   default accounts, jobs not ended, usage rows).
pub fn compute(
    accounts: &[ShareAccount],
    usage: &[UsageRow],
    associations: &[(String, String)],
    now: DateTime<Utc>,
    half_life: i64,
) -> Fairshare {
    let rows: Vec<(String, String, f64)> = usage
        .iter()
        .map(|u| {
            let age = (now - u.updated_at).num_seconds();
            (
                u.account.clone(),
                u.user_name.clone(),
                priority::decay(u.raw_usage, age, half_life),
            )
        })
        .collect();
    let table = priority::fairshare_table(accounts, &rows, associations);
    let mut factors: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for r in &table {
        factors
            .entry(r.account.clone())
            .or_default()
            .insert(r.user.clone(), r.fairshare);
    }
    Fairshare {
        rows: table,
        factors,
    }
}
