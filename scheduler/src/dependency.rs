//! `--dependency`, evaluated: Slurm's `after`, `afterany`, `afterok`, `afternotok`,
//! `aftercorr` and `singleton`, joined with `,` (all must hold) or `?` (any may). A job
//! id that names an array means every task of it; `aftercorr` pairs task *i* of the
//! dependent array with task *i* of the named one. Pure: the cycle looks the named jobs
//! up and passes them in.

use crate::planner::DependencyState;

/// One dependency type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `after`: the named jobs have started (or ended).
    After,
    /// `afterany`: the named jobs have ended, however.
    AfterAny,
    /// `afterok`: the named jobs have completed with exit code 0.
    AfterOk,
    /// `afternotok`: the named jobs have ended otherwise.
    AfterNotOk,
    /// `aftercorr`: the corresponding task of the named array completed with 0.
    AfterCorr,
    /// `afterburstbuffer`: treated as `afterany`.
    AfterBurstBuffer,
}

/// One `TYPE:JOB[:JOB…]` item, or `singleton`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A typed item: the named jobs (`(job, Some(task))` for `N_TASK`).
    Jobs(Kind, Vec<(i64, Option<u32>)>),
    /// `singleton`.
    Singleton,
}

/// A parsed `--dependency`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// `?`: any item may hold; `,`: all must.
    pub any: bool,
    /// The items.
    pub items: Vec<Item>,
}

impl Dependency {
    /// Every job id named.
    pub fn job_ids(&self) -> Vec<i64> {
        self.items
            .iter()
            .flat_map(|i| match i {
                Item::Jobs(_, jobs) => jobs.iter().map(|(j, _)| *j).collect(),
                Item::Singleton => Vec::new(),
            })
            .collect()
    }

    /// Whether it has `singleton`.
    pub fn singleton(&self) -> bool {
        self.items.contains(&Item::Singleton)
    }
}

/// Parses `--dependency` (the syntax `sbatch` already checked; `+MINUTES` delays are read
/// and ignored).
///
/// # Errors
/// A message naming the bad item.
pub fn parse(v: &str) -> Result<Dependency, String> {
    let any = v.contains('?');
    let mut items = Vec::new();
    for item in v.split([',', '?']) {
        if item == "singleton" {
            items.push(Item::Singleton);
            continue;
        }
        let (kind, ids) = item
            .split_once(':')
            .ok_or_else(|| format!("not a dependency: {item:?}"))?;
        let kind = match kind {
            "after" => Kind::After,
            "afterany" => Kind::AfterAny,
            "afterok" => Kind::AfterOk,
            "afternotok" => Kind::AfterNotOk,
            "aftercorr" => Kind::AfterCorr,
            "afterburstbuffer" => Kind::AfterBurstBuffer,
            other => return Err(format!("unknown dependency type {other:?}")),
        };
        let mut jobs = Vec::new();
        for id in ids.split(':') {
            let id = id.split('+').next().unwrap_or(id);
            let (job, task) = match id.split_once('_') {
                Some((j, t)) => (j, Some(t)),
                None => (id, None),
            };
            let job = job
                .parse::<i64>()
                .map_err(|_| format!("not a job id: {id:?}"))?;
            let task = match task {
                Some(t) => Some(
                    t.parse::<u32>()
                        .map_err(|_| format!("not a task: {id:?}"))?,
                ),
                None => None,
            };
            jobs.push((job, task));
        }
        items.push(Item::Jobs(kind, jobs));
    }
    Ok(Dependency { any, items })
}

/// A job (or array task) a dependency names, as the database has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Job id.
    pub id: i64,
    /// Its array's id.
    pub array_job_id: Option<i64>,
    /// Its task index.
    pub array_task_id: Option<u32>,
    /// Its state (Slurm's long name).
    pub state: String,
    /// An array master still holding tasks that have not started.
    pub has_pending_tasks: bool,
}

fn ended(state: &str) -> bool {
    !matches!(state, "PENDING" | "RUNNING" | "SUSPENDED" | "COMPLETING")
}

/// One target's verdict for `kind`.
fn judge(kind: Kind, t: &Target) -> DependencyState {
    use DependencyState::*;
    if t.has_pending_tasks {
        return match kind {
            Kind::After if t.state != "PENDING" => Waiting,
            _ if t.state == "CANCELLED" && kind != Kind::AfterAny => match kind {
                Kind::AfterNotOk => Satisfied,
                _ => Never,
            },
            _ => Waiting,
        };
    }
    match kind {
        Kind::After => {
            if t.state == "PENDING" {
                Waiting
            } else {
                Satisfied
            }
        }
        Kind::AfterAny | Kind::AfterBurstBuffer => {
            if ended(&t.state) {
                Satisfied
            } else {
                Waiting
            }
        }
        Kind::AfterOk | Kind::AfterCorr => match t.state.as_str() {
            "COMPLETED" => Satisfied,
            s if ended(s) => Never,
            _ => Waiting,
        },
        Kind::AfterNotOk => match t.state.as_str() {
            "COMPLETED" => Never,
            s if ended(s) => Satisfied,
            _ => Waiting,
        },
    }
}

fn all(states: impl IntoIterator<Item = DependencyState>) -> DependencyState {
    let mut out = DependencyState::Satisfied;
    for s in states {
        match s {
            DependencyState::Never => return DependencyState::Never,
            DependencyState::Waiting => out = DependencyState::Waiting,
            DependencyState::Satisfied => {}
        }
    }
    out
}

/// Evaluates `dep` for a job (or array task `own_task`), given the rows of every job it
/// names (`targets`: the jobs and all their array tasks) and whether another job of the
/// same user and name is still active (`singleton_blocked`). A named job that no longer
/// exists counts as satisfied.
pub fn evaluate(
    dep: &Dependency,
    own_task: Option<u32>,
    targets: &[Target],
    singleton_blocked: bool,
) -> DependencyState {
    let verdicts = dep.items.iter().map(|item| match item {
        Item::Singleton => {
            if singleton_blocked {
                DependencyState::Waiting
            } else {
                DependencyState::Satisfied
            }
        }
        Item::Jobs(kind, jobs) => all(jobs.iter().map(|(job, task)| {
            let members: Vec<&Target> = targets
                .iter()
                .filter(|t| t.id == *job || t.array_job_id == Some(*job))
                .collect();
            let wanted_task = match (kind, task, own_task) {
                (_, Some(t), _) => Some(*t),
                (Kind::AfterCorr, None, Some(own)) => Some(own),
                _ => None,
            };
            match wanted_task {
                Some(t) => match members.iter().find(|m| m.array_task_id == Some(t)) {
                    Some(m) => judge(*kind, m),
                    // Not split off yet: the master still holds it, unless it is gone.
                    None => match members.iter().find(|m| m.id == *job) {
                        Some(master) => judge(*kind, master),
                        None if members.is_empty() => DependencyState::Satisfied,
                        None => DependencyState::Waiting,
                    },
                },
                None => all(members.iter().map(|m| judge(*kind, m))),
            }
        })),
    });
    if dep.any {
        let v: Vec<DependencyState> = verdicts.collect();
        if v.contains(&DependencyState::Satisfied) {
            DependencyState::Satisfied
        } else if v.iter().all(|s| *s == DependencyState::Never) {
            DependencyState::Never
        } else {
            DependencyState::Waiting
        }
    } else {
        all(verdicts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DependencyState::*;

    fn t(id: i64, array: Option<i64>, task: Option<u32>, state: &str) -> Target {
        Target {
            id,
            array_job_id: array,
            array_task_id: task,
            state: state.into(),
            has_pending_tasks: false,
        }
    }

    #[test]
    fn parses_and_and_or() {
        let d = parse("afterok:12:13_2,singleton").unwrap();
        assert!(!d.any && d.singleton());
        assert_eq!(d.job_ids(), vec![12, 13]);
        assert!(parse("afterany:1?afternotok:2").unwrap().any);
        assert!(parse("expand:3").is_err());
    }

    /// S4: afterok on an array waits for every task; one failure makes it never.
    #[test]
    fn afterok_on_an_array_means_all_tasks() {
        let d = parse("afterok:10").unwrap();
        let mut p = vec![
            t(11, Some(10), Some(0), "COMPLETED"),
            t(12, Some(10), Some(1), "RUNNING"),
            t(10, Some(10), Some(2), "COMPLETED"),
        ];
        assert_eq!(evaluate(&d, None, &p, false), Waiting);
        p[1].state = "COMPLETED".into();
        assert_eq!(evaluate(&d, None, &p, false), Satisfied);
        p[1].state = "FAILED".into();
        assert_eq!(evaluate(&d, None, &p, false), Never);
        // A master with tasks not yet started is not done.
        let master = Target {
            has_pending_tasks: true,
            ..t(10, Some(10), None, "PENDING")
        };
        assert_eq!(evaluate(&d, None, &[master], false), Waiting);
    }

    /// S4: aftercorr pairs task i with task i.
    #[test]
    fn aftercorr_pairs_tasks() {
        let d = parse("aftercorr:10").unwrap();
        let p = vec![
            t(11, Some(10), Some(0), "COMPLETED"),
            t(12, Some(10), Some(1), "FAILED"),
            Target {
                has_pending_tasks: true,
                ..t(10, Some(10), None, "PENDING")
            },
        ];
        assert_eq!(evaluate(&d, Some(0), &p, false), Satisfied);
        assert_eq!(evaluate(&d, Some(1), &p, false), Never);
        assert_eq!(evaluate(&d, Some(2), &p, false), Waiting);
    }

    #[test]
    fn after_afterany_afternotok_singleton_and_or() {
        let running = [t(5, None, None, "RUNNING")];
        let failed = [t(5, None, None, "FAILED")];
        let p = |s: &str| parse(s).unwrap();
        assert_eq!(evaluate(&p("after:5"), None, &running, false), Satisfied);
        assert_eq!(evaluate(&p("afterany:5"), None, &running, false), Waiting);
        assert_eq!(evaluate(&p("afterany:5"), None, &failed, false), Satisfied);
        assert_eq!(
            evaluate(&p("afternotok:5"), None, &failed, false),
            Satisfied
        );
        assert_eq!(evaluate(&p("afterok:5"), None, &failed, false), Never);
        assert_eq!(evaluate(&p("singleton"), None, &[], true), Waiting);
        assert_eq!(
            evaluate(&p("afterok:5?afternotok:5"), None, &failed, false),
            Satisfied
        );
        assert_eq!(
            evaluate(&p("afterok:5,afternotok:5"), None, &failed, false),
            Never
        );
        assert_eq!(evaluate(&p("afterok:99"), None, &[], false), Satisfied);
    }
}
