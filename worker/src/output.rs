//! Log shipping: each output file of a running job is tailed about every 500 ms from
//! where this run started writing (0 when the file was truncated, its earlier size when
//! appended to) and new bytes are uploaded as [`OutputChunk`]s of up to 64 KiB to
//! `POST /v1/jobs/{id}/output`. Offsets count bytes from where the run started, so a
//! repeated upload is harmless. A UTF-8 character is not split across chunks (except
//! at the very end of a file that ends in the middle of one). How much was uploaded is
//! kept next to the job's other files, so a restarted worker goes on from there. Step
//! tasks' output files are shipped the same way. When the job ends, the
//! tail reads to the end of the file and uploads the rest before the launcher reports
//! the exit: clients print output once the job is terminal.
//!
//! The worker reads output files as root, by the names the job gave: it ships only a
//! regular file (not a link to one, a FIFO or a device: `-o /dev/null` is simply not
//! shipped) that belongs to the job's user, opened without following a link and checked
//! again once open, so a job that swaps its output for a link (to `/etc/shadow`, another
//! tenant's file) or a FIFO gets nothing shipped and stalls nothing.

use crate::api::{ApiClient, Backoff};
use crate::WorkerError;
use berth_core::step::StepOutputUpload;
use berth_core::wire::{OutputChunk, OutputStream};
use std::io::SeekFrom;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::oneshot;

/// The most bytes uploaded in one chunk.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// How often a running job's output files are checked for new bytes.
pub const TAIL_INTERVAL: Duration = Duration::from_millis(500);
/// How often a `--pty` task's terminal output is checked: someone is typing and waits for
/// the echo.
pub const TERMINAL_TAIL_INTERVAL: Duration = Duration::from_millis(20);

/// Uploads output chunks to the api, retrying connection errors and 5xx answers with
/// backoff until they succeed. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OutputUploader {
    client: ApiClient,
}

impl OutputUploader {
    /// An uploader for the api at `api_url`, authenticating with the node `token`.
    ///
    /// # Errors
    /// [`WorkerError::Client`] when the HTTP client cannot be built.
    pub fn new(api_url: &str, token: &str) -> Result<Self, WorkerError> {
        Ok(OutputUploader {
            client: ApiClient::new(api_url, token)?,
        })
    }

    pub(crate) fn from_client(client: ApiClient) -> Self {
        OutputUploader { client }
    }

    /// Uploads one chunk of job `job_id`'s output, retrying until the api accepts it.
    ///
    /// # Errors
    /// [`WorkerError::Api`] when the api refuses the chunk for good (a 4xx other than
    /// 408/429); the chunk is then lost.
    pub async fn upload(&self, job_id: i64, chunk: &OutputChunk) -> Result<(), WorkerError> {
        self.post_until_accepted(job_id, &format!("/v1/jobs/{job_id}/output"), chunk)
            .await
    }

    /// Uploads one chunk of a step task's output (`POST /v1/jobs/{id}/steps/{step}/output`),
    /// retrying until the api accepts it.
    ///
    /// # Errors
    /// [`WorkerError::Api`] when the api refuses the chunk for good; it is then lost.
    pub async fn upload_step(
        &self,
        job_id: i64,
        step_id: u32,
        chunk: &StepOutputUpload,
    ) -> Result<(), WorkerError> {
        let path = format!("/v1/jobs/{job_id}/steps/{step_id}/output");
        self.post_until_accepted(job_id, &path, chunk).await
    }

    async fn post_until_accepted<B: serde::Serialize>(
        &self,
        job_id: i64,
        path: &str,
        body: &B,
    ) -> Result<(), WorkerError> {
        let mut backoff = Backoff::new();
        loop {
            match self.client.post_ignore(path, body).await {
                Ok(()) => return Ok(()),
                Err(err) if err.is_retryable() => {
                    let delay = backoff.next_delay();
                    tracing::warn!(
                        job.id = job_id,
                        error = %err.chain(),
                        retry_in_ms = delay.as_millis() as u64,
                        "output upload failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                }
                Err(err) => return Err(err),
            }
        }
    }
}

/// One output file of one job run (or of one step task: `step`), followed from `start`.
#[derive(Debug, Clone)]
pub(crate) struct OutputTail {
    pub(crate) job_id: i64,
    pub(crate) run: u32,
    /// The job's incarnation, put on every chunk.
    pub(crate) incarnation: Option<berth_core::wire::Incarnation>,
    /// A step task's output: (step id, task id), uploaded as [`StepOutputUpload`]s.
    pub(crate) step: Option<(u32, u32)>,
    pub(crate) stream: OutputStream,
    pub(crate) path: PathBuf,
    /// The file's size when the run started (where its output begins).
    pub(crate) start: u64,
    /// Where the count of bytes uploaded so far is kept (decimal), so that a worker
    /// restarted while the job runs goes on from there; `None`: from `start`.
    pub(crate) progress: Option<PathBuf>,
    /// The uid the file must belong to (the job's user, when it runs as its own);
    /// `None`: any owner (the job runs as the worker's user, or the file is the worker's).
    pub(crate) owner: Option<u32>,
    /// How often the file is checked for new bytes ([`TAIL_INTERVAL`], or
    /// [`TERMINAL_TAIL_INTERVAL`] for a terminal's output).
    pub(crate) interval: Duration,
}

/// Opens `path` for shipping when it is a regular file (no link followed, no FIFO or
/// device opened) of `owner` (when given): checked before opening (`lstat`) and again on
/// the open file (same file, still regular, same owner). `None` otherwise.
pub(crate) fn open_shippable(path: &std::path::Path, owner: Option<u32>) -> Option<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let before = std::fs::symlink_metadata(path).ok()?;
    if !before.is_file() || owner.is_some_and(|uid| before.uid() != uid) {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let after = file.metadata().ok()?;
    let same = after.is_file()
        && after.dev() == before.dev()
        && after.ino() == before.ino()
        && owner.is_none_or(|uid| after.uid() == uid);
    same.then_some(file)
}

impl OutputTail {
    /// Uploads new bytes every `interval` until `stop` fires (or its sender is
    /// dropped), then uploads everything left and returns.
    pub(crate) async fn follow(self, uploader: OutputUploader, mut stop: oneshot::Receiver<()>) {
        let mut sent: u64 = self
            .progress
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        let mut stopping = false;
        loop {
            self.ship(&uploader, &mut sent, stopping).await;
            if stopping {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.interval) => {}
                _ = &mut stop => stopping = true,
            }
        }
    }

    /// Reads what was written past `start + sent` and uploads it in chunks. Unless
    /// `last`, an incomplete UTF-8 character at the end waits for the next round.
    async fn ship(&self, uploader: &OutputUploader, sent: &mut u64, last: bool) {
        let mut file = match open_shippable(&self.path, self.owner) {
            Some(file) => tokio::fs::File::from_std(file),
            None => {
                tracing::debug!(job.id = self.job_id, path = %self.path.display(), "output file not shipped: not a regular file of the job's user");
                return;
            }
        };
        let mut buf = vec![0u8; CHUNK_BYTES];
        loop {
            if file
                .seek(SeekFrom::Start(self.start + *sent))
                .await
                .is_err()
            {
                return;
            }
            let mut filled = 0;
            while filled < buf.len() {
                match file.read(&mut buf[filled..]).await {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(err) => {
                        tracing::warn!(job.id = self.job_id, path = %self.path.display(), error = %err, "could not read output file");
                        break;
                    }
                }
            }
            let len = if last {
                filled
            } else {
                utf8_complete_len(&buf[..filled])
            };
            if len == 0 {
                return;
            }
            let data = String::from_utf8_lossy(&buf[..len]).into_owned();
            let uploaded = match self.step {
                None => {
                    let chunk = OutputChunk {
                        run: self.run,
                        stream: self.stream,
                        offset: *sent,
                        data,
                        incarnation: self.incarnation,
                    };
                    uploader.upload(self.job_id, &chunk).await
                }
                Some((step_id, task_id)) => {
                    let chunk = StepOutputUpload {
                        run: self.run,
                        task_id,
                        stream: self.stream,
                        offset: *sent,
                        data,
                        incarnation: self.incarnation,
                    };
                    uploader.upload_step(self.job_id, step_id, &chunk).await
                }
            };
            if let Err(err) = uploaded {
                tracing::error!(
                    job.id = self.job_id,
                    stream = self.stream.as_str(),
                    offset = *sent,
                    error = %err.chain(),
                    "the api refused an output chunk; skipping it"
                );
            }
            *sent += len as u64;
            if let Some(progress) = &self.progress {
                let _ = crate::run_dir::write_private(progress, sent.to_string().as_bytes());
            }
            if len < filled || filled < buf.len() {
                // Caught up (or waiting for the rest of a character).
                return;
            }
        }
    }
}

/// The length of the longest prefix of `bytes` that does not end inside a UTF-8
/// character: an incomplete multi-byte sequence at the end is left out.
pub(crate) fn utf8_complete_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match byte {
            0x00..=0x7F => 1,
            _ if byte & 0xE0 == 0xC0 => 2,
            _ if byte & 0xF0 == 0xE0 => 3,
            _ if byte & 0xF8 == 0xF0 => 4,
            _ => 1, // not a lead byte: invalid anyway, send as is
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::{open_shippable, utf8_complete_len};

    #[test]
    fn only_a_regular_file_of_its_owner_is_shipped() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("berth-ship-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("out");
        std::fs::write(&out, "mine").unwrap();
        let me = std::fs::metadata(&out).unwrap().uid();
        assert!(open_shippable(&out, Some(me)).is_some());
        assert!(open_shippable(&out, None).is_some());
        assert!(open_shippable(&out, Some(me + 1)).is_none());
        let link = dir.join("link");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        assert!(open_shippable(&link, None).is_none());
        assert!(open_shippable(std::path::Path::new("/dev/null"), None).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn keeps_incomplete_characters_back() {
        let text = "añ€😀".as_bytes(); // 1 + 2 + 3 + 4 bytes
        assert_eq!(utf8_complete_len(text), text.len());
        assert_eq!(utf8_complete_len(&text[..2]), 1); // half of ñ
        assert_eq!(utf8_complete_len(&text[..3]), 3);
        assert_eq!(utf8_complete_len(&text[..5]), 3); // two thirds of €
        assert_eq!(utf8_complete_len(&text[..7]), 6); // first byte of 😀
        assert_eq!(utf8_complete_len(&text[..9]), 6); // three quarters of 😀
        assert_eq!(utf8_complete_len(b""), 0);
        assert_eq!(utf8_complete_len(b"plain"), 5);
    }
}
