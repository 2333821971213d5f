//! QOS and association limits: what running jobs and the starts of a pass hold, per
//! user, account and QOS, and the reason a start would break a limit with.

use super::*;

/// What the running jobs (and the starts of this pass) hold, per user, account and QOS,
/// and per account subtree for association limits.
#[derive(Debug, Default)]
pub(super) struct Tally<'a> {
    /// account → itself and its ancestors that have a `GrpTRES`, nearest first.
    pub(super) chains: HashMap<&'a str, Vec<(&'a str, &'a TresLimits)>>,
    /// account with a `GrpTRES` → (jobs, cpus, gpus, nodes) of its subtree.
    pub(super) assoc: HashMap<&'a str, [u64; 4]>,
    /// The QOS with a limit that counts what running jobs hold: only theirs are tallied.
    pub(super) counted: HashSet<&'a str>,
    /// (qos, user) → (jobs, cpus, gpus, nodes).
    pub(super) user: HashMap<(&'a str, &'a str), [u64; 4]>,
    /// (qos, account) → (jobs, cpus, gpus, nodes).
    pub(super) account: HashMap<(&'a str, &'a str), [u64; 4]>,
    /// qos → (jobs, cpus, gpus, nodes).
    pub(super) group: HashMap<&'a str, [u64; 4]>,
}

impl<'a> Tally<'a> {
    /// An empty tally over the account tree of `accounts` (a cycle in the parents, which
    /// the database does not allow, ends the walk up) and the QOS limits `qos`.
    pub(super) fn new(
        accounts: &'a HashMap<String, AccountLimits>,
        qos: &'a HashMap<String, QosLimits>,
    ) -> Self {
        let mut chains = HashMap::new();
        for name in accounts.keys() {
            let mut chain = Vec::new();
            let mut seen: HashSet<&str> = HashSet::new();
            let mut at = Some(name.as_str());
            while let Some(a) = at.filter(|a| seen.insert(*a)) {
                let Some((key, limits)) = accounts.get_key_value(a) else {
                    break;
                };
                if limits.grp_tres != TresLimits::default() {
                    chain.push((key.as_str(), &limits.grp_tres));
                }
                at = limits.parent.as_deref();
            }
            if !chain.is_empty() {
                chains.insert(name.as_str(), chain);
            }
        }
        Tally {
            chains,
            counted: qos
                .iter()
                .filter(|(_, l)| l.counts())
                .map(|(q, _)| q.as_str())
                .collect(),
            ..Tally::default()
        }
    }

    pub(super) fn add(
        &mut self,
        qos: &'a str,
        user: &'a str,
        account: &'a str,
        cpus: u32,
        gpus: u32,
        nodes: u32,
    ) {
        let v = [1, u64::from(cpus), u64::from(gpus), u64::from(nodes)];
        if let Some(chain) = self.chains.get(account) {
            for (a, _) in chain {
                for (x, y) in self.assoc.entry(a).or_default().iter_mut().zip(v) {
                    *x += y;
                }
            }
        }
        if !self.counted.contains(qos) {
            return;
        }
        for slot in [
            self.user.entry((qos, user)).or_default(),
            self.account.entry((qos, account)).or_default(),
            self.group.entry(qos).or_default(),
        ] {
            for (a, b) in slot.iter_mut().zip(v) {
                *a += b;
            }
        }
    }

    /// The Slurm reason a start of `job` taking `gpus` GPUs in all would break a limit
    /// of its QOS or of its account's association with, if any.
    pub(super) fn blocks(
        &self,
        job: &PendingJob,
        limits: &QosLimits,
        gpus: u64,
    ) -> Option<&'static str> {
        let chain = self.chains.get(job.account.as_str());
        if chain.is_none() && !limits.counts() {
            return None;
        }
        let need = [1u64, u64::from(job.cpus), gpus, u64::from(job.nodes)];
        let zero = [0u64; 4];
        let user = self
            .user
            .get(&(job.qos.as_str(), job.user.as_str()))
            .unwrap_or(&zero);
        let account = self
            .account
            .get(&(job.qos.as_str(), job.account.as_str()))
            .unwrap_or(&zero);
        let group = self.group.get(job.qos.as_str()).unwrap_or(&zero);
        let over = |have: &[u64; 4], i: usize, max: Option<u64>| {
            max.is_some_and(|m| have[i] + need[i] > m)
        };
        if limits
            .max_jobs_per_user
            .is_some_and(|m| user[0] + 1 > u64::from(m))
        {
            return Some("QOSMaxJobsPerUserLimit");
        }
        let checks: [(&[u64; 4], &TresLimits, [&'static str; 3]); 3] = [
            (
                user,
                &limits.max_tres_per_user,
                [
                    "QOSMaxCpuPerUserLimit",
                    "QOSMaxGRESPerUser",
                    "QOSMaxNodePerUserLimit",
                ],
            ),
            (
                account,
                &limits.max_tres_per_account,
                [
                    "QOSMaxCpuPerAccountLimit",
                    "QOSMaxGRESPerAccount",
                    "QOSMaxNodePerAccountLimit",
                ],
            ),
            (
                group,
                &limits.grp_tres,
                ["QOSGrpCpuLimit", "QOSGrpGRES", "QOSGrpNodeLimit"],
            ),
        ];
        for (have, tres, reasons) in checks {
            if over(have, 1, tres.cpu) {
                return Some(reasons[0]);
            }
            if over(have, 2, tres.gpu) {
                return Some(reasons[1]);
            }
            if over(have, 3, tres.node) {
                return Some(reasons[2]);
            }
        }
        for (a, tres) in chain.into_iter().flatten() {
            let have = self.assoc.get(a).unwrap_or(&zero);
            if over(have, 1, tres.cpu) {
                return Some("AssocGrpCpuLimit");
            }
            if over(have, 2, tres.gpu) {
                return Some("AssocGrpGRES");
            }
            if over(have, 3, tres.node) {
                return Some("AssocGrpNodeLimit");
            }
        }
        None
    }
}
