//! `sbcast SOURCE DEST`: copies a file to every node of the job's allocation, as the job's
//! user. The file travels in job steps (one task per node, `--overlap`): each step carries
//! up to [`STEP_BYTES`] of it, base64 in its environment, which the task's shell decodes
//! and appends to `DEST.sbcast-NODE`; the last step renames it to DEST (with the source's
//! mode and times under `-p`). A file of N MiB takes about N steps, a second or so each:
//! meant for scripts, configurations and binaries of tens of MiB, not datasets.

use crate::client::Client;
use crate::srun::{create_step, follow_step, Follow, SrunArgs};
use anyhow::{bail, Context};
use base64::Engine;
use berth_core::step::StepCreate;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

/// The most bytes of the file one step carries (base64 in environment variables of at
/// most 96 KiB each, well under Linux's 128 KiB per variable and 2 MiB in all).
pub const STEP_BYTES: usize = 1024 * 1024;
/// Bytes of the file per environment variable (96 KiB of base64).
const VARIABLE_BYTES: usize = 72 * 1024;

/// sbcast's options (Slurm's names).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SbcastArgs {
    /// -f/--force: replace DEST where it exists (else a node where it exists fails).
    #[arg(short = 'f', long)]
    pub force: bool,
    /// -p/--preserve: keep the source's modification and access times and its mode.
    #[arg(short = 'p', long)]
    pub preserve: bool,
    /// -j/--jobid: the job (default: $SLURM_JOB_ID).
    #[arg(short = 'j', long)]
    pub jobid: Option<i64>,
    /// -C/--compress[=LIB]: accepted; the file is not compressed in transit.
    #[arg(short = 'C', long, num_args = 0..=1, require_equals = true, default_missing_value = "lz4")]
    pub compress: Option<String>,
    /// -F/--fanout: accepted; every node is reached through the api.
    #[arg(short = 'F', long)]
    pub fanout: Option<u32>,
    /// -s/--size: accepted; the file travels in steps of 1 MiB.
    #[arg(short = 's', long)]
    pub size: Option<String>,
    /// -t/--timeout: accepted; the api's own timeouts apply.
    #[arg(short = 't', long)]
    pub timeout: Option<u32>,
    /// --exclude=NONE|PATHS (for --send-libs): refused with --send-libs.
    #[arg(long)]
    pub send_libs: bool,
    /// The file to copy.
    pub source: String,
    /// Where each node gets it (absolute, or relative to srun's working directory there).
    pub dest: String,
}

/// A shell word for `text`, single-quoted.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The program one step's tasks run: append this part (in `SBCAST_0…`) to the temporary
/// file, and on the last part put it in place.
fn part_program(
    dest: &str,
    first: bool,
    last: bool,
    parts: usize,
    force: bool,
    mode: Option<u32>,
    times: Option<(i64, i64)>,
) -> String {
    let dest_q = quote(dest);
    // One temporary file per node: where DEST is on storage the nodes share, each node
    // still writes a whole file of its own and the last rename wins.
    let tmp_q = format!("{}\"$SLURMD_NODENAME\"", quote(&format!("{dest}.sbcast-")));
    let mut p = String::from("set -e\numask 077\n");
    if first {
        if !force {
            p.push_str(&format!(
                "if [ -e {dest_q} ]; then echo \"sbcast: $SLURMD_NODENAME: \"{dest_q}\" exists (use -f to replace it)\" >&2; exit 1; fi\n"
            ));
        }
        p.push_str(&format!(": > {tmp_q}\n"));
    }
    p.push('{');
    for i in 0..parts {
        p.push_str(&format!(" printf %s \"$SBCAST_{i}\";"));
    }
    p.push_str(&format!(" }} | base64 -d >> {tmp_q}\n"));
    if last {
        let mode = mode.unwrap_or(0o644);
        p.push_str(&format!("chmod {mode:o} {tmp_q}\n"));
        if let Some((mtime, atime)) = times {
            p.push_str(&format!(
                "touch -m -d @{mtime} {tmp_q}\ntouch -a -d @{atime} {tmp_q}\n"
            ));
        }
        p.push_str(&format!("mv -f {tmp_q} {dest_q}\n"));
    }
    p
}

/// Runs sbcast: copies SOURCE to DEST on each node of the allocation; 0 when every node
/// has it.
///
/// # Errors
/// Outside an allocation, an unreadable source, refused options, a step the api refuses.
pub async fn run(client: &Client, args: &SbcastArgs) -> anyhow::Result<i32> {
    if args.send_libs {
        bail!("sbcast: --send-libs: shared libraries are not gathered here; copy each with sbcast");
    }
    let job_id = match args.jobid {
        Some(id) => id,
        None => std::env::var("SLURM_JOB_ID")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .context("sbcast: error: no allocation (SLURM_JOB_ID is not set): run it inside a job, or give -j")?,
    };
    let data = std::fs::read(&args.source)
        .with_context(|| format!("sbcast: error: Can't open `{}`", args.source))?;
    let meta = std::fs::metadata(&args.source)?;
    let mode = args.preserve.then_some(meta.mode() & 0o7777);
    let times = args.preserve.then_some((meta.mtime(), meta.atime()));
    let work_dir = std::env::current_dir()
        .ok()
        .map(|d| d.display().to_string());
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[][..]]
    } else {
        data.chunks(STEP_BYTES).collect()
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let count = chunks.len();
    // One task per node: as many tasks as the job has nodes.
    let nodes = client.job_get(job_id).await?.num_nodes.max(1);
    for (index, chunk) in chunks.iter().enumerate() {
        let mut environment = BTreeMap::new();
        let pieces: Vec<&[u8]> = if chunk.is_empty() {
            vec![&[][..]]
        } else {
            chunk.chunks(VARIABLE_BYTES).collect()
        };
        for (i, piece) in pieces.iter().enumerate() {
            environment.insert(format!("SBCAST_{i}"), engine.encode(piece));
        }
        let program = part_program(
            &args.dest,
            index == 0,
            index + 1 == count,
            pieces.len(),
            args.force,
            mode,
            times,
        );
        let request = StepCreate {
            command: vec!["/bin/sh".into(), "-c".into(), program, "sbcast".into()],
            ntasks: Some(nodes),
            ntasks_per_node: Some(1),
            overlap: true,
            work_dir: work_dir.clone(),
            environment,
            ..Default::default()
        };
        let step = create_step(client, job_id, &request).await?;
        let code = follow_step(
            client,
            &SrunArgs::default(),
            job_id,
            &step,
            Follow::Own { limit: None },
        )
        .await?;
        if code != 0 {
            eprintln!("sbcast: error: copying {} failed on some node", args.source);
            return Ok(code);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_programs_append_then_put_the_file_in_place() {
        let dir = std::env::temp_dir().join(format!("sbcast-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("it's here.bin").display().to_string();
        let engine = base64::engine::general_purpose::STANDARD;
        let run = |program: String, parts: &[&[u8]]| {
            let mut cmd = std::process::Command::new("/bin/sh");
            cmd.args(["-c", &program, "sbcast"])
                .env("SLURMD_NODENAME", "node-1");
            for (i, p) in parts.iter().enumerate() {
                cmd.env(format!("SBCAST_{i}"), engine.encode(p));
            }
            cmd.output().unwrap()
        };
        let out = run(
            part_program(&dest, true, false, 2, false, None, None),
            &[b"ab", b"cd"],
        );
        assert!(out.status.success(), "{out:?}");
        let out = run(
            part_program(
                &dest,
                false,
                true,
                1,
                false,
                Some(0o750),
                Some((1_000_000_000, 1_000_000_000)),
            ),
            &[b"ef\n"],
        );
        assert!(out.status.success(), "{out:?}");
        assert_eq!(std::fs::read(&dest).unwrap(), b"abcdef\n");
        let meta = std::fs::metadata(&dest).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o750);
        assert_eq!(meta.mtime(), 1_000_000_000);
        // Without -f an existing file is not replaced.
        let out = run(
            part_program(&dest, true, true, 1, false, None, None),
            &[b"x"],
        );
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("exists (use -f"));
        assert_eq!(std::fs::read(&dest).unwrap(), b"abcdef\n");
        let out = run(
            part_program(&dest, true, true, 1, true, None, None),
            &[b"x"],
        );
        assert!(out.status.success());
        assert_eq!(std::fs::read(&dest).unwrap(), b"x");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
