//! `srun --pty`: task 0 of such a step runs in a pseudo-terminal.
//!
//! The shepherd (root) opens the terminal pair before it starts the task: the task's
//! stdin, stdout and stderr are the terminal's slave side (owned by the job's user, mode
//! 0620, as a login's terminal), which is its controlling terminal in a session of its
//! own; the shepherd alone holds the master side. A relay in the shepherd copies what the
//! terminal prints to the task's stdout file (root's, in the root-only task directory,
//! shipped to the api as any task's output) and feeds the terminal what the worker
//! appends to the task's input file, and resizes it when the worker rewrites its size
//! file (both root's files in that directory, [`PtyFiles`]). The worker learns the input
//! from its node sync ([`berth_core::step::PtyInput`]): only bytes the job's user typed
//! (`POST /v1/jobs/{id}/steps/{step}/input`) reach the terminal, and nothing of them is
//! read by anything running as root but the relay, which copies them unread.

use base64::Engine as _;
use berth_core::step::PtyInput;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the relay looks for new input and a new size.
const INPUT_POLL: Duration = Duration::from_millis(10);
/// The terminal's size until the user's arrives: rows, columns.
const DEFAULT_SIZE: (u16, u16) = (24, 80);

/// The files through which the worker feeds a task's terminal (in the shepherd's spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtyFiles {
    /// What the user typed, appended in order (`pty.in`, root's, mode 0600).
    pub input: PathBuf,
    /// The terminal's size as `ROWS COLS` (`pty.size`, root's, mode 0600), rewritten whole.
    pub size: PathBuf,
    /// The highest input sequence number appended to `input` (`pty.seq`), so that a
    /// restarted worker appends nothing twice.
    pub applied: PathBuf,
}

impl PtyFiles {
    /// The files of the task directory `dir`.
    pub fn new(dir: &Path) -> Self {
        PtyFiles {
            input: dir.join("pty.in"),
            size: dir.join("pty.size"),
            applied: dir.join("pty.seq"),
        }
    }

    /// The highest input sequence number applied (0: none yet).
    pub fn applied(&self) -> i64 {
        std::fs::read_to_string(&self.applied)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Applies one piece of input the api sent, unless it was applied already: appends
    /// its bytes to the input file, rewrites the size file when it carries a size, then
    /// records its sequence number. Returns whether it was new.
    ///
    /// # Errors
    /// The file that could not be written, or input that is not base64.
    pub fn apply(&self, input: &PtyInput) -> Result<bool, String> {
        if input.seq <= self.applied() {
            return Ok(false);
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(&input.data)
            .map_err(|e| format!("terminal input {} is not base64: {e}", input.seq))?;
        let failed = |path: &Path, e: std::io::Error| format!("writing {}: {e}", path.display());
        if !data.is_empty() {
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&self.input)
                .map_err(|e| failed(&self.input, e))?;
            file.write_all(&data).map_err(|e| failed(&self.input, e))?;
        }
        if let (Some(rows), Some(cols)) = (input.rows, input.cols) {
            crate::run_dir::write_private(&self.size, format!("{rows} {cols}\n").as_bytes())
                .map_err(|e| failed(&self.size, e))?;
        }
        crate::run_dir::write_private(&self.applied, input.seq.to_string().as_bytes())
            .map_err(|e| failed(&self.applied, e))?;
        Ok(true)
    }
}

/// Reads a size file: (rows, columns), each at least 1.
fn read_size(path: &Path) -> Option<(u16, u16)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let rows: u16 = words.next()?.parse().ok()?;
    let cols: u16 = words.next()?.parse().ok()?;
    (rows > 0 && cols > 0).then_some((rows, cols))
}

fn window(rows: u16, cols: u16) -> nix::pty::Winsize {
    nix::pty::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

fn set_cloexec(fd: &OwnedFd) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map(|_| ())
}

/// Opens a terminal pair for a task of `user` (`None`: the process's own user) at the
/// size the worker last wrote (else 24×80): (master, slave), both close-on-exec; the
/// slave is the user's, mode 0620.
///
/// # Errors
/// A message saying which step failed.
pub fn open(files: &PtyFiles, user: Option<&str>) -> Result<(OwnedFd, OwnedFd), String> {
    let (rows, cols) = read_size(&files.size).unwrap_or(DEFAULT_SIZE);
    let pair = nix::pty::openpty(Some(&window(rows, cols)), None)
        .map_err(|e| format!("opening a pseudo-terminal: {e}"))?;
    for fd in [&pair.master, &pair.slave] {
        set_cloexec(fd).map_err(|e| format!("setting up the pseudo-terminal: {e}"))?;
    }
    if let Some(user) = user {
        let account = nix::unistd::User::from_name(user)
            .ok()
            .flatten()
            .ok_or_else(|| format!("user {user} does not exist"))?;
        nix::unistd::fchown(&pair.slave, Some(account.uid), None)
            .map_err(|e| format!("giving the pseudo-terminal to {user}: {e}"))?;
    }
    nix::sys::stat::fchmod(&pair.slave, nix::sys::stat::Mode::from_bits_truncate(0o620))
        .map_err(|e| format!("setting the pseudo-terminal's mode: {e}"))?;
    Ok((pair.master, pair.slave))
}

/// Makes this process (the shepherd's exec stage, before anything else) the leader of a
/// new session whose controlling terminal is its stdin (the terminal's slave side).
///
/// # Errors
/// The failing call's error.
pub fn take_terminal() -> std::io::Result<()> {
    rustix::process::setsid()?;
    rustix::process::ioctl_tiocsctty(std::io::stdin())?;
    Ok(())
}

/// The shepherd's relay of one terminal: started once the task runs, finished once it
/// has ended.
pub struct Relay {
    output: std::thread::JoinHandle<()>,
    done: Arc<AtomicBool>,
}

impl Relay {
    /// Starts copying the terminal's output (the `master` side) to the end of `output`
    /// and the worker's input and size files to the terminal.
    ///
    /// # Errors
    /// The output file could not be opened.
    pub fn start(master: OwnedFd, files: &PtyFiles, output: &Path) -> Result<Relay, String> {
        let mut out = OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(output)
            .map_err(|e| format!("opening {}: {e}", output.display()))?;
        let master = Arc::new(File::from(master));
        let done = Arc::new(AtomicBool::new(false));
        let reader = master.clone();
        let output = std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match (&*reader).read(&mut buf) {
                    // EIO: no process holds the slave side any more.
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if out.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let feeder = master;
        let files = files.clone();
        let stop = done.clone();
        std::thread::spawn(move || feed(&feeder, &files, &stop));
        Ok(Relay { output, done })
    }

    /// Stops feeding input and waits up to `within` for the rest of the output (a
    /// process the task left in the background may hold the terminal open).
    pub fn finish(self, within: Duration) {
        self.done.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + within;
        while !self.output.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Feeds the terminal: new bytes of the input file, and the size file's size when it
/// changes, until `done`.
fn feed(master: &File, files: &PtyFiles, done: &AtomicBool) {
    let mut offset = 0u64;
    let mut size_stamp = None;
    let mut input: Option<File> = None;
    let mut buf = vec![0u8; 16 * 1024];
    while !done.load(Ordering::SeqCst) {
        if let Ok(meta) = std::fs::metadata(&files.size) {
            let stamp = (meta.mtime(), meta.mtime_nsec(), meta.size());
            if size_stamp != Some(stamp) {
                size_stamp = Some(stamp);
                if let Some((rows, cols)) = read_size(&files.size) {
                    // The kernel tells the terminal's foreground process group (SIGWINCH).
                    let _ = rustix::termios::tcsetwinsize(
                        master,
                        rustix::termios::Winsize {
                            ws_row: rows,
                            ws_col: cols,
                            ws_xpixel: 0,
                            ws_ypixel: 0,
                        },
                    );
                }
            }
        }
        if input.is_none() {
            input = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&files.input)
                .ok();
        }
        let mut fed = false;
        if let Some(file) = input.as_mut() {
            if file.seek(SeekFrom::Start(offset)).is_ok() {
                while let Ok(n) = file.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    // Blocks while the terminal's input queue is full (the task reads
                    // nothing): the bytes wait, in order.
                    if (&*master).write_all(&buf[..n]).is_err() {
                        return;
                    }
                    offset += n as u64;
                    fed = true;
                }
            }
        }
        if !fed {
            std::thread::sleep(INPUT_POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::step::StepTaskKey;

    /// A fresh directory of this test process.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("berth-pty-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn input(seq: i64, data: &[u8], size: Option<(u16, u16)>) -> PtyInput {
        PtyInput {
            key: StepTaskKey {
                job_id: 1,
                run: 0,
                step_id: 0,
                task_id: 0,
            },
            seq,
            data: base64::engine::general_purpose::STANDARD.encode(data),
            rows: size.map(|s| s.0),
            cols: size.map(|s| s.1),
        }
    }

    #[test]
    fn input_is_applied_once_and_in_order() {
        let dir = scratch("once");
        let files = PtyFiles::new(&dir);
        assert_eq!(files.applied(), 0);
        assert!(files.apply(&input(3, b"ls\r", None)).unwrap());
        assert!(files.apply(&input(5, b"", Some((50, 132)))).unwrap());
        // A sync answer repeated after a restart: nothing twice.
        assert!(!files.apply(&input(3, b"ls\r", None)).unwrap());
        assert!(files.apply(&input(9, b"exit\r", None)).unwrap());
        assert_eq!(std::fs::read(&files.input).unwrap(), b"ls\rexit\r");
        assert_eq!(read_size(&files.size), Some((50, 132)));
        assert_eq!(files.applied(), 9);
    }

    #[test]
    fn bad_sizes_are_ignored() {
        let path = scratch("sizes").join("size");
        for text in ["", "0 80", "24", "x y", "70000 80"] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(read_size(&path), None, "{text:?}");
        }
    }

    #[test]
    fn the_relay_carries_input_to_the_terminal_and_its_echo_back() {
        let dir = scratch("relay");
        let files = PtyFiles::new(&dir);
        let out = dir.join("stdout");
        std::fs::write(&out, b"").unwrap();
        let (master, slave) = open(&files, None).unwrap();
        // `cat` on the terminal: it echoes what is typed (the line discipline) and
        // prints each line again.
        let mut child = std::process::Command::new("cat")
            .stdin(std::process::Stdio::from(slave.try_clone().unwrap()))
            .stdout(std::process::Stdio::from(slave.try_clone().unwrap()))
            .stderr(std::process::Stdio::from(slave))
            .spawn()
            .unwrap();
        let relay = Relay::start(master, &files, &out).unwrap();
        files.apply(&input(1, b"hello\r", None)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&std::fs::read(&out).unwrap()).contains("hello\r\nhello")
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Ctrl-D at the start of a line: end of input for cat.
        files.apply(&input(2, b"\x04", None)).unwrap();
        assert!(child.wait().unwrap().success());
        relay.finish(Duration::from_secs(5));
        let text = String::from_utf8_lossy(&std::fs::read(&out).unwrap()).into_owned();
        assert!(text.contains("hello\r\nhello\r\n"), "{text:?}");
    }
}
