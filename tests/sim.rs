//! `berth sim`: the real binary replays a tiny trace through the planner and prints the
//! figures a user reads (JCT, wait, makespan, utilisation, planner time, first block).

use crate::cluster::berth_bin;
use std::process::Command;

/// One 4-GPU node; a 4-GPU job holds it 0–100 s, so the 2-GPU job (submitted at 10 s)
/// and the 1-GPU job (at 20 s) wait for it: JCT 100, 140, 100 s; waits 0, 90, 80 s;
/// makespan 150 s; 520 GPU-seconds of 600.
const TRACE: &str = "id,submit,nodes,gpus_per_node,duration\n\
                     1,0,1,4,100\n\
                     2,10,1,2,50\n\
                     3,20,1,1,20\n";

fn sim(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let trace = dir.join("tiny.csv");
    std::fs::write(&trace, TRACE).unwrap();
    Command::new(berth_bin())
        .args(["sim", "--format", "csv", "--trace"])
        .arg(&trace)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn berth_sim_replays_a_tiny_trace_and_prints_the_figures() {
    let dir = std::env::temp_dir().join(format!("berth-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = sim(&dir, &["--cluster", "1x4", "--policy", "fifo"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "cluster       1 nodes, 4 GPUs",
        "jobs          3 completed, 3 started, 0 never started",
        "JCT           avg 113 s, p95 140 s",
        "wait          avg 57 s, p95 90 s",
        "makespan      150 s",
        "GPU util      86.7%",
        "first block   at 10 s: 100.0% of GPUs allocated",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }
    assert!(text.contains("planner       "), "{text}");

    let out = sim(
        &dir,
        &["--cluster", "1x4", "--policy", "fifo-backfill", "--json"],
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policy"], "fifo-backfill");
    assert_eq!(v["summary"]["jobs"], 3);
    assert_eq!(v["summary"]["makespan"], 150.0);
    assert_eq!(v["summary"]["alloc_share_at_first_block"], 1.0);
    assert!(v["summary"]["passes"].as_u64().unwrap() >= 3);

    let out = sim(&dir, &["--cluster", "four"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cluster"));
    std::fs::remove_dir_all(&dir).ok();
}
