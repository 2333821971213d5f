//! squeue as Slurm users type it (issue 15): with the binary linked as `squeue`,
//! `squeue -h -j ID -o %i` prints the id, an array's tasks print as `ID_1`, `ID_2` with
//! `-r` (and as `ID_[1-3]` without, `ID_[1-6%2]` with a limit), `--me`, `-A`, `-l`,
//! `-t all`, `-O` field names with sizes and alignment, `-S` orders, `-i` repeats, `-s`
//! lists a running job's steps, and an unknown `-o` letter, `-O` name or job id is
//! refused by name.

use crate::cluster::{Options, TestCluster};
use std::io::BufRead;

/// Runs `squeue ARGS` (a link to `berth` named `squeue`) with `token`.
fn squeue(c: &TestCluster, token: &str, args: &[&str]) -> (i32, String, String) {
    c.slurm_command("squeue", token, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squeue_takes_slurms_job_selection_format_and_array_options() {
    // No worker: everything stays pending.
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let one = c.submit("#!/bin/bash\ntrue\n", &["-J", "single"]).await;
    let array = c
        .submit("#!/bin/bash\ntrue\n", &["-J", "sweep", "--array=1-3"])
        .await;
    let other = c.token_for("olga", berth_core::auth::Role::User);
    let theirs = c.submit_as("olga", "#!/bin/bash\ntrue\n", &[], &[]).await;

    // The acceptance line: the id alone, no header.
    let (code, out, err) = squeue(&c, &t, &["-h", "-j", &one.to_string(), "-o", "%i"]);
    assert_eq!(
        (code, out.as_str()),
        (0, format!("{one}\n").as_str()),
        "{err}"
    );
    // An array's pending tasks: one line `ID_[1-3]`, or one per task with -r.
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &array.to_string(), "-o", "%i"]);
    assert_eq!(out, format!("{array}_[1-3]\n"));
    let (_, out, _) = squeue(&c, &t, &["-h", "-r", "-j", &array.to_string(), "-o", "%i"]);
    assert_eq!(out, format!("{array}_1\n{array}_2\n{array}_3\n"));
    // One pending task the master still holds, named alone or beside another job.
    let task = format!("{array}_2");
    let (code, out, err) = squeue(&c, &t, &["-h", "-j", &task, "-o", "%i"]);
    assert_eq!(
        (code, out.as_str()),
        (0, format!("{task}\n").as_str()),
        "{err}"
    );
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &format!("{task},{one}"), "-o", "%i"]);
    let mut listed: Vec<&str> = out.lines().collect();
    listed.sort();
    let mut expected = vec![one.to_string(), task.clone()];
    expected.sort();
    assert_eq!(listed, expected);
    let (code, _, err) = squeue(&c, &t, &["-h", "-j", &format!("{array}_7")]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid job id specified"), "{err}");
    // scontrol shows such a task as Slurm does: the master's record, which holds it.
    let (code, out, err) = c.slurm_command("scontrol", &t, &["show", "job", &task]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "JobId={array} ArrayJobId={array} ArrayTaskId=1-3 JobName=sweep"
        )),
        "{out}"
    );
    let (code, _, err) = c.slurm_command("scontrol", &t, &["show", "job", &format!("{array}_7")]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid job id specified"), "{err}");
    // The default columns show them so too.
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &array.to_string()]);
    assert!(
        out.trim_start().starts_with(&format!("{array}_[1-3] ")),
        "{out}"
    );
    // A format with widths and a header; -l's long format.
    let (_, out, _) = squeue(&c, &t, &["-j", &one.to_string(), "-o", "%.8i %j %T"]);
    assert_eq!(
        out,
        format!("   JOBID NAME STATE\n{:>8} single PENDING\n", one)
    );
    let (_, out, _) = squeue(&c, &t, &["-l", "-j", &one.to_string()]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        // squeue -l prints the date first (`Wed Dec  2 10:00:00 2026`); Slurm cuts
        // headers to their column too: `TIME_LIMI`.
        lines[0].ends_with(&chrono::Local::now().format("%Y").to_string())
            && lines[1].contains(" TIME_LIMI ")
            && lines[2].contains("PENDING"),
        "{out}"
    );
    // --me: the token's user only; -u names another.
    let (_, mine, _) = squeue(&c, &other, &["-h", "--me", "-o", "%A"]);
    assert_eq!(mine, format!("{theirs}\n"));
    let (_, out, _) = squeue(&c, &t, &["-h", "-u", "olga", "-o", "%A"]);
    assert_eq!(out, format!("{theirs}\n"));
    // -t all, -t PD; a job list naming no job fails as Slurm's does.
    let (_, out, _) = squeue(&c, &t, &["-h", "-t", "all", "-o", "%A"]);
    assert_eq!(out.lines().count(), 3, "{out}");
    let (code, _, err) = squeue(&c, &t, &["-h", "-j", "999999"]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid job id specified"), "{err}");
    // Refusals name what is wrong.
    let (code, _, err) = squeue(&c, &t, &["-o", "%W"]);
    assert_ne!(code, 0);
    assert!(err.contains("%W is not a field"), "{err}");
    let (code, _, err) = squeue(&c, &t, &["-j", "5x"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("\"5x\"") && err.contains("not a job id"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squeue_long_formats_sorts_array_limits_and_iterates() {
    let c = TestCluster::start(Options {
        workers: 0,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let a = c.submit("#!/bin/bash\ntrue\n", &["-J", "bravo"]).await;
    let b = c.submit("#!/bin/bash\ntrue\n", &["-J", "alpha"]).await;
    let limited = c
        .submit("#!/bin/bash\ntrue\n", &["-J", "charlie", "--array=1-6%2"])
        .await;
    let mine = format!("{a},{b},{limited}");

    // -O: 20 columns left-aligned by default, `:N` and `:.N` (right), a suffix.
    let (code, out, err) = squeue(
        &c,
        &t,
        &[
            "-j",
            &a.to_string(),
            "-O",
            "JobID:10,Name:.8,State,TimeLimit:.11",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{:<10}{:>8}{:<20}{:>11}\n{:<10}{:>8}{:<20}{:>11}\n",
            "JOBID", "NAME", "STATE", "TIME_LIMIT", a, "bravo", "PENDING", "1:00:00"
        )
    );
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &mine, "-O", "jobarrayid:|,name:|"]);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert!(
        rows.contains(&vec![format!("{limited}_[1-6%2]").as_str(), "charlie", ""]),
        "{out}"
    );
    let (code, _, err) = squeue(&c, &t, &["-O", "JobID,Bogus"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("\"Bogus\"") && err.contains("not a field Berth shows"),
        "{err}"
    );

    // The %N limit in array ids, with -o too.
    let (_, out, _) = squeue(&c, &t, &["-h", "-j", &limited.to_string(), "-o", "%i %K"]);
    assert_eq!(out, format!("{limited}_[1-6%2] 1-6%2\n"));

    // -S: by name, by name descending, by id descending.
    let names = |args: &[&str]| {
        let mut all = vec!["-h", "-j", &mine, "-o", "%j"];
        all.extend_from_slice(args);
        squeue(&c, &t, &all).1
    };
    assert_eq!(names(&["-S", "j"]), "alpha\nbravo\ncharlie\n");
    assert_eq!(names(&["-S", "-j"]), "charlie\nbravo\nalpha\n");
    assert_eq!(names(&["-S", "-i"]), "charlie\nalpha\nbravo\n");
    assert_eq!(names(&["-S", "+P,-A"]), "charlie\nalpha\nbravo\n");
    let (code, _, err) = squeue(&c, &t, &["-S", "W"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a field Berth sorts by"), "{err}");

    // -i 1: the table again each second, each time after a date line, until stopped.
    let bin = c.dir.join("slurm-bin").join("squeue");
    let mut child = std::process::Command::new(&bin)
        .args(["-i", "1", "-j", &a.to_string(), "-o", "%A"])
        .env("BERTH_URL", &c.url)
        .env("BERTH_TOKEN", &t)
        .env("HOME", &c.dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let year = chrono::Local::now().format("%Y").to_string();
    let mut seen = Vec::new();
    // Read until the third date line: two whole iterations printed.
    while seen.iter().filter(|l: &&String| l.ends_with(&year)).count() < 3 {
        match lines.next() {
            Some(Ok(line)) => seen.push(line),
            _ => break,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let first: Vec<&str> = seen.iter().take(4).map(String::as_str).collect();
    assert_eq!(
        first[1..],
        ["JOBID", a.to_string().as_str(), ""],
        "{seen:?}"
    );
    assert!(first[0].ends_with(&year), "{seen:?}");
    assert_eq!(seen[5..8], seen[1..4], "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squeue_steps_lists_a_running_jobs_steps() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let t = c.token.clone();
    let id = c
        .submit("#!/bin/bash\nsrun sleep 600\n", &["-J", "stepper"])
        .await;
    // Wait for the step to run.
    let mut running = false;
    for _ in 0..240 {
        let steps: berth_core::step::StepList = c.get(&format!("/v1/jobs/{id}/steps")).await;
        if steps
            .items
            .iter()
            .any(|s| s.state == berth_core::step::StepState::Running)
        {
            running = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    assert!(running, "the step never ran");
    let (code, out, err) = squeue(&c, &t, &["-s"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["STEPID", "NAME", "PARTITION", "USER", "TIME", "NODELIST"],
        "{out}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], format!("{id}.0"), "{out}");
    assert_eq!(row[1], "sleep", "{out}");
    assert_eq!(row[5], "node-1", "{out}");
    // Only the steps asked for: `-s ID.0` finds it, `-s ID.7` nothing.
    let (_, out, _) = squeue(&c, &t, &["-h", &format!("--steps={id}.0")]);
    assert_eq!(out.lines().count(), 1, "{out}");
    let (_, out, _) = squeue(&c, &t, &["-h", &format!("--steps={id}.7")]);
    assert_eq!(out, "");
    let (code, _, err) = squeue(&c, &t, &["--steps=x.1"]);
    assert_ne!(code, 0);
    assert!(err.contains("not a step id"), "{err}");
}

/// `GET /v1/queue` as `application/x-ndjson` with `token`: the status, the media type and
/// the body.
async fn queue_lines(c: &TestCluster, token: &str, query: &str) -> (u16, String, String) {
    let r = c
        .http
        .get(format!("{}/v1/queue?{query}", c.url))
        .header("accept", "application/x-ndjson")
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let media = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, media, r.text().await.unwrap())
}

fn jobs_of(lines: &str) -> Vec<berth_core::wire::QueueJob> {
    lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_streams_one_job_a_line_as_its_pages_list_them() {
    use berth_core::state::JobState;
    use berth_core::wire::QueueList;
    let c = TestCluster::start(Options::default()).await;
    let t = c.token.clone();
    let running = c
        .submit(
            "#!/bin/bash\nsleep 300\n",
            &["-J", "run", "--gres=gpu:2", "-c", "3"],
        )
        .await;
    c.wait_for(running, 60, |j| j.state == JobState::Running)
        .await;
    let script = "#!/bin/bash\ntrue\n";
    for i in 0..4 {
        c.submit(script, &["-H", "-J", &format!("held{i}")]).await;
    }
    let array = c.submit(script, &["-H", "--array=1-3%2"]).await;
    let theirs = c.submit_as("olga", script, &["-H"], &[]).await;

    // The JSON pages, two jobs a page.
    let mut paged = Vec::new();
    let mut cursor = String::new();
    loop {
        let page: QueueList = c.get(&format!("/v1/queue?limit=2{cursor}")).await;
        paged.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(paged.len(), 7, "{paged:?}");

    // The stream: the same jobs, one a line, in the same order.
    let (status, media, body) = queue_lines(&c, &t, "").await;
    assert_eq!(
        (status, media.as_str()),
        (200, "application/x-ndjson"),
        "{body}"
    );
    assert!(body.ends_with('\n'));
    let streamed = jobs_of(&body);
    assert_eq!(streamed, paged);
    let ids: Vec<i64> = streamed.iter().map(|j| j.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(ids.contains(&array) && ids.contains(&theirs));

    // A running job's line carries what its allocation holds, as GET /v1/jobs/{id} says.
    let line = streamed.iter().find(|j| j.id == running).unwrap();
    let job = c.job(running).await;
    assert!(line.nodelist.is_some());
    assert_eq!(
        (
            &line.nodelist,
            line.num_cpus,
            line.gpus_per_node,
            &line.partition
        ),
        (
            &job.nodelist,
            job.num_cpus,
            job.gpus_per_node,
            &job.partition
        )
    );
    assert_eq!(line.start_time, job.start_time);
    // A pending array's master: its tasks not started and its limit.
    let master = streamed.iter().find(|j| j.id == array).unwrap();
    assert_eq!(
        (
            master.array_tasks_pending.as_deref(),
            master.array_max_running
        ),
        (Some("1-3"), Some(2))
    );

    // `limit` bounds the lines; `cursor` (the last line's id) goes on from there.
    let (_, _, first) = queue_lines(&c, &t, "limit=3").await;
    let first = jobs_of(&first);
    assert_eq!(first, streamed[..3]);
    let (_, _, rest) = queue_lines(&c, &t, &format!("cursor={}", first[2].id)).await;
    assert_eq!(jobs_of(&rest), streamed[3..]);
    // The filters are the list's: the running job alone, and a plain user sees their own.
    let (_, _, body) = queue_lines(&c, &t, "state=RUNNING").await;
    assert_eq!(
        jobs_of(&body).iter().map(|j| j.id).collect::<Vec<_>>(),
        [running]
    );
    let olga = c.token_for("olga", berth_core::auth::Role::User);
    let (_, _, body) = queue_lines(&c, &olga, "").await;
    assert_eq!(
        jobs_of(&body).iter().map(|j| j.id).collect::<Vec<_>>(),
        [theirs]
    );
    // No job: an empty body, not an error.
    let (status, _, body) = queue_lines(&c, &t, "user=nobody").await;
    assert_eq!((status, body.as_str()), (200, ""));

    // `fields`: each line carries id, state and the fields named, with their values.
    let (status, _, body) = queue_lines(&c, &t, "fields=name,nodelist").await;
    assert_eq!(status, 200, "{body}");
    for (line, whole) in body.lines().zip(&streamed) {
        let sparse: serde_json::Value = serde_json::from_str(line).unwrap();
        let keys: Vec<&str> = sparse
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = vec!["id", "name", "state"];
        if whole.nodelist.is_some() {
            expected.push("nodelist");
        }
        let mut sorted = keys.clone();
        sorted.sort();
        expected.sort();
        assert_eq!(sorted, expected, "{line}");
        let read: berth_core::wire::QueueJob = serde_json::from_str(line).unwrap();
        assert_eq!(
            (read.id, read.state, &read.name, &read.nodelist),
            (whole.id, whole.state, &whole.name, &whole.nodelist)
        );
    }
    assert_eq!(body.lines().count(), streamed.len());
    // The JSON pages take it too.
    let page: serde_json::Value = c.get("/v1/queue?fields=user").await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 7);
    for item in items {
        let mut keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["id", "state", "user"], "{item}");
    }

    // Bad filters are refused by name, as problem documents, before anything streams.
    for (query, field) in [
        ("state=BOGUS", "state"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("fields=name,script", "fields"),
    ] {
        let (status, media, body) = queue_lines(&c, &t, query).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(media, "application/problem+json", "{query}");
        assert!(body.contains(field), "{query}: {body}");
    }
    let r = c
        .http
        .get(format!("{}/v1/queue?fields=script", c.url))
        .bearer_auth(&t)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let problem: serde_json::Value = r.json().await.unwrap();
    assert_eq!(problem["field"], "fields", "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("\"script\" is not a field"),
        "{problem}"
    );

    // squeue's default table asks for its fields only; what it prints is what it prints
    // from whole jobs (an explicit `-S` of the default order reads every field), but for
    // the running job's TIME, which may tick between the two.
    let without_time = |out: &str| -> Vec<String> {
        out.lines()
            .map(|l| {
                let chars: Vec<char> = l.chars().collect();
                let time = 50..60;
                chars
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !time.contains(i))
                    .map(|(_, c)| *c)
                    .collect()
            })
            .collect()
    };
    for extra in [&[][..], &["-r"], &["-t", "all"]] {
        let (code, sparse, err) = squeue(&c, &t, extra);
        assert_eq!(code, 0, "{err}");
        let whole_args: Vec<&str> = extra.iter().copied().chain(["-S", "P,t,-p"]).collect();
        let (code, whole, err) = squeue(&c, &t, &whole_args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(without_time(&sparse), without_time(&whole), "{extra:?}");
        assert!(sparse.lines().count() >= 8, "{sparse}");
        assert!(sparse.contains(&format!(" {running} ")), "{sparse}");
    }

    // squeue reads the stream: every job, the array's pending tasks as one line.
    let (code, out, err) = squeue(&c, &t, &["-h", "-o", "%i %T"]);
    assert_eq!(code, 0, "{err}");
    let shown: Vec<&str> = out.lines().collect();
    assert_eq!(shown.len(), 7, "{out}");
    assert!(
        shown.contains(&format!("{running} RUNNING").as_str()),
        "{out}"
    );
    assert!(
        shown.contains(&format!("{array}_[1-3%2] PENDING").as_str()),
        "{out}"
    );
}
