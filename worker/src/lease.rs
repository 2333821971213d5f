//! The node's lease: how long its runs may go on without contact with the api.
//!
//! The scheduler requeues the runs of a node that has not synced for its node timeout; a
//! node that cannot reach the api cannot be told to stop them. So each successful sync
//! gives the worker a lease ([`berth_core::wire::SyncResponse::lease_ms`], shorter than
//! the node timeout) counted from when the worker *sent* that sync (before the api
//! recorded it, so the lease ends before the scheduler's count does). The worker writes
//! it to `{state_dir}/lease` (root's, mode 0600) as two instants on the machine's
//! boot-time clock (`CLOCK_BOOTTIME`: monotonic, counting suspend, shared by every
//! process): `term_at` and `kill_at`. Every shepherd of the node reads the file; when
//! `term_at` passes without a renewal it sends SIGTERM to its job's process group, and
//! SIGKILL at `kill_at` (the lease's end), then records the run as fenced. A worker that
//! is frozen, killed or cut off from the api therefore cannot leave a run alive that the
//! scheduler has started again elsewhere: a job never runs twice at once.
//!
//! Outages shorter than the lease less the SIGTERM grace and two long polls are harmless
//! (a 30 s node timeout: about 10 to 15 s; 300 s: about 4 minutes): the worker shortens
//! its long poll to a quarter of the lease so that a renewal always lands well inside it.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The lease file under a worker's state directory.
pub fn lease_path(state_dir: &Path) -> PathBuf {
    state_dir.join("lease")
}

/// Now on the boot-time clock, milliseconds since boot (0 if the clock cannot be read).
pub fn now_ms() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map(|t| {
            u64::try_from(t.tv_sec()).unwrap_or(0) * 1000
                + u64::try_from(t.tv_nsec()).unwrap_or(0) / 1_000_000
        })
        .unwrap_or(0)
}

/// When a node's runs must be stopped, milliseconds on the boot-time clock ([`now_ms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// SIGTERM to every run's process group from here on.
    pub term_at_ms: u64,
    /// SIGKILL from here on: the lease's end.
    pub kill_at_ms: u64,
}

impl Lease {
    /// The lease given by a sync sent at `sent_at_ms` for `lease`, for a worker whose
    /// kill wait is `kill_wait` and whose long poll is held up to `hold`: SIGKILL at the
    /// lease's end, SIGTERM before it by the kill wait, but by no more than a quarter of
    /// the lease nor so much that the renewal of a sync held for two long polls could
    /// come after it (`lease - 2 × hold - 1 s`; none when that leaves nothing).
    pub fn new(sent_at_ms: u64, lease: Duration, kill_wait: Duration, hold: Duration) -> Lease {
        let lease_ms = millis(lease);
        let room = lease_ms.saturating_sub(2 * millis(hold) + 1000);
        let grace = millis(kill_wait).min(lease_ms / 4).min(room);
        let kill_at_ms = sent_at_ms + lease_ms;
        Lease {
            term_at_ms: kill_at_ms - grace,
            kill_at_ms,
        }
    }

    /// Writes the lease to `path` (mode 0600, replaced atomically).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string(self).unwrap_or_default();
        crate::run_dir::write_private(path, text.as_bytes())
    }

    /// The lease in `path`; `None` when there is none (no file: runs are not fenced).
    pub fn read(path: &Path) -> Option<Lease> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The long poll's hold for a node with `lease` whose `--poll-wait` is `poll_wait`
/// seconds: a quarter of the lease, whole seconds, at least 1, at most `poll_wait`.
pub fn hold_seconds(poll_wait: u32, lease: Option<Duration>) -> u32 {
    let poll_wait = poll_wait.clamp(1, 60);
    match lease {
        Some(lease) => {
            let quarter = u32::try_from(lease.as_secs() / 4).unwrap_or(u32::MAX);
            poll_wait.min(quarter.max(1))
        }
        None => poll_wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sigterm_comes_before_the_lease_ends_and_after_a_renewal_could() {
        let s = Duration::from_secs;
        // A 30 s node timeout (27 s lease), 30 s kill wait, polls held 6 s.
        let lease = Lease::new(1_000, s(27), s(30), s(6));
        assert_eq!(lease.kill_at_ms, 28_000);
        assert_eq!(lease.term_at_ms, 28_000 - 6_750);
        // A 6 s node timeout (5 s lease), 2 s kill wait, 1 s polls: SIGTERM 1.25 s early,
        // still after a renewal held for two polls (3 s after the sync).
        let lease = Lease::new(0, s(5), s(2), s(1));
        assert_eq!((lease.term_at_ms, lease.kill_at_ms), (3_750, 5_000));
        // No room for a grace: SIGKILL at the end only.
        let lease = Lease::new(0, s(3), s(2), s(1));
        assert_eq!((lease.term_at_ms, lease.kill_at_ms), (3_000, 3_000));
    }

    #[test]
    fn the_long_poll_is_a_quarter_of_the_lease() {
        let s = Duration::from_secs;
        assert_eq!(hold_seconds(10, None), 10);
        assert_eq!(hold_seconds(10, Some(s(27))), 6);
        assert_eq!(hold_seconds(10, Some(s(108))), 10);
        assert_eq!(hold_seconds(1, Some(s(3))), 1);
        assert_eq!(hold_seconds(5, Some(s(2))), 1);
    }

    #[test]
    fn the_boot_clock_moves_forward() {
        let a = now_ms();
        std::thread::sleep(Duration::from_millis(20));
        assert!(now_ms() >= a + 20);
    }

    #[test]
    fn a_lease_survives_its_file() {
        let dir = std::env::temp_dir().join(format!("berth-lease-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = lease_path(&dir);
        assert_eq!(Lease::read(&path), None);
        let lease = Lease::new(
            5,
            Duration::from_secs(9),
            Duration::from_secs(1),
            Duration::from_secs(2),
        );
        lease.write(&path).unwrap();
        assert_eq!(Lease::read(&path), Some(lease));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
