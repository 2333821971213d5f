//! Preemption: which running jobs a blocked job may stop to start now.

use super::*;

/// The running jobs `job` may preempt to start now, and where it would then run; `None`
/// when its QOS preempts nothing, or not even every candidate would make room. The plain
/// way (tests): every step a full placement; [`Preemptions::weigh`] decides the same.
pub(super) fn preemption_for(
    snapshot: &Snapshot,
    timeline: &mut Timeline<'_>,
    cands: &[(usize, u128)],
    job: &PendingJob,
    taken: &JobIds,
) -> Option<(Vec<Preemption>, Chosen)> {
    let mine = snapshot.qos_preemption.get(&job.qos)?;
    if mine.preempt.is_empty() {
        return None;
    }
    let none = QosPreemption::default();
    let setting = |qos: &str| snapshot.qos_preemption.get(qos).unwrap_or(&none);
    let mut candidates: Vec<&RunningJob> = snapshot
        .running_jobs
        .iter()
        .filter(|r| {
            r.qos != job.qos
                && mine.preempt.contains(&r.qos)
                && !setting(&r.qos).preempt.contains(&job.qos)
                && !taken.contains(&r.job_id)
                && snapshot.now >= r.start.saturating_add(setting(&r.qos).exempt_time)
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    candidates.sort_by_key(|r| (setting(&r.qos).priority, -r.start, -r.job_id));
    let now = snapshot.now;
    let mut chosen: Vec<i64> = Vec::new();
    let mut fits = false;
    for r in &candidates {
        chosen.push(r.job_id);
        timeline.ignoring.insert(r.job_id);
        if timeline.place(cands, job, now, true, true).is_some() {
            fits = true;
            break;
        }
    }
    if !fits {
        timeline.ignoring.clear();
        return None;
    }
    // Keep only the victims it cannot fit without, the most valuable looked at first.
    for id in chosen.clone().into_iter().rev() {
        timeline.ignoring.remove(&id);
        if timeline.place(cands, job, now, true, true).is_some() {
            chosen.retain(|c| *c != id);
        } else {
            timeline.ignoring.insert(id);
        }
    }
    let placement = timeline.place(cands, job, now, true, true);
    timeline.ignoring.clear();
    let placement = placement?;
    let victims = chosen
        .into_iter()
        .map(|victim| {
            let qos = candidates
                .iter()
                .find(|r| r.job_id == victim)
                .map_or("", |r| r.qos.as_str());
            Preemption {
                victim,
                preemptor: job.id,
                mode: setting(qos).mode,
                grace_time: setting(qos).grace_time,
            }
        })
        .collect();
    Some((victims, placement))
}

/// What a pass keeps to weigh preemptions quickly: [`preemption_for`] with each preempting
/// QOS's candidate victims listed and ordered once, the nodes of each running job, the
/// shapes that found no room, and a count of the candidate nodes the job fits on that is
/// brought up to date for a victim's nodes only, instead of a placement over every node
/// at each step.
///
/// A failure is remembered like [`NowCache`]'s: within a pass the candidates only shrink
/// (victims taken) and the timeline only gains intervals, so a job of a shape and QOS that
/// found no room with a window ending at `e` finds none with a window ending at or after
/// `e`.
#[derive(Debug, Default)]
pub(super) struct Preemptions<'a> {
    /// Preempting QOS → (how many victims were taken when it was last filtered, its
    /// candidates in the order they are tried; those taken since are passed over).
    pub(super) candidates: HashMap<&'a str, (usize, Vec<&'a RunningJob>)>,
    /// Running job → its nodes (timeline index); built at the first weighing.
    pub(super) nodes_of: Option<JobIdMap<Vec<usize>>>,
    /// (shape number, QOS) → the earliest window end with which it found no room.
    pub(super) no_room: HashMap<(usize, &'a str), i64>,
}

impl<'a> Preemptions<'a> {
    /// [`preemption_for`] for a job of the shape numbered `shape` (candidate nodes
    /// `cands`).
    pub(super) fn weigh(
        &mut self,
        snapshot: &'a Snapshot,
        timeline: &mut Timeline<'_>,
        shape: usize,
        cands: &[(usize, u128)],
        job: &'a PendingJob,
        taken: &JobIds,
    ) -> Option<(Vec<Preemption>, Chosen)> {
        let mine = snapshot.qos_preemption.get(&job.qos)?;
        if mine.preempt.is_empty() {
            return None;
        }
        let now = snapshot.now;
        let end = now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        let room_key = (shape, job.qos.as_str());
        if self.no_room.get(&room_key).is_some_and(|e| end >= *e) {
            return None;
        }
        let none = QosPreemption::default();
        let setting = |qos: &str| snapshot.qos_preemption.get(qos).unwrap_or(&none);
        let (filtered, candidates) = self.candidates.entry(job.qos.as_str()).or_insert_with(|| {
            let mut candidates: Vec<&RunningJob> = snapshot
                .running_jobs
                .iter()
                .filter(|r| {
                    r.qos != job.qos
                        && mine.preempt.contains(&r.qos)
                        && !setting(&r.qos).preempt.contains(&job.qos)
                        && now >= r.start.saturating_add(setting(&r.qos).exempt_time)
                })
                .collect();
            candidates.sort_by_key(|r| (setting(&r.qos).priority, -r.start, -r.job_id));
            (0, candidates)
        });
        if taken.len() >= *filtered + 64 {
            candidates.retain(|r| !taken.contains(&r.job_id));
            *filtered = taken.len();
        }
        let nodes_of = self.nodes_of.get_or_insert_with(|| {
            let index: HashMap<i64, usize> = snapshot
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id, i))
                .collect();
            let mut nodes_of: JobIdMap<Vec<usize>> = JobIdMap::default();
            for a in &snapshot.running {
                if let Some(&i) = index.get(&a.node_id) {
                    nodes_of.entry(a.job_id).or_default().push(i);
                }
            }
            nodes_of
        });
        // The job's fit on each candidate node now (reservations counted) with the victims
        // so far ignored, and on how many it fits: it fits when `want` of them do.
        let want = job.nodes as usize;
        let mut typed_of: Vec<Option<u128>> = vec![None; timeline.nodes.len()];
        let mut fitting: Vec<Option<(Key, u128)>> = vec![None; timeline.nodes.len()];
        let mut count = 0usize;
        for &(i, typed) in cands {
            typed_of[i] = Some(typed);
            fitting[i] = timeline.fit(i, typed, job, now, end, true);
            count += usize::from(fitting[i].is_some());
        }
        // Weighs the victim's nodes again after it was ignored or counted again (`back`):
        // a victim counted again makes no node fit that did not, so one on no fitting node
        // changes nothing.
        let mut refit = |timeline: &Timeline<'_>, victim: i64, back: bool| {
            let nodes = nodes_of.get(&victim).map_or(&[][..], Vec::as_slice);
            if back && nodes.iter().all(|i| fitting[*i].is_none()) {
                return count >= want;
            }
            for &i in nodes {
                let Some(typed) = typed_of[i] else { continue };
                let fit = timeline.fit(i, typed, job, now, end, true);
                count = count + usize::from(fit.is_some()) - usize::from(fitting[i].is_some());
                fitting[i] = fit;
            }
            count >= want
        };
        let mut chosen: Vec<&RunningJob> = Vec::new();
        let mut fits = false;
        for r in candidates.iter() {
            if taken.contains(&r.job_id) {
                continue;
            }
            chosen.push(r);
            timeline.ignoring.insert(r.job_id);
            if refit(timeline, r.job_id, false) {
                fits = true;
                break;
            }
        }
        if !fits {
            timeline.ignoring.clear();
            let e = self.no_room.entry(room_key).or_insert(end);
            *e = (*e).min(end);
            return None;
        }
        // Keep only the victims it cannot fit without, the most valuable looked at first.
        let mut kept = vec![true; chosen.len()];
        for (k, r) in chosen.iter().enumerate().rev() {
            timeline.ignoring.remove(&r.job_id);
            if refit(timeline, r.job_id, true) {
                kept[k] = false;
            } else {
                timeline.ignoring.insert(r.job_id);
                refit(timeline, r.job_id, false);
            }
        }
        timeline.ignoring.clear();
        // [`Timeline::place`]'s choice (best fit first, then name) among the fits.
        let mut best: Vec<(Key, u32, usize, u128)> = cands
            .iter()
            .filter_map(|&(i, _)| {
                let (usable, mask) = fitting[i]?;
                Some((usable, timeline.rank[i], i, mask))
            })
            .collect();
        best.sort_unstable();
        let placement: Chosen = best
            .into_iter()
            .take(want)
            .map(|(_, _, i, mask)| (i, mask))
            .collect();
        debug_assert_eq!(placement.len(), want);
        let victims = chosen
            .iter()
            .zip(kept)
            .filter(|(_, kept)| *kept)
            .map(|(r, _)| Preemption {
                victim: r.job_id,
                preemptor: job.id,
                mode: setting(&r.qos).mode,
                grace_time: setting(&r.qos).grace_time,
            })
            .collect();
        Some((victims, placement))
    }
}
