//! The timeline of every node's GPUs, CPUs and memory that placements are fitted on:
//! intervals held by running jobs, starts, reservations and advance reservations.

use super::*;

/// What the intervals overlapping a window hold of a node: the union of their GPU masks,
/// whether there is one at all, and the sums of their CPUs and memory (MiB). Summing
/// every interval that overlaps the window, whether or not they overlap each other, is
/// conservative, as the union of masks is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Held {
    pub(super) busy: u128,
    pub(super) any: bool,
    pub(super) cpus: u64,
    pub(super) mem: u64,
}

/// Folds into `held` the `intervals` that overlap `[t, end)` (reservations only with
/// `res`; none that `skip` names); `None` when one of them holds the node exclusively.
#[inline]
pub(super) fn overlapping<'i>(
    intervals: impl IntoIterator<Item = &'i Interval>,
    held: Held,
    t: i64,
    end: i64,
    res: bool,
    skip: impl Fn(&Interval) -> bool,
) -> Option<Held> {
    let mut held = held;
    for iv in intervals {
        if (iv.reservation && !res) || skip(iv) {
            continue;
        }
        if iv.start < end && t < iv.end {
            if iv.exclusive {
                return None;
            }
            held.busy |= iv.mask;
            held.any = true;
            held.cpus += u64::from(iv.cpus);
            held.mem += iv.mem;
        }
    }
    Some(held)
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Interval {
    /// The job (an advance reservation's window: a negative id, see
    /// [`Timeline::advance`]).
    pub(super) job: i64,
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) mask: u128,
    /// CPUs held.
    pub(super) cpus: u32,
    /// Memory held, MiB.
    pub(super) mem: u64,
    pub(super) exclusive: bool,
    pub(super) reservation: bool,
}

/// A node's place in placement order: its `Weight` in the high half (lower weights are
/// filled first), then what the placement weighs (usable GPUs for best fit, or GPUs of
/// the wanted type for a reservation's fixed order).
pub(super) type Key = u64;

pub(super) fn key(weight: u32, count: u32) -> Key {
    (u64::from(weight) << 32) | u64::from(count)
}

/// What a job needs of node `node` (CPUs, memory MiB): its CPUs as whole cores of the
/// node ([`berth_core::cores::cpus_held`]: with its threads per core, `--hint`); `--exclusive`
/// and whole-node jobs take all of it; memory as [`memory::memory_on`] gives it
/// (`--mem=0`: all of it; not asked for: the node's memory in proportion to the CPUs).
/// `None` when the node can never give it (a count of 0 on the node is not counted).
pub(super) fn need(job: &PendingJob, node: &NodeView) -> Option<(u32, u64)> {
    let cpus = berth_core::cores::cpus_held(
        job.cpus_per_node.max(1),
        node.threads_per_core,
        job.threads_per_core,
    );
    if node.cpus > 0 && cpus > node.cpus {
        return None;
    }
    let mem = memory::memory_on(job, node, cpus);
    if node.memory_mib > 0 && mem > node.memory_mib {
        return None;
    }
    if job.exclusive || job.whole_node {
        return Some((node.cpus.max(cpus), node.memory_mib.max(mem)));
    }
    Some((cpus, mem))
}

/// Whether a `--constraint` is more than a property of each node (a count `a*2` or a
/// matching OR `[a|b]`): its placements are chosen by [`Constraint::choose`].
pub(super) fn constraint_spans_nodes(constraint: Option<&str>) -> bool {
    constraint.is_some_and(|c| c.contains(['*', '[']))
}

pub(super) fn lowest_bits(mask: u128, n: u32) -> u128 {
    let mut out = 0u128;
    let mut m = mask;
    for _ in 0..n {
        let bit = m & m.wrapping_neg();
        out |= bit;
        m &= !bit;
    }
    out
}

/// `n` of the `usable` GPUs of a node whose GPUs fall in topology `domains` (masks; empty
/// when unknown): within the one domain that holds them with the fewest usable GPUs to
/// spare (best fit, so bigger groups stay whole for bigger jobs), else from the domains
/// with the most usable GPUs first (as few domains as possible); lowest indices within a
/// domain. Without domains, the `n` lowest. `usable` must hold at least `n`.
pub(super) fn pick_gpus(usable: u128, n: u32, domains: &[u128]) -> u128 {
    if domains.is_empty() {
        return lowest_bits(usable, n);
    }
    let best = domains
        .iter()
        .map(|d| usable & d)
        .filter(|free| free.count_ones() >= n)
        .min_by_key(|free| free.count_ones());
    if let Some(free) = best {
        return lowest_bits(free, n);
    }
    let mut order: Vec<u128> = domains.iter().map(|d| usable & d).collect();
    // Most usable first; ties keep domain order (stable sort).
    order.sort_by_key(|free| std::cmp::Reverse(free.count_ones()));
    let mut chosen = 0u128;
    let mut left = n;
    for free in order {
        let take = free.count_ones().min(left);
        chosen |= lowest_bits(free, take);
        left -= take;
        if left == 0 {
            break;
        }
    }
    // GPUs outside every listed domain (a partial report) come last.
    if left > 0 {
        chosen |= lowest_bits(usable & !chosen, left);
    }
    chosen
}

/// A candidate list's nodes by what they can give at `now`, kept as intervals are
/// added. Buckets are keyed by (weight, GPU count) ([`Key`]); within one, nodes are in
/// rank order.
#[derive(Debug, Default)]
pub(super) struct NowIndex {
    /// Nodes without reservations and without an exclusive hold now, by weight and free
    /// GPUs of the wanted type: (rank, node, wanted GPUs).
    pub(super) free: BTreeMap<Key, BTreeSet<(u32, usize, u128)>>,
    /// Nodes without reservations with nothing held now, by weight and GPUs of the
    /// wanted type.
    pub(super) idle: BTreeMap<Key, BTreeSet<(u32, usize, u128)>>,
    /// Nodes with a reservation (or an interval starting later): weighed one by one.
    pub(super) slow: Vec<(usize, u128)>,
}

/// An advance reservation as the timeline keeps it.
#[derive(Debug, Default)]
pub(super) struct AdvanceWindows {
    /// Its windows' interval ids.
    pub(super) ids: Vec<i64>,
    /// Its windows (start, end), in snapshot order.
    pub(super) windows: Vec<(i64, i64)>,
    /// Its nodes (timeline index), sorted.
    pub(super) nodes: Vec<usize>,
    /// `FLEX`.
    pub(super) flex: bool,
}

pub(super) struct Timeline<'a> {
    pub(super) nodes: &'a [NodeView],
    pub(super) intervals: Vec<Vec<Interval>>,
    pub(super) ends: BTreeSet<i64>,
    /// Jobs whose intervals [`Timeline::fit`] passes over (candidate victims of a
    /// preemption being weighed).
    pub(super) ignoring: JobIds,
    /// The snapshot's `now`.
    pub(super) now: i64,
    /// Per node, what its intervals hold over `now` when it has no other kind (see
    /// `slow`): the union of their masks, whether there is one at all, whether one is
    /// exclusive. Kept as intervals are added, so a fit at `now` reads three words
    /// instead of every interval.
    pub(super) now_busy: Vec<u128>,
    pub(super) now_any: Vec<bool>,
    pub(super) now_exclusive: Vec<bool>,
    /// Per node, the CPUs and memory (MiB) its `now_*` intervals hold.
    pub(super) now_cpus: Vec<u64>,
    pub(super) now_mem: Vec<u64>,
    /// Per node: the intervals the `now_*` summary does not describe (reservations,
    /// intervals starting after `now`), and the union of their masks.
    pub(super) later: Vec<Vec<Interval>>,
    pub(super) later_busy: Vec<u128>,
    /// Per node: it has an interval the `now_*` summary does not describe (a
    /// reservation, or one starting after `now`): fits on it at `now` also weigh its
    /// `later` intervals, and at other times scan all of them.
    pub(super) slow: Vec<bool>,
    /// Per node: its position in (weight, name) order (ties by index), the tie-break of
    /// [`Timeline::place`].
    pub(super) rank: Vec<u32>,
    /// Per advance reservation name: the ids of its windows' intervals (negative), its
    /// nodes, and whether it is `FLEX`.
    pub(super) advance: HashMap<String, AdvanceWindows>,
    /// [`NodeFit::Fragmentation`]: the queue's mean CPUs and memory (MiB) per GPU.
    pub(super) fragmentation: Option<(f64, f64)>,
    /// The pending jobs' `--constraint`s, parsed once (`None`: one that does not parse,
    /// which no node matches; the api refuses those at submission).
    pub(super) constraints: HashMap<&'a str, Option<Constraint>>,
    /// Per candidate list of the pass (same numbering), its nodes by what they can give
    /// at `now`.
    pub(super) indexes: Vec<NowIndex>,
    /// Per node: the indexes it is in, with its GPUs of each list's wanted type.
    pub(super) indexed_in: Vec<Vec<(usize, u128)>>,
    /// Per node: its GPUs by topology domain (masks, in domain order); empty when it
    /// reports fewer than two domains.
    pub(super) domains: Vec<Vec<u128>>,
    /// Per node: the mask of its devices that are GPU shards.
    pub(super) shard_mask: Vec<u128>,
    /// The node of every interval added, in order (what [`FirstAble`] catches up on).
    pub(super) changed: Vec<usize>,
    /// Tests only: every fit scans intervals, every placement sorts all fits, and every
    /// earliest start tries every interval end ([`Timeline::earliest_scan`]: the plain
    /// algorithms the fast ones must agree with).
    pub(super) reference: bool,
}

impl<'a> Timeline<'a> {
    pub(super) fn new(snapshot: &'a Snapshot) -> Self {
        let index: HashMap<i64, usize> = snapshot
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id, i))
            .collect();
        let mut t = Timeline {
            nodes: &snapshot.nodes,
            intervals: vec![Vec::new(); snapshot.nodes.len()],
            ends: BTreeSet::new(),
            ignoring: JobIds::default(),
            now: snapshot.now,
            now_busy: vec![0; snapshot.nodes.len()],
            now_any: vec![false; snapshot.nodes.len()],
            now_exclusive: vec![false; snapshot.nodes.len()],
            now_cpus: vec![0; snapshot.nodes.len()],
            now_mem: vec![0; snapshot.nodes.len()],
            advance: HashMap::new(),
            fragmentation: None,
            constraints: snapshot
                .pending
                .iter()
                .filter_map(|j| j.constraint.as_deref())
                .map(|c| (c, Constraint::parse(c).ok()))
                .collect(),
            later: vec![Vec::new(); snapshot.nodes.len()],
            later_busy: vec![0; snapshot.nodes.len()],
            slow: vec![false; snapshot.nodes.len()],
            rank: vec![0; snapshot.nodes.len()],
            reference: false,
            indexes: Vec::new(),
            indexed_in: vec![Vec::new(); snapshot.nodes.len()],
            domains: vec![Vec::new(); snapshot.nodes.len()],
            shard_mask: vec![0; snapshot.nodes.len()],
            changed: Vec::new(),
        };
        for (i, node) in snapshot.nodes.iter().enumerate() {
            if let Some(shards) = snapshot.shards.get(&node.id) {
                t.shard_mask[i] = node
                    .gpus
                    .iter()
                    .take(128)
                    .enumerate()
                    .filter(|(_, (g, _))| shards.contains(g))
                    .fold(0u128, |m, (p, _)| m | 1 << p);
            }
            let Some(of) = snapshot.gpu_domains.get(&node.id) else {
                continue;
            };
            let mut by_domain: BTreeMap<u32, u128> = BTreeMap::new();
            for (p, (g, _)) in node.gpus.iter().enumerate().take(128) {
                if let Some((_, d)) = of.iter().find(|(index, _)| index == g) {
                    *by_domain.entry(*d).or_default() |= 1 << p;
                }
            }
            if by_domain.len() > 1 {
                t.domains[i] = by_domain.into_values().collect();
            }
        }
        let mut by_name: Vec<usize> = (0..snapshot.nodes.len()).collect();
        by_name.sort_by(|a, b| {
            let (a, b) = (&snapshot.nodes[*a], &snapshot.nodes[*b]);
            (a.weight, &a.name).cmp(&(b.weight, &b.name))
        });
        for (r, i) in by_name.into_iter().enumerate() {
            t.rank[i] = r as u32;
        }
        let mut held_by_windows: Vec<(usize, Interval)> = Vec::new();
        for a in &snapshot.running {
            let Some(&i) = index.get(&a.node_id) else {
                continue;
            };
            let node = &snapshot.nodes[i];
            let mask = node
                .gpus
                .iter()
                .enumerate()
                .take(128)
                .filter(|(_, (g, _))| a.gpus.contains(g))
                .fold(0u128, |m, (p, _)| m | 1 << p);
            let end = a.end.unwrap_or(FOREVER).max(snapshot.now + 1);
            t.add(
                i,
                Interval {
                    job: a.job_id,
                    start: i64::MIN,
                    end,
                    mask,
                    cpus: a.cpus,
                    mem: a.mem_mib,
                    exclusive: a.exclusive,
                    reservation: false,
                },
            );
        }
        // Advance reservations: each window holds its nodes (whole, or the GPUs it lists)
        // against every job but its own, which skip its intervals (ids below zero).
        for (w, r) in snapshot.advance_reservations.iter().enumerate() {
            let id = -(w as i64) - 1;
            let entry = t.advance.entry(r.name.clone()).or_default();
            entry.ids.push(id);
            entry.flex |= r.flex;
            entry.windows.push((r.start, r.end));
            let mut held = Vec::new();
            for rn in &r.nodes {
                let Some(&i) = index.get(&rn.node_id) else {
                    continue;
                };
                held.push(i);
                let node = &snapshot.nodes[i];
                let (mask, exclusive) = match &rn.gpus {
                    None => (0, true),
                    Some(gpus) => (
                        node.gpus
                            .iter()
                            .enumerate()
                            .take(128)
                            .filter(|(_, (g, _))| gpus.contains(g))
                            .fold(0u128, |m, (p, _)| m | 1 << p),
                        false,
                    ),
                };
                if r.end > r.start {
                    held_by_windows.push((
                        i,
                        Interval {
                            job: id,
                            start: r.start,
                            end: r.end,
                            mask,
                            cpus: 0,
                            mem: 0,
                            exclusive,
                            reservation: false,
                        },
                    ));
                }
            }
            let entry = t.advance.get_mut(&r.name).expect("just added");
            entry.nodes.extend(held);
        }
        // Sorted once, not per window: one name may have a window per node (the cloud
        // module's boot holds), and sorting on each was quadratic in them.
        for entry in t.advance.values_mut() {
            entry.nodes.sort_unstable();
            entry.nodes.dedup();
        }
        for (i, iv) in held_by_windows {
            t.add(i, iv);
        }
        t
    }

    pub(super) fn add(&mut self, node: usize, interval: Interval) {
        let Interval {
            start,
            end,
            mask,
            exclusive,
            reservation: res,
            ..
        } = interval;
        self.intervals[node].push(interval);
        self.changed.push(node);
        let was_slow = self.slow[node];
        let indexed = !self.indexed_in[node].is_empty();
        if indexed && !was_slow {
            self.index_update(node, false);
        }
        if res || start > self.now {
            self.slow[node] = true;
            self.later[node].push(interval);
            self.later_busy[node] |= mask;
        } else if end > self.now {
            // Begins at or before `now` and ends after it: it overlaps every window
            // `[now, e)` with `e > now`.
            self.now_busy[node] |= mask;
            self.now_any[node] = true;
            self.now_exclusive[node] |= exclusive;
            self.now_cpus[node] += u64::from(interval.cpus);
            self.now_mem[node] += interval.mem;
        }
        if indexed && !(was_slow && self.slow[node]) {
            self.index_update(node, true);
        }
        if end != FOREVER {
            self.ends.insert(end);
        }
    }

    /// Files node `i` in (`insert`) or out of every index it belongs to, by its state now.
    pub(super) fn index_update(&mut self, i: usize, insert: bool) {
        let rank = self.rank[i];
        let weight = self.nodes[i].weight;
        for &(k, typed) in &self.indexed_in[i] {
            let index = &mut self.indexes[k];
            if self.slow[i] {
                if insert {
                    index.slow.push((i, typed));
                }
                continue;
            }
            let file = |buckets: &mut BTreeMap<Key, BTreeSet<(u32, usize, u128)>>, b: u32| {
                let k = key(weight, b);
                if insert {
                    buckets.entry(k).or_default().insert((rank, i, typed));
                } else if let Some(bucket) = buckets.get_mut(&k) {
                    bucket.remove(&(rank, i, typed));
                    if bucket.is_empty() {
                        buckets.remove(&k);
                    }
                }
            };
            if !self.now_exclusive[i] {
                file(&mut index.free, (typed & !self.now_busy[i]).count_ones());
            }
            if !self.now_any[i] {
                file(&mut index.idle, typed.count_ones());
            }
        }
    }

    /// Indexes a candidate list (the next number); see [`NowIndex`].
    pub(super) fn index_list(&mut self, cands: &[(usize, u128)]) {
        let k = self.indexes.len();
        self.indexes.push(NowIndex::default());
        for &(i, typed) in cands {
            self.indexed_in[i].push((k, typed));
            let mine = std::mem::replace(&mut self.indexed_in[i], vec![(k, typed)]);
            self.index_update(i, true);
            self.indexed_in[i] = mine;
        }
    }

    /// [`Timeline::place`] at `now`, reservations counted, best fit first, on the indexed
    /// candidate list `index`: reads the nodes in (usable GPUs, name) order from the
    /// index and stops at the first that fit, then weighs the nodes with reservations,
    /// which the index leaves out.
    pub(super) fn place_now(
        &self,
        index: usize,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<Vec<(usize, u128)>> {
        let want = job.nodes as usize;
        let now = self.now;
        let end = now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        if want == 0 || cands.len() < want {
            return None;
        }
        if end <= now || !self.ignoring.is_empty() || self.reference || self.special(job) {
            return self.place(cands, job, now, true, true);
        }
        let index = &self.indexes[index];
        // A node's key in [`Timeline::place`] is its usable GPU count: the bucket it is
        // filed under, since its intervals are all summarised in `now_*`.
        let buckets = if job.exclusive || job.whole_node {
            &index.idle
        } else {
            &index.free
        };
        let floor = if job.whole_node { 0 } else { job.gpus_per_node };
        let mut best: Vec<(Key, u32, usize, u128)> = Vec::with_capacity(want);
        'fill: for (k, bucket) in buckets {
            if (*k as u32) < floor {
                continue;
            }
            for &(rank, i, typed) in bucket {
                if let Some((usable, chosen)) = self.fit(i, typed, job, now, end, true) {
                    best.push((usable, rank, i, chosen));
                    if best.len() == want {
                        break 'fill;
                    }
                }
            }
        }
        // A node with reservations has at least the GPUs that neither the intervals over
        // `now` nor any later one hold: when even that key comes after the `want` best fits
        // found, it cannot be chosen, and is not weighed.
        let found = (best.len() == want).then(|| best.last().map(|b| (b.0, b.1)));
        for &(i, typed) in &index.slow {
            if let Some(Some(worst)) = found {
                let least = (typed & !(self.now_busy[i] | self.later_busy[i])).count_ones();
                let least = key(self.nodes[i].weight, least.max(floor));
                if (least, self.rank[i]) > worst {
                    continue;
                }
            }
            if let Some((usable, chosen)) = self.fit(i, typed, job, now, end, true) {
                best.push((usable, self.rank[i], i, chosen));
            }
        }
        if best.len() < want {
            return None;
        }
        best.sort_unstable();
        Some(
            best.into_iter()
                .take(want)
                .map(|(_, _, i, m)| (i, m))
                .collect(),
        )
    }

    /// Whether the job's placements need the plain path (fits weighed one by one, not
    /// through the indexes and caches): it names nodes it must get, or an advance
    /// reservation (whose intervals it passes over).
    pub(super) fn special(&self, job: &PendingJob) -> bool {
        !job.nodelist.is_empty()
            || job.reservation.is_some()
            || self.fragmentation.is_some()
            || constraint_spans_nodes(job.constraint.as_deref())
    }

    /// Whether a job that names an advance reservation may start at `t` (inside one of its
    /// windows; any time under `FLEX`); true for other jobs. As in Slurm, a job may start
    /// late in a window with a limit that runs past its end (no other job is planned on
    /// the window's nodes over the rest of it, and what comes after is planned around
    /// the job).
    pub(super) fn window_open(&self, job: &PendingJob, t: i64) -> bool {
        let Some(r) = job.reservation.as_ref() else {
            return true;
        };
        let Some(a) = self.advance.get(r) else {
            return false;
        };
        a.flex || a.windows.iter().any(|(s, e)| *s <= t && t < *e)
    }

    /// The earliest start of a job in a (not `FLEX`) advance reservation: the first of
    /// each window's start (or `now`) and the interval ends inside it at which it fits,
    /// with where.
    pub(super) fn earliest_in_windows(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<(i64, Chosen)> {
        let a = self.advance.get(job.reservation.as_ref()?)?;
        let mut windows = a.windows.clone();
        windows.sort_unstable();
        windows
            .into_iter()
            .filter(|(_, e)| *e > self.now)
            .find_map(|(s, e)| {
                let first = s.max(self.now);
                std::iter::once(first)
                    .chain(self.ends.range(first + 1..e).copied())
                    .find_map(|t| self.place(cands, job, t, true, false).map(|c| (t, c)))
            })
    }

    /// Backfill under `--time-min`: the longest time limit, from the job's limit down to
    /// its `--time-min`, with which it starts now (trying the limits that end where an
    /// interval on a candidate node begins), with where; `None` when none does or the job
    /// has no `--time-min` below its limit.
    pub(super) fn shortened(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<(i64, Chosen)> {
        let limit = job.time_limit?;
        let least = job.time_min?.max(1);
        if least >= limit {
            return None;
        }
        let now = self.now;
        let mut limits: Vec<i64> = cands
            .iter()
            .flat_map(|(i, _)| self.intervals[*i].iter())
            .map(|iv| iv.start.saturating_sub(now))
            .filter(|l| (least..limit).contains(l))
            .collect();
        limits.push(least);
        limits.sort_unstable_by(|a, b| b.cmp(a));
        limits.dedup();
        limits.into_iter().find_map(|l| {
            let shorter = PendingJob {
                time_limit: Some(l),
                ..job.clone()
            };
            if !self.window_open(&shorter, now) {
                return None;
            }
            self.place(cands, &shorter, now, true, true).map(|c| (l, c))
        })
    }

    /// A pending job's `--constraint`, parsed; `None` when it does not parse.
    pub(super) fn constraint(&self, text: &str) -> Option<&Constraint> {
        self.constraints.get(text).and_then(Option::as_ref)
    }

    /// The interval ids of the advance reservation the job runs in (it passes over them).
    pub(super) fn member_ids(&self, job: &PendingJob) -> &[i64] {
        job.reservation
            .as_ref()
            .and_then(|r| self.advance.get(r))
            .map_or(&[], |a| a.ids.as_slice())
    }

    /// Nodes that could ever hold the job, with the mask of GPUs of the wanted type.
    pub(super) fn candidates(&self, job: &PendingJob) -> Vec<(usize, u128)> {
        let constraint = job.constraint.as_deref().map(|c| self.constraint(c));
        // A job in a reservation (not `FLEX`) runs on its nodes only.
        let inside: Option<&[usize]> = job
            .reservation
            .as_ref()
            .map(|r| match self.advance.get(r) {
                Some(a) if a.flex => None,
                Some(a) => Some(a.nodes.as_slice()),
                None => Some(&[][..]),
            })
            .unwrap_or(None);
        let mut out = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.available)
            .filter(|(i, _)| inside.is_none_or(|nodes| nodes.binary_search(i).is_ok()))
            .filter(|(_, n)| {
                job.partition_nodes.is_empty() || job.partition_nodes.contains(&n.name)
            })
            .filter(|(_, n)| !job.exclude.contains(&n.name))
            .filter(|(_, n)| {
                // `-w` naming every node of the job: those nodes only.
                job.nodelist.is_empty()
                    || job.nodelist.len() < job.nodes as usize
                    || job.nodelist.contains(&n.name)
            })
            .filter(|(_, n)| {
                constraint.is_none_or(|c| c.is_some_and(|c| c.node_may_match(&n.features)))
            })
            .filter_map(|(i, n)| {
                let all = n
                    .gpus
                    .iter()
                    .take(128)
                    .enumerate()
                    .fold(0u128, |m, (p, _)| m | 1 << p);
                let typed = n
                    .gpus
                    .iter()
                    .take(128)
                    .enumerate()
                    .filter(|(_, (_, model))| match &job.gpu_type {
                        Some(t) => model.to_lowercase().contains(&t.to_lowercase()),
                        None => true,
                    })
                    .fold(0u128, |m, (p, _)| m | 1 << p);
                let typed = if job.shards {
                    typed & self.shard_mask[i]
                } else {
                    typed & !self.shard_mask[i]
                };
                if job.whole_node {
                    Some((i, all))
                } else {
                    (typed.count_ones() >= job.gpus_per_node).then_some((i, typed))
                }
            })
            .collect::<Vec<_>>();
        // Name order, so that [`Timeline::place`] may stop at the first best fits.
        out.sort_by_key(|(i, _)| self.rank[*i]);
        out
    }

    /// The job's GPUs on node `i` over `[t, end)`: (usable GPU count, chosen mask).
    pub(super) fn fit(
        &self,
        i: usize,
        typed: u128,
        job: &PendingJob,
        t: i64,
        end: i64,
        res: bool,
    ) -> Option<(Key, u128)> {
        let member = self.member_ids(job);
        if t == self.now
            && end > self.now
            && self.ignoring.is_empty()
            && member.is_empty()
            && !self.reference
        {
            // The intervals of the node that begin at or before `now` and overlap
            // `[now, end)` are exactly those summarised in `now_*`; the others are in
            // `later`.
            if self.now_exclusive[i] {
                return None;
            }
            let held = Held {
                busy: self.now_busy[i],
                any: self.now_any[i],
                cpus: self.now_cpus[i],
                mem: self.now_mem[i],
            };
            let held = overlapping(&self.later[i], held, t, end, res, |_| false)?;
            return self.fit_mask(i, typed, job, held);
        }
        let held = overlapping(&self.intervals[i], Held::default(), t, end, res, |iv| {
            (!self.ignoring.is_empty() && self.ignoring.contains(&iv.job))
                || (iv.job < 0 && member.contains(&iv.job))
        })?;
        self.fit_mask(i, typed, job, held)
    }

    /// The job's GPUs on node `i` (GPUs of the wanted type `typed`) where `held` is held
    /// (see [`pick_gpus`] for the choice among the node's topology domains): its key
    /// (weight, usable GPUs) and the mask chosen; `None` when its GPUs, CPUs or memory do
    /// not fit.
    pub(super) fn fit_mask(
        &self,
        i: usize,
        typed: u128,
        job: &PendingJob,
        held: Held,
    ) -> Option<(Key, u128)> {
        let node = &self.nodes[i];
        if (job.exclusive || job.whole_node) && held.any {
            return None;
        }
        let (cpus, mem) = need(job, node)?;
        if node.cpus > 0 && held.cpus + u64::from(cpus) > u64::from(node.cpus) {
            return None;
        }
        if node.memory_mib > 0 && held.mem + mem > node.memory_mib {
            return None;
        }
        if job.whole_node {
            return Some((key(node.weight, typed.count_ones()), typed));
        }
        let usable = typed & !held.busy;
        if usable.count_ones() < job.gpus_per_node {
            return None;
        }
        let mut count = usable.count_ones();
        if let Some((cpus_per_gpu, mem_per_gpu)) = self.fragmentation {
            // GPUs left that the CPUs and memory left could not feed.
            let gpus_left = f64::from(usable.count_ones() - job.gpus_per_node);
            let mut fed = gpus_left;
            if node.cpus > 0 && cpus_per_gpu > 0.0 {
                let left = u64::from(node.cpus).saturating_sub(held.cpus + u64::from(cpus));
                fed = fed.min((left as f64 / cpus_per_gpu).floor());
            }
            if node.memory_mib > 0 && mem_per_gpu > 0.0 {
                let left = node.memory_mib.saturating_sub(held.mem + mem);
                fed = fed.min((left as f64 / mem_per_gpu).floor());
            }
            let stranded = (gpus_left - fed) as u32;
            count |= stranded << 8;
        }
        Some((
            key(node.weight, count),
            pick_gpus(usable, job.gpus_per_node, &self.domains[i]),
        ))
    }

    /// Chooses `job.nodes` nodes for the job over `[t, t + limit)`. Starts (`packed`)
    /// take the nodes with the fewest usable GPUs first; reservations take them in a
    /// fixed order (fewest GPUs of the wanted type, then name), so a job backfilled
    /// around a reservation cannot make the next pass choose other nodes for it.
    pub(super) fn place(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
        t: i64,
        res: bool,
        packed: bool,
    ) -> Option<Vec<(usize, u128)>> {
        let want = job.nodes as usize;
        if want == 0 || cands.len() < want {
            return None;
        }
        let end = t.saturating_add(job.time_limit.unwrap_or(FOREVER));
        let order = |i: usize, typed: u128, usable: Key| {
            if packed {
                usable
            } else {
                key(self.nodes[i].weight, typed.count_ones())
            }
        };
        if constraint_spans_nodes(job.constraint.as_deref()) {
            let c = self.constraint(job.constraint.as_deref()?)?;
            let mut fits: Vec<(Key, u32, usize, u128)> = cands
                .iter()
                .filter_map(|(i, typed)| {
                    let (usable, chosen) = self.fit(*i, *typed, job, t, end, res)?;
                    Some((order(*i, *typed, usable), self.rank[*i], *i, chosen))
                })
                .collect();
            fits.sort_unstable();
            let features: Vec<&[String]> = fits
                .iter()
                .map(|f| self.nodes[f.2].features.as_slice())
                .collect();
            let required: Vec<bool> = fits
                .iter()
                .map(|f| job.nodelist.contains(&self.nodes[f.2].name))
                .collect();
            if required.iter().filter(|r| **r).count() != job.nodelist.len() {
                return None;
            }
            let chosen = c.choose(&features, &required, job.nodes as usize)?;
            return Some(chosen.into_iter().map(|k| (fits[k].2, fits[k].3)).collect());
        }
        // `-w` naming fewer nodes than the job wants: those first, the rest by the usual
        // order among the others.
        if !job.nodelist.is_empty() && job.nodelist.len() < want {
            let mut required = Vec::new();
            for (i, typed) in cands {
                if job.nodelist.contains(&self.nodes[*i].name) {
                    required.push((*i, self.fit(*i, *typed, job, t, end, res)?.1));
                }
            }
            if required.len() != job.nodelist.len() {
                return None;
            }
            let mut fits: Vec<(Key, u32, usize, u128)> = cands
                .iter()
                .filter(|(i, _)| !job.nodelist.contains(&self.nodes[*i].name))
                .filter_map(|(i, typed)| {
                    let (usable, chosen) = self.fit(*i, *typed, job, t, end, res)?;
                    Some((order(*i, *typed, usable), self.rank[*i], *i, chosen))
                })
                .collect();
            if fits.len() + required.len() < want {
                return None;
            }
            fits.sort_unstable();
            let rest = want - required.len();
            required.extend(fits.into_iter().take(rest).map(|(_, _, i, m)| (i, m)));
            return Some(required);
        }
        if self.reference {
            let mut fits: Vec<(Key, &str, usize, u128)> = cands
                .iter()
                .filter_map(|(i, typed)| {
                    self.fit(*i, *typed, job, t, end, res)
                        .map(|(usable, chosen)| {
                            (
                                order(*i, *typed, usable),
                                self.nodes[*i].name.as_str(),
                                *i,
                                chosen,
                            )
                        })
                })
                .collect();
            if fits.len() < want {
                return None;
            }
            // Stable: equal names stay in index order.
            fits.sort_by_key(|(_, _, i, _)| *i);
            fits.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            return Some(
                fits.into_iter()
                    .take(want)
                    .map(|(_, _, i, m)| (i, m))
                    .collect(),
            );
        }
        // No node's key can be below this (with the node's weight): a fit has at least
        // `gpus_per_node` usable GPUs (of the wanted type), except for whole-node jobs.
        let floor = if job.whole_node { 0 } else { job.gpus_per_node };
        // The `want` best (key, rank) so far; `cands` are in rank order (weight, then
        // name), so once all of them have the lowest key a later node could have, no
        // later node can displace one.
        let mut best: std::collections::BinaryHeap<(Key, u32, usize, u128)> =
            std::collections::BinaryHeap::with_capacity(want + 1);
        for (i, typed) in cands {
            let Some((usable, chosen)) = self.fit(*i, *typed, job, t, end, res) else {
                continue;
            };
            let entry = (order(*i, *typed, usable), self.rank[*i], *i, chosen);
            if best.len() < want {
                best.push(entry);
            } else if best.peek().is_some_and(|worst| entry < *worst) {
                best.pop();
                best.push(entry);
            }
            let lowest = key(self.nodes[*i].weight, floor);
            if best.len() == want && best.peek().is_some_and(|worst| worst.0 <= lowest) {
                break;
            }
        }
        if best.len() < want {
            return None;
        }
        Some(
            best.into_sorted_vec()
                .into_iter()
                .map(|(_, _, i, m)| (i, m))
                .collect(),
        )
    }

    /// Whether the job fits now on `cands`, reservations aside (the `Priority`/`Resources`
    /// question): the first `nodes` nodes it fits on, or `None`.
    pub(super) fn fits_now_ignoring_reservations(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
    ) -> Option<Vec<(usize, u128)>> {
        let want = job.nodes as usize;
        if want == 0 {
            return None;
        }
        if self.special(job) {
            return self.place(cands, job, self.now, false, true);
        }
        let end = self.now.saturating_add(job.time_limit.unwrap_or(FOREVER));
        let nodes: Vec<(usize, u128)> = cands
            .iter()
            .filter(|(i, typed)| self.fit(*i, *typed, job, self.now, end, false).is_some())
            .take(want)
            .copied()
            .collect();
        (nodes.len() == want).then_some(nodes)
    }

    /// The first of `now` and node `i`'s interval ends at which it can hold the job
    /// ([`FOREVER`]: never), for a node that is not `slow` and a time limit of at least a
    /// second. Every interval of such a node begins at or before `now`, so it overlaps a
    /// window `[t, t + limit)` (`t` at or after `now`) exactly while `t` is before its end,
    /// whatever the limit: the node's fit only improves, at its own interval ends.
    pub(super) fn first_able(&self, i: usize, typed: u128, job: &PendingJob) -> i64 {
        let limit = job.time_limit.unwrap_or(FOREVER);
        let feasible = |t: i64| {
            self.fit(i, typed, job, t, t.saturating_add(limit), true)
                .is_some()
        };
        if feasible(self.now) {
            return self.now;
        }
        let mut after = self.now;
        loop {
            let next = self.intervals[i]
                .iter()
                .map(|iv| iv.end)
                .filter(|e| *e > after && *e != FOREVER)
                .min();
            let Some(t) = next else { return FOREVER };
            if feasible(t) {
                return t;
            }
            after = t;
        }
    }

    /// The times at which slow node `i` starts (+1) or stops (-1) being able to hold the
    /// job, among `now` and the interval ends after it, up to `bound`, pushed to `events`.
    /// An interval's overlap with `[t, t + limit)` changes only where `t` passes the
    /// interval's end or comes within `limit` of its start, so the node's fit is weighed
    /// at those times only.
    pub(super) fn able_changes(
        &self,
        i: usize,
        typed: u128,
        job: &PendingJob,
        bound: i64,
        events: &mut Vec<(i64, i32)>,
    ) {
        let now = self.now;
        let limit = job.time_limit.unwrap_or(FOREVER);
        // The first time, of `now` and the interval ends after it, at or after `x`.
        let first_at = |x: i64| {
            if x <= now {
                Some(now)
            } else {
                self.ends.range(x..).next().copied()
            }
        };
        let mut points: Vec<i64> = vec![now];
        for iv in &self.intervals[i] {
            // The window reaches the interval from `t + limit > start` on.
            let reach = i128::from(iv.start) - i128::from(limit) + 1;
            let reach = reach.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            points.extend(first_at(reach));
            points.extend(first_at(iv.end));
        }
        points.sort_unstable();
        points.dedup();
        let mut able = false;
        for t in points.into_iter().take_while(|t| *t <= bound) {
            let now_able = self
                .fit(i, typed, job, t, t.saturating_add(limit), true)
                .is_some();
            if now_able != able {
                events.push((t, if now_able { 1 } else { -1 }));
                able = now_able;
            }
        }
    }

    /// The job's earliest start on `cands` the plain way: the first of `now` and the
    /// interval ends after it at which [`Timeline::place`] (reservations counted, fixed
    /// node order) finds room, with that placement.
    pub(super) fn earliest_scan(
        &self,
        cands: &[(usize, u128)],
        job: &PendingJob,
        now: i64,
    ) -> Option<(i64, Vec<(usize, u128)>)> {
        std::iter::once(now)
            .chain(self.ends.range(now + 1..).copied())
            .find_map(|t| self.place(cands, job, t, true, false).map(|p| (t, p)))
    }

    /// The placements of `chosen`, in host-name order (numbers compared as numbers, as
    /// Slurm sorts its node lists), so node index 0 (the batch node) is the first name of
    /// `SLURM_JOB_NODELIST`.
    pub(super) fn placements(&self, chosen: &[(usize, u128)], job: &PendingJob) -> Vec<Placement> {
        let mut chosen = chosen.to_vec();
        chosen.sort_by_key(|(i, _)| host_sort_key(&self.nodes[*i].name));
        chosen
            .iter()
            .map(|(i, mask)| {
                let node = &self.nodes[*i];
                let (cpus, mem_mib) = need(job, node).unwrap_or_default();
                Placement {
                    cpus,
                    mem_mib,
                    node_id: node.id,
                    gpus: node
                        .gpus
                        .iter()
                        .take(128)
                        .enumerate()
                        .filter(|(p, _)| mask & (1 << p) != 0)
                        .map(|(_, (g, _))| *g)
                        .collect(),
                }
            })
            .collect()
    }

    pub(super) fn hold(
        &mut self,
        chosen: &[(usize, u128)],
        job: &PendingJob,
        start: i64,
        res: bool,
    ) -> i64 {
        let end = start.saturating_add(job.time_limit.unwrap_or(FOREVER));
        for (i, mask) in chosen {
            let (cpus, mem) = need(job, &self.nodes[*i]).unwrap_or_default();
            self.add(
                *i,
                Interval {
                    job: job.id,
                    start,
                    end,
                    mask: *mask,
                    cpus,
                    mem,
                    exclusive: job.exclusive || job.whole_node,
                    reservation: res,
                },
            );
        }
        end
    }
}
