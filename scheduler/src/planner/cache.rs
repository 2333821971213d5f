//! What one pass learns about placements at `now` (shapes that did not fit, the
//! first time each node can hold a job of a kind), so that many alike jobs are not
//! each fitted against every node.

use super::*;

/// Nodes (timeline index) and GPU masks chosen for a job.
pub(super) type Chosen = Vec<(usize, u128)>;

/// Everything [`Timeline::candidates`] reads of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct CandidateKey<'a> {
    pub(super) partition_nodes: &'a [String],
    pub(super) constraint: Option<&'a str>,
    pub(super) gpu_type: Option<&'a str>,
    pub(super) shards: bool,
    pub(super) whole_node: bool,
    pub(super) gpus_per_node: u32,
    /// Nodes wanted, where `-w` names nodes (0 otherwise).
    pub(super) nodes: u32,
    pub(super) nodelist: &'a [String],
    pub(super) exclude: &'a [String],
    pub(super) reservation: Option<&'a str>,
}

/// Everything a placement at `now` reads of a job besides its candidate nodes and its
/// time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Shape<'a> {
    pub(super) candidates: CandidateKey<'a>,
    pub(super) exclusive: bool,
    pub(super) nodes: u32,
    pub(super) cpus_per_node: u32,
    pub(super) threads_per_core: Option<u32>,
    pub(super) mem_per_node_mib: Option<u64>,
}

impl<'a> Shape<'a> {
    pub(super) fn of(job: &'a PendingJob) -> Self {
        Shape {
            candidates: CandidateKey {
                partition_nodes: &job.partition_nodes,
                constraint: job.constraint.as_deref(),
                gpu_type: job.gpu_type.as_deref(),
                shards: job.shards,
                whole_node: job.whole_node,
                gpus_per_node: job.gpus_per_node,
                nodes: if job.nodelist.is_empty() {
                    0
                } else {
                    job.nodes
                },
                nodelist: &job.nodelist,
                exclude: &job.exclude,
                reservation: job.reservation.as_deref(),
            },
            exclusive: job.exclusive,
            nodes: job.nodes,
            cpus_per_node: job.cpus_per_node,
            threads_per_core: job.threads_per_core,
            mem_per_node_mib: job.mem_per_node_mib,
        }
    }
}

/// What one pass has learnt about placements at `now`, so that the many jobs of one
/// shape that cannot start are not each fitted against every node (as Slurm's backfill
/// skips a job identical to one that did not fit).
///
/// Sound because within a pass the timeline only gains intervals (starts, reservations
/// and the holds of preemptions; a preemption's victims keep theirs), so every node's
/// fit at `now` only gets worse, and because a longer time limit only overlaps more: a
/// shape that did not fit with a window ending at `e` does not fit with any window
/// ending at or after `e`, for the rest of the pass. Placements weighing a preemption
/// (with intervals ignored) never go through here.
#[derive(Debug, Default)]
pub(super) struct NowCache {
    /// Per shape (its number in the pass): the earliest window end with which it did not
    /// fit now, reservations counted.
    pub(super) no_fit: Vec<Option<i64>>,
    /// The same with reservations ignored.
    pub(super) no_fit_ignoring: Vec<Option<i64>>,
    /// Per shape: nodes on which it last fitted now, reservations ignored: when they all
    /// still fit, it still does.
    pub(super) fit_ignoring: Vec<Option<Chosen>>,
}

/// Lowers a shape's "did not fit with a window ending at `end`".
pub(super) fn note_no_fit(slots: &mut Vec<Option<i64>>, shape: usize, end: i64) {
    if slots.len() <= shape {
        slots.resize(shape + 1, None);
    }
    let e = slots[shape].get_or_insert(end);
    *e = (*e).min(end);
}

impl NowCache {
    /// [`Timeline::place`] now, reservations counted, best fit first, for a job of the
    /// shape numbered `shape` (every job of it has the candidate list `list`).
    pub(super) fn place(
        &mut self,
        timeline: &Timeline<'_>,
        list: usize,
        shape: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<Chosen> {
        let end = timeline
            .now
            .saturating_add(job.time_limit.unwrap_or(FOREVER));
        if timeline.reference {
            return timeline.place(cands, job, timeline.now, true, true);
        }
        if self
            .no_fit
            .get(shape)
            .copied()
            .flatten()
            .is_some_and(|e| end >= e)
        {
            return None;
        }
        let placed = timeline.place_now(list, cands, job);
        if placed.is_none() {
            note_no_fit(&mut self.no_fit, shape, end);
        }
        placed
    }

    /// Whether the job (of the shape numbered `shape`) would fit now if it were not for
    /// reservations.
    pub(super) fn fits_ignoring_reservations(
        &mut self,
        timeline: &Timeline<'_>,
        shape: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> bool {
        let now = timeline.now;
        let end = now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        if timeline.reference {
            return timeline.place(cands, job, now, false, true).is_some();
        }
        if self
            .no_fit_ignoring
            .get(shape)
            .copied()
            .flatten()
            .is_some_and(|e| end >= e)
        {
            return false;
        }
        if let Some(Some(nodes)) = self.fit_ignoring.get(shape) {
            if nodes
                .iter()
                .all(|(i, typed)| timeline.fit(*i, *typed, job, now, end, false).is_some())
            {
                return true;
            }
        }
        match timeline.fits_now_ignoring_reservations(cands, job) {
            Some(nodes) => {
                if self.fit_ignoring.len() <= shape {
                    self.fit_ignoring.resize(shape + 1, None);
                }
                self.fit_ignoring[shape] = Some(nodes);
                true
            }
            None => {
                note_no_fit(&mut self.no_fit_ignoring, shape, end);
                false
            }
        }
    }
}

/// The earliest starts of a pass's reservations, kept per candidate list and fit (what
/// [`Timeline::fit_mask`] reads of a job: exclusive, whole node, GPUs per node) across
/// the pass: each node's first able time ([`Timeline::first_able`]) for the nodes that are
/// not `slow`, brought up to date for the nodes that gained an interval since, so that a
/// reservation weighs the few `slow` nodes one by one and reads the others' times instead
/// of sweeping every node's intervals.
#[derive(Debug, Default)]
pub(super) struct FirstAble {
    /// (candidate list, exclusive, whole node, GPUs per node, CPUs per node, memory per
    /// node) → its first able times.
    pub(super) lists: HashMap<FitKey, FirstAbleTimes>,
}

/// What a fit reads of a job besides its candidate list: (list, exclusive, whole node, GPUs
/// per node, CPUs per node, memory per node).
pub(super) type FitKey = (usize, bool, bool, u32, u32, Option<u32>, Option<u64>);

/// One candidate list's first able times for one fit.
#[derive(Debug)]
pub(super) struct FirstAbleTimes {
    /// How much of [`Timeline::changed`] they have caught up on.
    pub(super) synced: usize,
    /// Per node: its first able time; [`FOREVER`] for never, for a `slow` node and for a
    /// node not in the list.
    pub(super) first: Vec<i64>,
}

impl FirstAble {
    /// The job's earliest start on the candidate list `list` (`cands`): the first of `now`
    /// and the interval ends after it at which [`Timeline::place`] (reservations counted,
    /// fixed node order) finds room, with that placement; the same as
    /// [`Timeline::earliest_scan`].
    pub(super) fn earliest(
        &mut self,
        timeline: &Timeline<'_>,
        list: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<(i64, Chosen)> {
        let now = timeline.now;
        let want = job.nodes as usize;
        let limit = job.time_limit.unwrap_or(FOREVER);
        if timeline.reference
            || now == FOREVER
            || limit < 1
            || want == 0
            || cands.len() < want
            || !timeline.ignoring.is_empty()
            || timeline.special(job)
        {
            return timeline.earliest_scan(cands, job, now);
        }
        let typed_in = |i: usize| {
            timeline.indexed_in[i]
                .iter()
                .find(|(k, _)| *k == list)
                .map(|(_, typed)| *typed)
        };
        let FirstAbleTimes { synced, first } = self
            .lists
            .entry((
                list,
                job.exclusive,
                job.whole_node,
                job.gpus_per_node,
                job.cpus_per_node,
                job.threads_per_core,
                job.mem_per_node_mib,
            ))
            .or_insert_with(|| {
                let mut first = vec![FOREVER; timeline.nodes.len()];
                for &(i, typed) in cands {
                    if !timeline.slow[i] {
                        first[i] = timeline.first_able(i, typed, job);
                    }
                }
                FirstAbleTimes {
                    synced: timeline.changed.len(),
                    first,
                }
            });
        for &i in &timeline.changed[*synced..] {
            if let Some(typed) = typed_in(i) {
                first[i] = if timeline.slow[i] {
                    FOREVER
                } else {
                    timeline.first_able(i, typed, job)
                };
            }
        }
        *synced = timeline.changed.len();
        // By the `want`-th first able time of the nodes that are not slow, `want` nodes can
        // hold the job (those never stop being able), so the start is no later.
        let mut soonest: std::collections::BinaryHeap<i64> =
            std::collections::BinaryHeap::with_capacity(want + 1);
        for &f in first.iter().filter(|f| **f != FOREVER) {
            if soonest.len() < want {
                soonest.push(f);
            } else if soonest.peek().is_some_and(|worst| f < *worst) {
                soonest.pop();
                soonest.push(f);
            }
        }
        let bound = if soonest.len() == want {
            soonest.peek().copied().unwrap_or(FOREVER)
        } else {
            FOREVER
        };
        // (time, +1 a node becomes able, -1 it stops being able)
        let mut events: Vec<(i64, i32)> = first
            .iter()
            .filter(|f| **f != FOREVER && **f <= bound)
            .map(|f| (*f, 1))
            .collect();
        let slow = &timeline.indexes[list].slow;
        for &(i, typed) in slow {
            timeline.able_changes(i, typed, job, bound, &mut events);
        }
        events.sort_unstable();
        let mut able = 0i64;
        let mut k = 0;
        while k < events.len() {
            let t = events[k].0;
            while k < events.len() && events[k].0 == t {
                able += i64::from(events[k].1);
                k += 1;
            }
            if able < want as i64 {
                continue;
            }
            // The nodes able at `t` in [`Timeline::place`]'s fixed order: fewest GPUs of
            // the wanted type, then name.
            let end = t.saturating_add(limit);
            let mut fits: Vec<(Key, u32, usize, u128)> = Vec::new();
            let able_at = first
                .iter()
                .enumerate()
                .filter(|(_, f)| **f <= t)
                .filter_map(|(i, _)| Some((i, typed_in(i)?)))
                .chain(slow.iter().copied());
            for (i, typed) in able_at {
                if let Some((_, chosen)) = timeline.fit(i, typed, job, t, end, true) {
                    let weight = timeline.nodes[i].weight;
                    fits.push((key(weight, typed.count_ones()), timeline.rank[i], i, chosen));
                }
            }
            debug_assert!(fits.len() >= want, "earliest: no room at {t} after all");
            if fits.len() < want {
                return timeline.earliest_scan(cands, job, now);
            }
            fits.sort_unstable();
            return Some((
                t,
                fits.into_iter()
                    .take(want)
                    .map(|(_, _, i, m)| (i, m))
                    .collect(),
            ));
        }
        None
    }
}
