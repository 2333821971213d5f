//! `srun --pty`: an interactive shell on a compute node, driven through a real
//! pseudo-terminal as a user at a terminal would (Python's `pty` runs `srun` and types),
//! and the `POST /v1/jobs/{id}/steps/{step}/input` operation it rests on.

use crate::cluster::{Options, TestCluster};
use berth_core::auth::Role;
use berth_core::state::JobState;
use berth_core::step::{StepList, StepState};
use reqwest::Method;
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// Where a terminal's commands run: the cluster's directory, api and (admin) token.
#[derive(Clone)]
struct Terminal {
    dir: PathBuf,
    url: String,
    token: String,
}

impl Terminal {
    fn of(c: &TestCluster) -> Terminal {
        Terminal {
            dir: c.dir.clone(),
            url: c.url.clone(),
            token: c.token.clone(),
        }
    }
}

/// Plays `conversation` with `COMMAND ARGS` (`srun`, `sattach`: the binary through a link
/// of that name) on a pseudo-terminal: each entry waits (up to 60 s) until the screen
/// shows `expect` after what the previous entries saw, then resizes the terminal
/// (`resize`: rows, columns) and/or types `send`. Returns (the command's exit code, the
/// screen, whether it gave the terminal its settings back).
fn on_a_terminal(
    c: &Terminal,
    command: &str,
    args: &[&str],
    conversation: serde_json::Value,
) -> (i32, String, bool) {
    let bin = c.dir.join("slurm-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join(command);
    if !link.exists() {
        std::os::unix::fs::symlink(crate::cluster::berth_bin(), &link).unwrap();
    }
    const DRIVER: &str = r#"
import fcntl, json, os, pty, select, struct, sys, termios, time
argv = sys.argv[1:-1]
steps = json.loads(sys.argv[-1])
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
before = termios.tcgetattr(fd)
seen = b""
mark = 0
deadline = time.time() + 180
def read(timeout):
    global seen
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return True
    try:
        data = os.read(fd, 65536)
    except OSError:
        return False
    if not data:
        return False
    seen += data
    return True
alive = True
for step in steps:
    want = step.get("expect", "").encode()
    until = time.time() + 60
    while alive and want not in seen[mark:] and time.time() < until:
        alive = read(0.2)
    if want not in seen[mark:]:
        sys.stderr.write("DRIVER: never saw %r\n" % want)
        break
    mark = seen.index(want, mark) + len(want)
    if "resize" in step:
        rows, cols = step["resize"]
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        time.sleep(1.5)
    if "pause" in step:
        time.sleep(step["pause"])
    if "send" in step:
        os.write(fd, step["send"].encode())
status = None
while alive and time.time() < deadline:
    alive = read(0.5)
    done, code = os.waitpid(pid, os.WNOHANG)
    if done:
        status = code
        while read(0.2):
            pass
        break
after = termios.tcgetattr(fd)
if status is None:
    _, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode("utf-8", "replace"))
sys.stdout.write("\nDRIVER: restored=%s\n" % (after[3] == before[3] and after[0] == before[0]))
sys.exit(os.waitstatus_to_exitcode(status))
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(DRIVER)
        .arg(&link)
        .args(args)
        .arg(conversation.to_string())
        .current_dir(&c.dir)
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &c.token)
        .env("HOME", &c.dir)
        .env("XDG_CONFIG_HOME", c.dir.join("config"))
        .env("TERM", "xterm")
        .env_remove("SLURM_JOB_ID")
        .output()
        .unwrap();
    let screen =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let restored = screen.contains("DRIVER: restored=True");
    (out.status.code().unwrap_or(-1), screen, restored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn srun_pty_gives_an_interactive_shell_on_a_node() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let (code, screen, restored) = on_a_terminal(
        &Terminal::of(&c),
        "srun",
        &["--pty", "-t", "5", "bash", "--norc", "--noprofile", "-i"],
        json!([
            // bash's own prompt, then one the test knows (typed split, so that its echo
            // does not show it).
            {"expect": "bash", "send": "PS1='p''ty$ '\r"},
            {"expect": "pty$ ", "send": "echo $((6*7)) on=$SLURMD_NODENAME job=$SLURM_JOB_ID; tty\r"},
            // The typed line comes back (the remote terminal echoes it), then its output.
            {"expect": "42 on=node-1 job=", "resize": [50, 132], "send": "stty size\r"},
            {"expect": "50 132", "send": "sleep 60\r", },
            // Ctrl-C reaches the remote terminal, which interrupts the foreground sleep.
            {"expect": "sleep 60", "pause": 1.5, "send": "\u{3}"},
            {"expect": "pty$ ", "send": "echo after-$((1+1))\r"},
            {"expect": "after-2", "send": "exit 3\r"},
        ]),
    );
    assert_eq!(code, 3, "srun exits with the shell's code:\n{screen}");
    assert!(restored, "srun left the terminal in raw mode:\n{screen}");
    assert!(
        screen.contains("/dev/pts/"),
        "no terminal on the node:\n{screen}"
    );
    assert!(!screen.contains("DRIVER: never saw"), "{screen}");
    let id: i64 = screen
        .split("job=")
        .filter_map(|rest| {
            rest.split(|ch: char| !ch.is_ascii_digit())
                .next()
                .and_then(|w| w.parse().ok())
        })
        .next()
        .unwrap_or_else(|| panic!("no job id:\n{screen}"));
    let job = c.wait_ended(id, 60).await;
    assert_eq!(
        (job.state, job.exit_code),
        (JobState::Failed, Some(3)),
        "{job:?}"
    );
    let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
    assert_eq!(steps.items.len(), 1, "{steps:?}");
    let step = &steps.items[0];
    assert!(step.pty, "{step:?}");
    assert_eq!((step.state, step.exit_code), (StepState::Failed, Some(3)));
    // What was typed is not kept once the node has it.
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM step_input WHERE job_id = $1")
        .bind(id)
        .fetch_one(&c.db().await)
        .await
        .unwrap();
    assert_eq!(left, 0, "input left behind");

    // Without a terminal, --pty is disregarded as Slurm's srun does: the step runs with
    // its output printed as usual.
    let (code, stdout, stderr) = c.slurm_command("srun", &c.token, &["--pty", "echo", "plain"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("srun: error: Not using a pseudo-terminal, disregarding --pty option"),
        "{stderr}"
    );
    assert_eq!(stdout.trim(), "plain");
}

/// `sattach --pty JOB.STEP`: a second terminal attached to an `srun --pty` shell types
/// into it and sees its screen (from its start); both end with the shell's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sattach_pty_attaches_a_second_terminal_to_an_srun_pty_shell() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let first = Terminal::of(&c);
    let srun = tokio::task::spawn_blocking(move || {
        on_a_terminal(
            &first,
            "srun",
            &["--pty", "-t", "5", "bash", "--norc", "--noprofile", "-i"],
            // The prompt is typed split, so that its echo does not show it.
            json!([
                {"expect": "bash", "send": "PS1='p''ty$ '\r"},
                {"expect": "from-5-sattach"},
            ]),
        )
    });
    // The job srun made, and its --pty step, once running.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let (id, step) = loop {
        let jobs: serde_json::Value = c.get("/v1/jobs?state=RUNNING").await;
        if let Some(id) = jobs["items"][0]["id"].as_i64() {
            let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
            if let Some(s) = steps
                .items
                .iter()
                .find(|s| s.pty && s.state == StepState::Running)
            {
                break (id, s.step_id);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no running --pty step"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let second = Terminal::of(&c);
    let target = format!("{id}.{step}");
    let (code, screen, restored) = tokio::task::spawn_blocking(move || {
        on_a_terminal(
            &second,
            "sattach",
            &["--pty", &target],
            json!([
                {"expect": "pty$ ", "send": "echo from-$((2+3))-sattach\r"},
                {"expect": "from-5-sattach", "send": "exit 4\r"},
            ]),
        )
    })
    .await
    .unwrap();
    assert!(!screen.contains("DRIVER: never saw"), "{screen}");
    assert_eq!(code, 4, "sattach exits with the shell's code:\n{screen}");
    assert!(restored, "sattach left the terminal in raw mode:\n{screen}");
    let (code, screen, restored) = srun.await.unwrap();
    assert_eq!(code, 4, "srun ends with the same shell:\n{screen}");
    assert!(screen.contains("from-5-sattach"), "{screen}");
    assert!(restored, "{screen}");

    // The step has ended: nothing to attach to; a step without --pty has no terminal.
    let (code, _, stderr) =
        c.slurm_command("sattach", &c.token, &["--pty", &format!("{id}.{step}")]);
    assert_eq!(code, 1);
    assert!(stderr.contains("has ended"), "{stderr}");
    let plain = c.submit("#!/bin/bash\nsrun sleep 60\n", &[]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let steps: StepList = c.get(&format!("/v1/jobs/{plain}/steps")).await;
        if steps.items.iter().any(|s| s.state == StepState::Running) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the step never ran");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (code, _, stderr) = c.slurm_command("sattach", &c.token, &["--pty", &format!("{plain}.0")]);
    assert_eq!(code, 1);
    assert!(stderr.contains("was not started with --pty"), "{stderr}");
    let (code, _, stderr) = c.slurm_command(
        "sattach",
        &c.token,
        &["--pty", "--output-filter=0", &format!("{plain}.0")],
    );
    assert_eq!(code, 1);
    assert!(stderr.contains("not compatible"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_input_is_for_the_jobs_user_and_its_pty_steps() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let id = c
        .submit("#!/bin/bash\n#SBATCH -n 1 -t 5\nsrun sleep 60\n", &[])
        .await;
    let mut tries = 0;
    loop {
        let steps: StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
        if !steps.items.is_empty() {
            break;
        }
        tries += 1;
        assert!(tries < 600, "the step never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let path = format!("/v1/jobs/{id}/steps/0/input");
    let owner = c.token.clone();
    let input = |data: &str| json!({"data": data});
    // Not a --pty step: nothing to type into.
    let (status, body) = c
        .call(Method::POST, &path, Some(&owner), Some(input("bHMK")))
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "step_not_interactive", "{body}");
    assert!(
        body["detail"].as_str().unwrap_or("").contains("--pty"),
        "{body}"
    );
    // Bad fields are named.
    for (bad, field) in [
        (json!({"data": "not base64!"}), "data"),
        (json!({"rows": 40}), "cols"),
        (json!({"rows": 0, "cols": 80}), "rows"),
        (json!({}), "data"),
        (json!({"data": "bHMK", "extra": 1}), ""),
    ] {
        let (status, body) = c
            .call(Method::POST, &path, Some(&owner), Some(bad.clone()))
            .await;
        assert_eq!(status, 400, "{bad}: {body}");
        if !field.is_empty() {
            assert_eq!(body["field"], field, "{bad}: {body}");
        }
    }
    // Another tenant does not see the job; an operator may not type as its user.
    let other = c.token_for("mallory", Role::User);
    let (status, _) = c
        .call(Method::POST, &path, Some(&other), Some(input("bHMK")))
        .await;
    assert_eq!(status, 404);
    let operator = c.token_for("olga", Role::Operator);
    let (status, body) = c
        .call(Method::POST, &path, Some(&operator), Some(input("bHMK")))
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/steps/7/input"),
            Some(&owner),
            Some(input("bHMK")),
        )
        .await;
    assert_eq!(status, 404);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM step_input")
        .fetch_one(&c.db().await)
        .await
        .unwrap();
    assert_eq!(stored, 0, "refused input was stored");
    let _ = c
        .call(
            Method::POST,
            &format!("/v1/jobs/{id}/cancel"),
            Some(&owner),
            None,
        )
        .await;
}
