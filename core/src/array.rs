//! Job array index sets (`--array=0-15:4%4`, `1,3,5`), kept as ranges so a 100,000-task
//! array is a few bytes, not 100,000 numbers.

use std::fmt;

/// The most tasks one array may have.
pub const MAX_ARRAY_TASKS: u64 = 1_000_000;

/// One `LO-HI:STEP` run of indices (`HI` is in the set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    lo: u32,
    hi: u32,
    step: u32,
}

impl Run {
    fn count(&self) -> u64 {
        u64::from((self.hi - self.lo) / self.step) + 1
    }
    fn contains(&self, i: u32) -> bool {
        i >= self.lo && i <= self.hi && (i - self.lo).is_multiple_of(self.step)
    }
    fn last(&self) -> u32 {
        self.lo + (self.hi - self.lo) / self.step * self.step
    }
}

/// A set of array task indices, in the order given (duplicates removed when parsed).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexSet {
    runs: Vec<Run>,
}

/// A parsed `--array` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// The task indices.
    pub indices: IndexSet,
    /// `%LIMIT`: the most tasks running at once.
    pub max_running: Option<u32>,
}

/// Parses `--array`: items `N`, `N-M` or `N-M:STEP` separated by commas, then an optional
/// `%LIMIT`.
///
/// # Errors
/// A message naming the bad part; also when the array has more than
/// [`MAX_ARRAY_TASKS`] tasks or none.
pub fn parse_array(v: &str) -> Result<ArraySpec, String> {
    let (body, limit) = match v.split_once('%') {
        Some((b, l)) => (b, Some(l)),
        None => (v, None),
    };
    let max_running = match limit {
        Some(l) => Some(
            l.parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| format!("not an array task limit: {l:?}"))?,
        ),
        None => None,
    };
    let indices = IndexSet::parse(body)?;
    let n = indices.count();
    if n == 0 || n > MAX_ARRAY_TASKS {
        return Err(format!(
            "an array has 1 to {MAX_ARRAY_TASKS} tasks; {v:?} has {n}"
        ));
    }
    Ok(ArraySpec {
        indices,
        max_running,
    })
}

/// Checks an array against Slurm's `MaxArraySize` (`max_array_size`): every task index
/// must be below it (so an array has at most that many tasks). Slurm's words for the
/// refusal: "Invalid job array specification".
///
/// # Errors
/// A message naming the largest index and the limit.
pub fn check_max_array_size(array: &ArraySpec, max_array_size: u32) -> Result<(), String> {
    match array.indices.max() {
        Some(max) if max >= max_array_size => Err(format!(
            "Invalid job array specification: task index {max} is not below MaxArraySize \
             ({max_array_size}): indices go from 0 to {}",
            max_array_size.saturating_sub(1)
        )),
        _ => Ok(()),
    }
}

impl IndexSet {
    /// Parses `N`, `N-M`, `N-M:STEP` items separated by commas.
    ///
    /// # Errors
    /// A message naming the bad item.
    pub fn parse(body: &str) -> Result<IndexSet, String> {
        let mut runs = Vec::new();
        if body.is_empty() {
            return Ok(IndexSet { runs });
        }
        let num = |s: &str| {
            s.parse::<u32>()
                .map_err(|_| format!("not an array index: {s:?}"))
        };
        for item in body.split(',') {
            let (range, step) = match item.split_once(':') {
                Some((r, s)) => (r, num(s)?),
                None => (item, 1),
            };
            if step == 0 {
                return Err(format!("array step must be at least 1 in {item:?}"));
            }
            let (lo, hi) = match range.split_once('-') {
                Some((lo, hi)) => (num(lo)?, num(hi)?),
                None => {
                    let n = num(range)?;
                    (n, n)
                }
            };
            if hi < lo {
                return Err(format!("array range {item:?} runs backwards"));
            }
            runs.push(Run { lo, hi, step });
        }
        let mut set = IndexSet { runs };
        set.dedup();
        Ok(set)
    }

    fn dedup(&mut self) {
        if self.runs.len() < 2 {
            return;
        }
        // Overlapping items are rare; expand only when they overlap.
        let overlaps = self.runs.iter().enumerate().any(|(i, a)| {
            self.runs[i + 1..]
                .iter()
                .any(|b| a.lo <= b.hi && b.lo <= a.hi)
        });
        if overlaps && self.count() <= MAX_ARRAY_TASKS {
            let mut seen = std::collections::BTreeSet::new();
            let all: Vec<u32> = self.iter().filter(|i| seen.insert(*i)).collect();
            self.runs = all
                .into_iter()
                .map(|i| Run {
                    lo: i,
                    hi: i,
                    step: 1,
                })
                .collect();
        }
    }

    /// How many indices.
    pub fn count(&self) -> u64 {
        self.runs.iter().map(Run::count).sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Whether `i` is in the set.
    pub fn contains(&self, i: u32) -> bool {
        self.runs.iter().any(|r| r.contains(i))
    }

    /// The indices, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs
            .iter()
            .flat_map(|r| (r.lo..=r.last()).step_by(r.step as usize))
    }

    /// The largest index.
    pub fn max(&self) -> Option<u32> {
        self.runs.iter().map(Run::last).max()
    }

    /// The step between indices when the set is one `LO-HI:STEP` run (`SLURM_ARRAY_TASK_STEP`;
    /// 1 for a single index), else `None`.
    pub fn step(&self) -> Option<u32> {
        match self.runs.as_slice() {
            [run] => Some(run.step),
            _ => None,
        }
    }

    /// The smallest index.
    pub fn min(&self) -> Option<u32> {
        self.runs.iter().map(|r| r.lo).min()
    }

    /// The set without `i`.
    pub fn remove(&mut self, i: u32) {
        let mut out = Vec::with_capacity(self.runs.len() + 1);
        for r in &self.runs {
            if !r.contains(i) {
                out.push(*r);
                continue;
            }
            if i > r.lo {
                out.push(Run {
                    lo: r.lo,
                    hi: i - r.step,
                    step: r.step,
                });
            }
            if i < r.last() {
                out.push(Run {
                    lo: i + r.step,
                    hi: r.last(),
                    step: r.step,
                });
            }
        }
        for r in &mut out {
            if r.lo == r.hi {
                r.step = 1;
            }
        }
        self.runs = out;
    }
}

impl fmt::Display for IndexSet {
    /// The compact form `0-15:4,20` (what [`IndexSet::parse`] reads back).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, r) in self.runs.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            let last = r.last();
            if r.lo == last {
                write!(f, "{}", r.lo)?;
            } else if r.step == 1 {
                write!(f, "{}-{}", r.lo, last)?;
            } else {
                write!(f, "{}-{}:{}", r.lo, last, r.step)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_steps_and_limits() {
        let a = parse_array("0-15:4%4").unwrap();
        assert_eq!(a.indices.iter().collect::<Vec<_>>(), vec![0, 4, 8, 12]);
        assert_eq!(a.max_running, Some(4));
        let b = parse_array("1,3,5-7").unwrap();
        assert_eq!(b.indices.iter().collect::<Vec<_>>(), vec![1, 3, 5, 6, 7]);
        assert_eq!(b.indices.to_string(), "1,3,5-7");
        assert!(parse_array("5-1").is_err());
        assert!(parse_array("0-3%0").is_err());
        assert!(parse_array("0-1000000").is_err());
    }

    #[test]
    fn max_array_size_bounds_the_task_indices() {
        let check = |v: &str| check_max_array_size(&parse_array(v).unwrap(), 1001);
        assert!(check("0-1000").is_ok());
        assert!(check("1,500,1000%2").is_ok());
        let refused = check("0-5000").unwrap_err();
        assert!(refused.contains("MaxArraySize (1001)"), "{refused}");
        assert!(refused.contains("5000"), "{refused}");
        assert!(check("1001").is_err());
    }

    #[test]
    fn a_huge_array_stays_small_and_loses_one_index() {
        let mut a = parse_array("0-99999").unwrap().indices;
        assert_eq!(a.count(), 100_000);
        a.remove(0);
        a.remove(500);
        assert_eq!(a.to_string(), "1-499,501-99999");
        assert_eq!(a.count(), 99_998);
        let mut s = IndexSet::parse("0-12:4").unwrap();
        s.remove(4);
        assert_eq!(s.to_string(), "0,8-12:4");
        assert_eq!(IndexSet::parse(&s.to_string()).unwrap(), s);
    }
}
