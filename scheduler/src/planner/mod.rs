//! The planner: a pure function from a snapshot of the cluster and the queue (with `now`
//! in it) to the jobs to start now, each on concrete nodes and GPU indices, reservations
//! (a planned start on concrete GPUs) for the highest blocked jobs, and a pending reason
//! with Slurm's name for every job it leaves waiting. No I/O, no clock.
//!
//! Passes:
//! 1. **priority**: every pending job gets Slurm's multifactor priority
//!    ([`berth_core::priority`]); the queue is ordered by it (ties: submit time, id), or
//!    by submit time alone under [`QueueOrder::Submit`];
//! 2. **eligibility**: held jobs (`JobHeldUser`/`JobHeldAdmin`), jobs whose `--begin` is
//!    ahead (`BeginTime`), whose dependencies wait (`Dependency`) or never can be met
//!    (`DependencyNeverSatisfied`), whose array is at its `%LIMIT`
//!    (`JobArrayTaskLimit`) or who ask more than their partition can ever give
//!    (`PartitionNodeLimit`, `ReqNodeNotAvail`) are passed over;
//! 3. **placement** on a timeline of every node's GPUs, CPUs and memory: running
//!    allocations hold theirs until start + time limit (at least until `now + 1`), jobs
//!    started in this pass likewise, reservations from their planned start to start +
//!    limit, and advance reservations ([`AdvanceReservation`]) over their windows against
//!    every job but their own. A job starts now when `nodes` distinct nodes can hold it
//!    over `[now, now + limit)` (its GPUs, its CPUs and memory per node beside what the
//!    overlapping intervals hold) without touching any of those intervals, choosing the
//!    nodes of lowest `Weight` first, then those with the fewest usable GPUs (best fit,
//!    ties by name), and the lowest free GPU indices of each; `-w` nodes are always among
//!    them and `-x` nodes never; a gang is placed whole or not at all. A job of an
//!    advance reservation runs only on its nodes and inside one of its windows (reason
//!    `Reservation` before it; `ReservationDeleted` when it is gone), anywhere and any
//!    time under `FLEX`; a blocked job with `--time-min` starts now with the longest
//!    shorter limit that fits;
//! 4. **backfill**: a job that cannot start now, among the first `backfill_depth` such
//!    jobs, gets a reservation at the earliest interval end where it fits. Because a
//!    later job may start now only where it touches no reservation, no backfilled job
//!    delays a reservation. A blocked job that would fit if it were not for a higher
//!    job's reservation waits with reason `Priority`, else `Resources`.
//!
//! 5. **preemption**: a blocked job (an array: its next task) whose QOS lists other QOS in its
//!    `preempt` list may preempt running jobs of those QOS (past their
//!    `preempt_exempt_time`; never of its own QOS, nor of a QOS that may preempt its own,
//!    so two QOS cannot preempt each other back and forth): the candidates are taken
//!    lowest QOS priority first, youngest first, until the job fits now, then any victim
//!    it fits without is dropped again, so the set is minimal. A job that would not fit
//!    even with every candidate gone preempts nothing. The GPUs it frees are held for the
//!    preemptor (a reservation from now), so no lower job takes them, and while victims
//!    of an earlier preemption for a job are still being stopped
//!    ([`PendingJob::preempting`]) that job preempts nothing more.
//!
//! **Limits**: before a job (an array: each task) is placed, the running jobs and the
//! starts of this pass are counted against its QOS's limits (`QOSMaxGRESPerUser`, ...)
//! and against the association limit `GrpTRES` of its account and of every ancestor
//! account ([`AccountLimits`]: all jobs charged to an account's subtree together;
//! `AssocGrpCpuLimit`, `AssocGrpGRES`, `AssocGrpNodeLimit`). A job a limit holds back
//! waits with that reason: it gets no reservation, preempts nothing and is not taken
//! for a shape that does not fit.
//!
//! Without backfill ([`PlannerConfig::backfill`] false, strict FIFO) nothing below the
//! first blocked job starts.

mod cache;
mod input;
mod limits;
mod memory;
mod output;
mod preempt;
mod timeline;

use cache::*;
pub use input::*;
use limits::*;
pub use output::*;
use preempt::*;
use timeline::*;

use berth_core::constraint::Constraint;
use berth_core::priority::{
    self, BillingWeights, PriorityFactors, PriorityInputs, PriorityWeights,
};
pub use berth_core::qos::PreemptMode;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Hashes a job id with one multiply (Fibonacci hashing) and a shift: sets of job ids are
/// probed for every interval a preemption weighs, where SipHash was most of the time. Job
/// ids are the database's sequence numbers, not input a user chooses.
#[derive(Debug, Default, Clone, Copy)]
struct JobIdHasher(u64);

impl std::hash::Hasher for JobIdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A set of job ids.
type JobIds = HashSet<i64, std::hash::BuildHasherDefault<JobIdHasher>>;

/// A map by job id.
type JobIdMap<V> = HashMap<i64, V, std::hash::BuildHasherDefault<JobIdHasher>>;

/// "Never": the end of an interval with no time limit.
pub const FOREVER: i64 = i64::MAX;

/// The priority of every job in the snapshot (the inputs that depend on the whole queue
/// — cluster GPUs, highest tier and QOS priority — come from the snapshot).
pub fn priorities(snapshot: &Snapshot, config: &PlannerConfig) -> HashMap<i64, PriorityFactors> {
    snapshot
        .pending
        .iter()
        .map(|j| j.id)
        .zip(pending_priorities(snapshot, config))
        .collect()
}

/// [`priorities`], in the order of `snapshot.pending`.
fn pending_priorities<'s>(
    snapshot: &'s Snapshot,
    config: &'s PlannerConfig,
) -> impl Iterator<Item = PriorityFactors> + 's {
    let cluster_gpus: u32 = snapshot.nodes.iter().map(|n| n.gpus.len() as u32).sum();
    let (max_tier, max_qos) = snapshot.pending.iter().fold(
        (snapshot.partition_tier_max, snapshot.qos_priority_max),
        |(tier, qos), j| (tier.max(j.partition_tier), qos.max(j.qos_priority)),
    );
    // A whole-node job (`--exclusive` without a GPU count) is sized by the largest node
    // of its partition, computed once per partition node list.
    let mut largest: HashMap<&[String], u32> = HashMap::new();
    for j in snapshot.pending.iter().filter(|j| j.whole_node) {
        largest
            .entry(j.partition_nodes.as_slice())
            .or_insert_with(|| {
                snapshot
                    .nodes
                    .iter()
                    .filter(|n| j.partition_nodes.is_empty() || j.partition_nodes.contains(&n.name))
                    .map(|n| n.gpus.len() as u32)
                    .max()
                    .unwrap_or(0)
            });
    }
    let node_gpus = move |j: &PendingJob| -> u32 {
        if j.whole_node {
            largest
                .get(j.partition_nodes.as_slice())
                .copied()
                .unwrap_or(0)
        } else {
            j.gpus_per_node
        }
    };
    snapshot.pending.iter().map(move |j| {
        let eligible = j.begin.map_or(j.submit_time, |b| b.max(j.submit_time));
        let inputs = PriorityInputs {
            age_seconds: snapshot.now - eligible,
            max_age_seconds: config.max_age,
            fairshare: j.fairshare,
            job_gpus: j.nodes.saturating_mul(node_gpus(j)),
            cluster_gpus,
            partition_tier: j.partition_tier,
            max_partition_tier: max_tier,
            qos_priority: j.qos_priority,
            max_qos_priority: max_qos,
            nice: j.nice,
            adjust: j.adjust,
        };
        priority::priority(&config.weights, &inputs)
    })
}

/// Plans the next starts. Deterministic: the same snapshot gives the same plan.
pub fn plan(snapshot: &Snapshot, config: &PlannerConfig) -> Plan {
    plan_with(snapshot, config, false)
}

/// [`plan`]; `reference` (tests) takes the plain, slow path everywhere: no caches, every
/// fit from the intervals, every placement by a full sort, every earliest start by trying
/// each time in turn.
fn plan_with(snapshot: &Snapshot, config: &PlannerConfig, reference: bool) -> Plan {
    let now = snapshot.now;
    // The queue: each job's sort key (its place in `pending` last, so that the unstable
    // sort keeps equal jobs in that order) with its priority, then the jobs.
    let mut keys: Vec<(i64, i64, i64, usize, i64)> = snapshot
        .pending
        .iter()
        .zip(pending_priorities(snapshot, config))
        .enumerate()
        .map(|(k, (j, f))| {
            let p = f.priority;
            match config.order {
                QueueOrder::Multifactor => (p.saturating_neg(), j.submit_time, j.id, k, p),
                QueueOrder::Submit => (0, j.submit_time, j.id, k, p),
            }
        })
        .collect();
    keys.sort_unstable();
    let order = keys
        .into_iter()
        .map(|(_, _, _, k, p)| (p, &snapshot.pending[k]));
    let mut timeline = Timeline::new(snapshot);
    timeline.reference = reference;
    if config.fit == NodeFit::Fragmentation {
        let (mut gpus, mut cpus, mut mem) = (0f64, 0f64, 0f64);
        for j in snapshot.pending.iter().filter(|j| j.gpus_per_node > 0) {
            gpus += f64::from(j.gpus_per_node);
            cpus += f64::from(j.cpus_per_node.max(1));
            mem += j.mem_per_node_mib.unwrap_or(0) as f64;
        }
        timeline.fragmentation = Some(if gpus > 0.0 {
            (cpus / gpus, mem / gpus)
        } else {
            (0.0, 0.0)
        });
    }
    let mut tally = Tally::new(&snapshot.accounts, &snapshot.qos_limits);
    for r in &snapshot.running_jobs {
        tally.add(&r.qos, &r.user, &r.account, r.cpus, r.gpus, r.nodes);
    }
    let no_limits = QosLimits::default();
    let mut out = Plan::default();
    out.pending.reserve(snapshot.pending.len());
    let mut reserved = 0usize;
    let mut fifo_blocked = false;
    let mut victims_taken = JobIds::default();
    let mut preemptions = Preemptions::default();
    // Each job shape seen → its number, with how many nodes its partition names (of the
    // snapshot's) and its candidate list once it has one; the shape is hashed once per
    // job, the rest looked up by number.
    let mut shapes: HashMap<Shape<'_>, usize> = HashMap::new();
    let mut shape_seen: Vec<(usize, Option<usize>)> = Vec::new();
    // Partition node list → how many nodes it names (for a new shape).
    let mut members_of: HashMap<&[String], usize> = HashMap::new();
    // What decides a job's candidate nodes → its list in `cand_lists` (for a new shape).
    let mut cand_index: HashMap<CandidateKey<'_>, usize> = HashMap::new();
    let mut cand_lists: Vec<Vec<(usize, u128)>> = Vec::new();
    // Per candidate list: its largest node's GPUs of the wanted type (what a whole-node
    // job's limits are checked against).
    let mut largest: Vec<u32> = Vec::new();
    let mut now_cache = NowCache::default();
    let mut first_able = FirstAble::default();
    for (priority, job) in order {
        macro_rules! wait {
            ($reason:expr, $expected:expr) => {
                out.pending.push(Waiting {
                    job_id: job.id,
                    reason: $reason.to_string(),
                    expected_start: $expected,
                    priority,
                })
            };
        }
        if let Some(held) = &job.held {
            wait!(held, None);
            continue;
        }
        if let Some(begin) = job.begin.filter(|b| *b > now) {
            wait!("BeginTime", Some(begin));
            continue;
        }
        match job.dependency {
            DependencyState::Satisfied => {}
            DependencyState::Waiting => {
                wait!("Dependency", None);
                continue;
            }
            DependencyState::Never => {
                wait!("DependencyNeverSatisfied", None);
                continue;
            }
        }
        if job
            .reservation
            .as_ref()
            .is_some_and(|r| !timeline.advance.contains_key(r))
        {
            wait!("ReservationDeleted", None);
            continue;
        }
        let limits = snapshot.qos_limits.get(&job.qos).unwrap_or(&no_limits);
        if job
            .partition_max_time
            .is_some_and(|m| job.time_limit.is_none_or(|t| t > m))
        {
            wait!("PartitionTimeLimit", None);
            continue;
        }
        if job.partition_max_nodes.is_some_and(|m| job.nodes > m) {
            wait!("PartitionNodeLimit", None);
            continue;
        }
        if limits
            .max_wall
            .is_some_and(|m| job.time_limit.is_none_or(|t| t > m))
        {
            wait!("QOSMaxWallDurationPerJobLimit", None);
            continue;
        }
        let shape_key = Shape::of(job);
        let shape = *shapes.entry(shape_key).or_insert_with(|| {
            let members = *members_of
                .entry(job.partition_nodes.as_slice())
                .or_insert_with(|| {
                    snapshot
                        .nodes
                        .iter()
                        .filter(|n| {
                            job.partition_nodes.is_empty() || job.partition_nodes.contains(&n.name)
                        })
                        .count()
                });
            shape_seen.push((members, None));
            shape_seen.len() - 1
        });
        let (members, seen_list) = shape_seen[shape];
        if job.nodes as usize > members {
            wait!("PartitionNodeLimit", None);
            continue;
        }
        let list = match seen_list.filter(|_| !reference) {
            Some(list) => list,
            None => {
                let next = cand_lists.len();
                let list = if reference {
                    next
                } else {
                    *cand_index.entry(shape_key.candidates).or_insert(next)
                };
                if list == next {
                    let cands = timeline.candidates(job);
                    if !reference {
                        timeline.index_list(&cands);
                    }
                    largest.push(cands.iter().map(|(_, m)| m.count_ones()).max().unwrap_or(0));
                    cand_lists.push(cands);
                }
                shape_seen[shape].1 = Some(list);
                list
            }
        };
        let cands = &cand_lists[list];
        if cands.len() < job.nodes as usize || job.nodes == 0 {
            wait!("ReqNodeNotAvail", None);
            continue;
        }
        if fifo_blocked {
            wait!("Priority", None);
            continue;
        }
        // Array tasks: start as many ready tasks as fit, within the throttle.
        let (tasks, room): (&[u32], u64) = match &job.array {
            Some(a) => (
                &a.ready,
                a.max_running
                    .map_or(u64::MAX, |m| u64::from(m.saturating_sub(a.running))),
            ),
            None => (&[0], 1),
        };
        if room == 0 {
            wait!("JobArrayTaskLimit", None);
            continue;
        }
        let mut started = 0u64;
        let mut blocked = false;
        let mut limited = None;
        // A whole-node job takes every GPU of the nodes it gets: its limits are checked
        // against the largest candidate nodes (it cannot take more), and charged with the
        // GPUs it is given.
        let gpus_needed = if job.whole_node {
            u64::from(job.nodes) * u64::from(largest[list])
        } else {
            u64::from(job.nodes.saturating_mul(job.gpus_per_node))
        };
        for &task in tasks.iter().take(room.min(tasks.len() as u64) as usize) {
            let task = job.array.as_ref().map(|_| task);
            if let Some(reason) = tally.blocks(job, limits, gpus_needed) {
                limited = Some(reason);
                break;
            }
            let placed = if timeline.window_open(job, now) {
                now_cache.place(&timeline, list, shape, cands, job)
            } else {
                None
            };
            match placed {
                Some(chosen) => {
                    timeline.hold(&chosen, job, now, false);
                    let placements = timeline.placements(&chosen, job);
                    let placed: usize = placements.iter().map(|p| p.gpus.len()).sum();
                    tally.add(
                        &job.qos,
                        &job.user,
                        &job.account,
                        job.cpus,
                        placed as u32,
                        job.nodes,
                    );
                    out.starts.push(Start {
                        job_id: job.id,
                        array_task_id: task,
                        placements,
                        exclusive: job.exclusive || job.whole_node,
                        priority,
                        time_limit: None,
                    });
                    started += 1;
                }
                None => {
                    blocked = true;
                    break;
                }
            }
        }
        if let Some(a) = &job.array {
            if started >= a.remaining {
                continue;
            }
        }
        if let Some(reason) = limited {
            wait!(reason, None);
            continue;
        }
        if job.array.is_some() {
            if !blocked {
                if started >= room {
                    wait!("JobArrayTaskLimit", None);
                } else {
                    wait!("Dependency", None);
                }
                continue;
            }
        } else if started == 1 {
            continue;
        }
        // Blocked: with a `--time-min`, start it now with a shorter limit where one fits
        // (never over a reservation, so no higher job is delayed).
        if job.array.is_none() && config.backfill && !fifo_blocked {
            if let Some((limit, chosen)) = timeline.shortened(cands, job) {
                let shorter = PendingJob {
                    time_limit: Some(limit),
                    ..job.clone()
                };
                timeline.hold(&chosen, &shorter, now, false);
                let placements = timeline.placements(&chosen, job);
                let placed: usize = placements.iter().map(|p| p.gpus.len()).sum();
                tally.add(
                    &job.qos,
                    &job.user,
                    &job.account,
                    job.cpus,
                    placed as u32,
                    job.nodes,
                );
                out.starts.push(Start {
                    job_id: job.id,
                    array_task_id: None,
                    placements,
                    exclusive: job.exclusive || job.whole_node,
                    priority,
                    time_limit: Some(limit),
                });
                continue;
            }
        }
        // Blocked: preempt for it when its QOS may, holding what the victims free (for an
        // array, what its next task needs). Jobs of an advance reservation preempt
        // nothing.
        if !job.preempting && job.reservation.is_none() {
            let weighed = if reference || timeline.special(job) {
                preemption_for(snapshot, &mut timeline, cands, job, &victims_taken)
            } else {
                preemptions.weigh(snapshot, &mut timeline, shape, cands, job, &victims_taken)
            };
            if let Some((victims, chosen)) = weighed {
                let grace = victims.iter().map(|v| v.grace_time).max().unwrap_or(0);
                let end = timeline.hold(&chosen, job, now, true);
                out.reservations.push(Reservation {
                    job_id: job.id,
                    start: now + grace,
                    end,
                    placements: timeline.placements(&chosen, job),
                });
                victims_taken.extend(victims.iter().map(|v| v.victim));
                out.preemptions.extend(victims);
                wait!("Resources", Some(now + grace));
                continue;
            }
        }
        // Blocked: reserve its earliest start, within the backfill depth.
        if !config.backfill {
            fifo_blocked = true;
            wait!("Resources", None);
            continue;
        }
        let closed = !timeline.window_open(job, now);
        let reason = if closed {
            "Reservation"
        } else if now_cache.fits_ignoring_reservations(&timeline, shape, cands, job) {
            "Priority"
        } else {
            "Resources"
        };
        let flex = job
            .reservation
            .as_ref()
            .and_then(|r| timeline.advance.get(r))
            .is_none_or(|a| a.flex);
        let mut expected = None;
        if reserved < config.backfill_depth || job.preempting {
            let earliest = if flex {
                first_able.earliest(&timeline, list, cands, job)
            } else {
                timeline.earliest_in_windows(cands, job)
            };
            if let Some((t, chosen)) = earliest {
                let end = timeline.hold(&chosen, job, t, true);
                out.reservations.push(Reservation {
                    job_id: job.id,
                    start: t,
                    end,
                    placements: timeline.placements(&chosen, job),
                });
                reserved += 1;
                expected = Some(t);
            }
        }
        wait!(reason, expected);
    }
    out
}

/// Sort key of a host name: its text before the trailing digits, then their value
/// (`node-2` before `node-10`).
fn host_sort_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = name.split_at(name.len() - digits);
    (
        head.to_string(),
        tail.parse().unwrap_or(0),
        name.to_string(),
    )
}

#[cfg(test)]
mod tests;
