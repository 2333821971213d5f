//! Where a worker keeps its runs, who may read what, and how root writes where a job's
//! user could plant a link.
//!
//! ```text
//! {state_dir}/                      0711 root  (users pass through to bin/ and spool/)
//!   node-credential                 0600 root  the node's credential (joined workers)
//!   lease                           0600 root  the node's lease (crate::lease)
//!   journal/                        0700 root  reports not yet acknowledged
//!   bin/                            0755 root  berth (a copy) and srun, scontrol … links
//!   jobs/                           0700 root  nobody but root lists or enters
//!     {job}.{run}/                  0700 root
//!       run.json  spec.json         0600 root  the assignment (script, environment, job
//!                                              token), what the shepherd runs
//!       batch.pid exit_status.json outputs.json ending reported  0600 root's records
//!       {stdout,stderr}.sent        root       upload progress (only root can reach it)
//!       shepherd.log                0600 root  the shepherd's own messages
//!       tasks/{step}.{task}/        0700 root  task.json, spec.json, pid, status, and the
//!                                              task's stdout/stderr (0600 root, shipped)
//!   spool/                          0711 root  not listable; each run's entry named
//!     {job}.{run}/                  0700 user  the job user's own: script.sh, work/
//!                                              (scratch), signal_reason
//! {checkpoint_root}/                0711 root  when the worker makes it
//!   {job}/                          0700 user  BERTH_CHECKPOINT_DIR
//! ```
//!
//! Root writes into a directory the job's user owns only through [`replace_file_in`]
//! (the directory opened without following a link, the old entry unlinked, the new file
//! created exclusively without following a link, then handed to the directory's owner),
//! so a link or a hard link planted there never makes root write someone else's file.
//! Output files named by the job are opened by the job's own process after it has become
//! its user ([`crate::shepherd`]); the worker only reads them to ship them, and only a
//! regular file of the job's user ([`crate::output`]).

use crate::launch::{JobUser, LaunchSettings};
use crate::WorkerError;
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstat, Mode};
use nix::unistd::{fchown, unlinkat, UnlinkatFlags};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The permission bits of the worker's directories (see the module's layout).
pub const STATE_DIR_MODE: u32 = 0o711;
/// `jobs/` and each run's directory: root's alone.
pub const RUN_DIR_MODE: u32 = 0o700;
/// `spool/`: passable, not listable.
pub const SPOOL_MODE: u32 = 0o711;

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> WorkerError + 'a {
    move |source| WorkerError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

fn errno<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(Errno) -> WorkerError + 'a {
    move |e| WorkerError::Io {
        action,
        path: path.to_path_buf(),
        source: std::io::Error::from(e),
    }
}

/// Makes `path` (and missing parents) and sets its mode to `mode`.
///
/// # Errors
/// [`WorkerError::Io`] when it cannot be made or its mode set.
pub fn ensure_dir(path: &Path, mode: u32) -> Result<(), WorkerError> {
    std::fs::create_dir_all(path).map_err(io("create the directory", path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io("set the mode of", path))
}

/// Sets the modes of a worker's state directory and of the directories in it (see the
/// module's layout), making those missing: records from an older worker become root's
/// alone too.
///
/// # Errors
/// [`WorkerError::Io`] when one cannot be made or its mode set, or when the state
/// directory is not a directory of the worker's own user that only it may write: one that
/// everyone may write (`/tmp`), a link, or one another user made (say in `/tmp`, before
/// the worker first started) and so controls, whatever its mode.
pub fn prepare_state_dir(state_dir: &Path) -> Result<(), WorkerError> {
    use std::os::unix::fs::MetadataExt;
    std::fs::create_dir_all(state_dir).map_err(io("create the directory", state_dir))?;
    let me = nix::unistd::geteuid().as_raw();
    // A link the worker's user made (`/var/lib/berth` → `/data/berth`) is followed; one
    // anyone else made is not.
    let link = std::fs::symlink_metadata(state_dir).map_err(io("inspect", state_dir))?;
    let meta = std::fs::metadata(state_dir).map_err(io("inspect", state_dir))?;
    let refusal = if link.file_type().is_symlink() && link.uid() != me {
        Some(format!(
            "it is a link of uid {}, not of the worker's user",
            link.uid()
        ))
    } else if !meta.is_dir() {
        Some("it is not a directory".to_string())
    } else if meta.uid() != me {
        Some(format!(
            "it belongs to uid {}, not to the worker's user; give the worker a directory of its own",
            meta.uid()
        ))
    } else if meta.mode() & 0o002 != 0 {
        Some("everyone may write it; give the worker a directory of its own".to_string())
    } else {
        None
    };
    if let Some(why) = refusal {
        return Err(WorkerError::Io {
            action: "use as the state directory",
            path: state_dir.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::PermissionDenied, why),
        });
    }
    ensure_dir(state_dir, STATE_DIR_MODE)?;
    ensure_dir(&state_dir.join("jobs"), RUN_DIR_MODE)?;
    ensure_dir(&state_dir.join("spool"), SPOOL_MODE)?;
    ensure_dir(&state_dir.join("journal"), RUN_DIR_MODE)
}

/// Writes `bytes` to `path`, a file of the worker's in one of its own directories: mode
/// 0600, replaced atomically (a temporary file renamed over it).
///
/// # Errors
/// The file cannot be written.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// Opens directory `path` without following a link in its last component.
fn open_dir(path: &Path) -> nix::Result<OwnedFd> {
    nix::fcntl::open(
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// Replaces `name` in directory `dir` with a new file holding `contents`, of mode
/// `mode`, owned by the directory's owner (and group): the directory is opened without
/// following a link, whatever `name` was (a file, a link, a hard link to another file)
/// is unlinked, and the new file is created exclusively without following a link. A
/// directory of that name is left alone (an error). Safe in a directory the job's user
/// owns.
///
/// # Errors
/// The directory cannot be opened, the old entry removed or the new file written.
pub fn replace_file_in(dir: &Path, name: &str, contents: &[u8], mode: u32) -> std::io::Result<()> {
    let dir_fd = open_dir(dir)?;
    let owner = fstat(&dir_fd)?;
    for _ in 0..5 {
        match unlinkat(&dir_fd, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => return Err(e.into()),
        }
        let fd = match openat(
            &dir_fd,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(0o600),
        ) {
            Ok(fd) => fd,
            // Planted again between the unlink and the create: once more.
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(e.into()),
        };
        let mut file = File::from(fd);
        file.write_all(contents)?;
        if nix::unistd::geteuid().is_root() {
            fchown(
                &file,
                Some(nix::unistd::Uid::from_raw(owner.st_uid)),
                Some(nix::unistd::Gid::from_raw(owner.st_gid)),
            )?;
        }
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        return Ok(());
    }
    Err(std::io::Error::from(Errno::EEXIST))
}

/// The run's directory of the job's user: `{state_dir}/spool/{job_id}.{run}`, made (mode
/// 0700, `user`'s) when missing. It holds the batch script, the scratch working
/// directory (`work/`, made by the job itself) and the signal reason file.
pub fn user_dir_path(settings: &LaunchSettings, job_id: i64, run: u32) -> PathBuf {
    settings
        .state_dir
        .join("spool")
        .join(format!("{job_id}.{run}"))
}

/// Makes (or finds) [`user_dir_path`]: made by root in `spool/` (which only root may
/// write) and handed to `user`; one found must already be `user`'s (or root's, then
/// handed over).
///
/// # Errors
/// [`WorkerError::Io`] when it cannot be made, or belongs to someone else.
pub fn user_dir(
    settings: &LaunchSettings,
    job_id: i64,
    run: u32,
    user: Option<&JobUser>,
) -> Result<PathBuf, WorkerError> {
    let spool = settings.state_dir.join("spool");
    if !spool.is_dir() {
        ensure_dir(&spool, SPOOL_MODE)?;
    }
    let dir = user_dir_path(settings, job_id, run);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("create the job's directory", &dir)(e)),
    }
    let fd = open_dir(&dir).map_err(errno("open the job's directory", &dir))?;
    hand_over(&fd, &dir, user)?;
    Ok(dir)
}

/// Gives directory `fd` (at `path`) to `user`, mode 0700, when it is the worker's (just
/// made); leaves one already `user`'s as it is; refuses one that belongs to anyone else.
fn hand_over(fd: &OwnedFd, path: &Path, user: Option<&JobUser>) -> Result<(), WorkerError> {
    let stat = fstat(fd).map_err(errno("inspect", path))?;
    let me = nix::unistd::geteuid().as_raw();
    let want = user.map_or(me, |u| u.uid.as_raw());
    if stat.st_uid == want && want != me {
        return Ok(());
    }
    if stat.st_uid != me {
        return Err(WorkerError::Io {
            action: "use the job's directory",
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("it belongs to uid {}, not to the job's user", stat.st_uid),
            ),
        });
    }
    nix::sys::stat::fchmod(fd, Mode::from_bits_truncate(0o700))
        .map_err(errno("set the mode of", path))?;
    if let Some(user) = user {
        fchown(fd, Some(user.uid), Some(user.gid)).map_err(|source| WorkerError::Chown {
            path: path.to_path_buf(),
            user: user.name.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The job's checkpoint directory, `{checkpoint_root}/{job_id}` (`BERTH_CHECKPOINT_DIR`),
/// `user`'s with mode 0700, made when missing (the root too, mode 0711). The root may be
/// shared storage others can write: whatever else is found under the job's name (a link,
/// a file) is removed and replaced, never followed; a directory that belongs to someone
/// other than `user` (planted by another user who guessed the job's id) is moved aside,
/// untouched, to `.{job_id}.taken-by-uid-{uid}.{seconds}` and a fresh one made, so that no
/// one can make another tenant's job fail, or its node drain, by planting directories.
///
/// # Errors
/// [`WorkerError::Io`] when it cannot be made, or belongs to someone else.
pub fn checkpoint_dir(
    settings: &LaunchSettings,
    job_id: i64,
    user: Option<&JobUser>,
) -> Result<PathBuf, WorkerError> {
    let root = &settings.checkpoint_root;
    if !root.exists() {
        ensure_dir(root, STATE_DIR_MODE)?;
    }
    let dir = root.join(job_id.to_string());
    let root_fd = nix::fcntl::open(
        root.as_path(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno("open the checkpoint root", root))?;
    let name = job_id.to_string();
    for _ in 0..5 {
        match nix::sys::stat::mkdirat(&root_fd, name.as_str(), Mode::from_bits_truncate(0o700)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(errno("create the checkpoint directory", &dir)(e)),
        }
        match openat(
            &root_fd,
            name.as_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => {
                let owner = fstat(&fd).map_err(errno("inspect", &dir))?.st_uid;
                let me = nix::unistd::geteuid().as_raw();
                if owner != me && user.is_none_or(|u| u.uid.as_raw() != owner) {
                    drop(fd);
                    let aside = format!(
                        ".{name}.taken-by-uid-{owner}.{}",
                        chrono::Utc::now().timestamp()
                    );
                    tracing::warn!(path = %dir.display(), uid = owner, aside = %aside,
                        "another user's directory stands where the job's checkpoint directory goes; moving it aside");
                    match nix::fcntl::renameat(&root_fd, name.as_str(), &root_fd, aside.as_str()) {
                        Ok(()) | Err(Errno::ENOENT) => continue,
                        Err(e) => return Err(errno("move aside what was in place of", &dir)(e)),
                    }
                }
                hand_over(&fd, &dir, user)?;
                return Ok(dir);
            }
            // A link or a file planted under the job's name: removed, never followed.
            Err(Errno::ELOOP | Errno::ENOTDIR) => {
                tracing::warn!(path = %dir.display(), "replacing what was found in place of the checkpoint directory");
                match unlinkat(&root_fd, name.as_str(), UnlinkatFlags::NoRemoveDir) {
                    Ok(()) | Err(Errno::ENOENT) => {}
                    Err(e) => return Err(errno("remove what was in place of", &dir)(e)),
                }
            }
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(errno("open the checkpoint directory", &dir)(e)),
        }
    }
    Err(errno("create the checkpoint directory", &dir)(
        Errno::EEXIST,
    ))
}

/// How long a run's records (`jobs/{job}.{run}/`) and its user's directory
/// (`spool/{job}.{run}/`, the scratch `work/` among it) stay on the node once everything
/// in them is reported: time for an operator to look, and no room for a user to keep
/// files on the worker's disk for good.
pub const FINISHED_RUN_RETENTION: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the directories of runs that are over: not in `live` (the runs this worker
/// supervises, batch shells and step tasks), their batch record (`run.json`) and every
/// step task's record reported, the last of those reports older than `retention`. The
/// user's directory goes too, and one left without records. Returns the runs removed.
///
/// Removing a directory tree of the job's user as root never follows a link in it
/// (`std::fs::remove_dir_all` works through directory descriptors).
pub fn sweep_finished_runs(
    state_dir: &Path,
    live: &std::collections::HashSet<(i64, u32)>,
    retention: std::time::Duration,
) -> Vec<(i64, u32)> {
    let parse = |name: &std::ffi::OsStr| -> Option<(i64, u32)> {
        let (job, run) = name.to_str()?.split_once('.')?;
        Some((job.parse().ok()?, run.parse().ok()?))
    };
    let now = std::time::SystemTime::now();
    let old = |path: &Path| {
        std::fs::symlink_metadata(path)
            .and_then(|m| m.modified())
            .is_ok_and(|at| now.duration_since(at).unwrap_or_default() >= retention)
    };
    // A run directory is over when every record in it is reported, long enough ago.
    let over = |dir: &Path| -> bool {
        let files = crate::launch::RunFiles::new(dir);
        if files.record.exists() && !(files.reported.exists() && old(&files.reported)) {
            return false;
        }
        let tasks = std::fs::read_dir(dir.join("tasks"))
            .into_iter()
            .flatten()
            .flatten();
        for task in tasks {
            let files = crate::launch::RunFiles::new(&task.path());
            let recorded = task.path().join("task.json").exists();
            if recorded && !(files.reported.exists() && old(&files.reported)) {
                return false;
            }
        }
        old(dir)
    };
    let mut removed = Vec::new();
    let jobs = state_dir.join("jobs");
    for entry in std::fs::read_dir(&jobs).into_iter().flatten().flatten() {
        let Some(key) = parse(&entry.file_name()) else {
            continue;
        };
        if live.contains(&key) || !over(&entry.path()) {
            continue;
        }
        let spool = state_dir.join("spool").join(entry.file_name());
        let gone = [entry.path(), spool]
            .iter()
            .all(|dir| match std::fs::remove_dir_all(dir) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(e) => {
                    tracing::warn!(path = %dir.display(), error = %e, "could not remove a finished run's directory");
                    false
                }
            });
        if gone {
            removed.push(key);
        }
    }
    // User directories whose records are gone (removed above, or never made).
    for entry in std::fs::read_dir(state_dir.join("spool"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let Some(key) = parse(&entry.file_name()) else {
            continue;
        };
        if !live.contains(&key) && !jobs.join(entry.file_name()).exists() && old(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    removed.sort_unstable();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("berth-rundir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_replaced_file_never_follows_a_link_nor_writes_a_hard_linked_one() {
        let dir = test_dir("replace");
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let user = dir.join("user");
        std::fs::create_dir(&user).unwrap();
        std::os::unix::fs::symlink(&victim, user.join("reason")).unwrap();
        replace_file_in(&user, "reason", b"cancelled\n", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(user.join("reason")).unwrap(),
            "cancelled\n"
        );
        assert!(!std::fs::symlink_metadata(user.join("reason"))
            .unwrap()
            .file_type()
            .is_symlink());
        std::fs::remove_file(user.join("reason")).unwrap();
        std::fs::hard_link(&victim, user.join("reason")).unwrap();
        replace_file_in(&user, "reason", b"time_limit\n", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        // A directory linked in place of the user's directory is not entered.
        std::os::unix::fs::symlink(&dir, dir.join("linked")).unwrap();
        assert!(replace_file_in(&dir.join("linked"), "victim", b"x", 0o600).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_private_file_is_the_owners_alone() {
        let dir = test_dir("private");
        let path = dir.join("run.json");
        write_private(&path, b"{}").unwrap();
        write_private(&path, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn finished_runs_are_swept_after_their_retention_live_and_unreported_ones_stay() {
        let state = test_dir("sweep");
        let run = |name: &str, reported: bool| {
            let dir = state.join("jobs").join(name);
            std::fs::create_dir_all(dir.join("tasks/0.0")).unwrap();
            std::fs::write(dir.join("run.json"), "{}").unwrap();
            std::fs::write(dir.join("tasks/0.0/task.json"), "{}").unwrap();
            if reported {
                std::fs::write(dir.join("reported"), "").unwrap();
                std::fs::write(dir.join("tasks/0.0/reported"), "").unwrap();
            }
            let spool = state.join("spool").join(name);
            std::fs::create_dir_all(spool.join("work")).unwrap();
            std::fs::write(spool.join("work/kept"), "data").unwrap();
            // A link in the user's directory: removed, never followed.
            std::os::unix::fs::symlink(state.join("precious"), spool.join("link")).unwrap();
        };
        std::fs::write(state.join("precious"), "root's").unwrap();
        run("1.0", true);
        run("2.0", false);
        run("3.0", true);
        std::fs::create_dir_all(state.join("spool/4.0")).unwrap();
        let live = std::collections::HashSet::from([(3, 0)]);
        let none = sweep_finished_runs(&state, &live, std::time::Duration::from_secs(3600));
        assert!(none.is_empty(), "all too recent: {none:?}");
        let swept = sweep_finished_runs(&state, &live, std::time::Duration::ZERO);
        assert_eq!(swept, vec![(1, 0)]);
        assert!(!state.join("jobs/1.0").exists() && !state.join("spool/1.0").exists());
        assert!(
            state.join("jobs/2.0").exists(),
            "unreported: kept for adoption"
        );
        assert!(state.join("spool/3.0/work/kept").exists(), "live: kept");
        assert!(!state.join("spool/4.0").exists(), "no records: swept");
        assert_eq!(
            std::fs::read_to_string(state.join("precious")).unwrap(),
            "root's"
        );
    }

    #[test]
    fn a_state_directory_must_be_the_workers_own() {
        use std::os::unix::fs::PermissionsExt;
        let base = test_dir("statedir");
        let own = base.join("own");
        prepare_state_dir(&own).unwrap();
        let mode = std::fs::metadata(&own).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, STATE_DIR_MODE);
        assert!(own.join("jobs").is_dir() && own.join("journal").is_dir());
        // A link of the worker's own user to its directory is followed.
        let link = base.join("link");
        std::os::unix::fs::symlink(&own, &link).unwrap();
        prepare_state_dir(&link).unwrap();
        // So is a directory everyone may write.
        let open = base.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(prepare_state_dir(&open).is_err());
        // And, where the test may give it away, one of another user.
        if nix::unistd::geteuid().is_root() {
            let theirs = base.join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            let err = prepare_state_dir(&theirs).unwrap_err();
            assert!(
                err.chain().contains("belongs to uid 65534"),
                "{}",
                err.chain()
            );
            // A link another user planted, even to a directory of the worker's.
            let planted = base.join("planted");
            std::os::unix::fs::symlink(&own, &planted).unwrap();
            nix::unistd::fchownat(
                nix::fcntl::AT_FDCWD,
                &planted,
                Some(nix::unistd::Uid::from_raw(65534)),
                None,
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap();
            let err = prepare_state_dir(&planted).unwrap_err();
            assert!(err.chain().contains("link of uid 65534"), "{}", err.chain());
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
