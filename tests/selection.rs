//! What a job asks for, checked at submission against the nodes of its partitions:
//! CPUs and memory per node beyond every node (422 naming the option and the largest
//! node's value, also as the CLI prints it), unknown `--constraint` features, `-w`/`-x`
//! naming nodes that do not exist or leaving too few, `-p a,b` (shown as the list while
//! pending, the partition it started in once running) and the partitions' memory cap.
//!
//! Nodes report what the machine has (CPUs, memory), so every amount here is derived from
//! what `GET /v1/nodes` says rather than fixed.

use crate::cluster::{Options, TestCluster};
use berth_core::state::JobState;
use berth_core::wire::NodeList;
use serde_json::json;

const SCRIPT: &str = "#!/bin/sh\ntrue\n";

async fn cluster() -> TestCluster {
    TestCluster::start(Options {
        workers: 2,
        gpus: "2xH100",
        ..Default::default()
    })
    .await
}

/// The largest CPU count and memory (MiB) of the cluster's nodes.
async fn largest(c: &TestCluster) -> (u32, u64) {
    let nodes: NodeList = c.get("/v1/nodes").await;
    (
        nodes.items.iter().map(|n| n.cpus).max().unwrap(),
        nodes.items.iter().map(|n| n.memory_mib).max().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpus_and_memory_no_node_has_are_refused_naming_the_option() {
    let c = cluster().await;
    let (cpus, mem) = largest(&c).await;
    assert!(cpus >= 1 && mem >= 1, "nodes report CPUs and memory");

    let too_many = (cpus + 1).to_string();
    let (status, p) = c.try_submit(SCRIPT, &["-c", &too_many]).await.unwrap_err();
    assert_eq!(status, 422, "{p:?}");
    assert_eq!(p.field.as_deref(), Some("--cpus-per-task"));
    assert_eq!(
        p.detail,
        format!(
            "-c {too_many}: no node of partition gpu has {too_many} CPUs (the largest has {cpus})"
        )
    );
    // Tasks per node multiply: as many one-CPU tasks per node as a node has CPUs, plus one.
    let (status, p) = c
        .try_submit(SCRIPT, &["--ntasks-per-node", &too_many])
        .await
        .unwrap_err();
    assert_eq!(status, 422, "{p:?}");
    assert_eq!(p.field.as_deref(), Some("--ntasks-per-node"), "{p:?}");
    // --cpus-per-gpu × GPUs per node.
    let per_gpu = (cpus / 2 + 1).to_string();
    let (status, p) = c
        .try_submit(SCRIPT, &["--gpus-per-node=2", "--cpus-per-gpu", &per_gpu])
        .await
        .unwrap_err();
    assert_eq!(status, 422, "{p:?}");
    assert_eq!(p.field.as_deref(), Some("--cpus-per-gpu"), "{p:?}");
    // What a node has is accepted.
    c.submit(SCRIPT, &["-c", &cpus.to_string(), "-H"]).await;

    let too_much = format!("{}M", mem + 1);
    let (status, p) = c
        .try_submit(SCRIPT, &["--mem", &too_much])
        .await
        .unwrap_err();
    assert_eq!(status, 422, "{p:?}");
    assert_eq!(p.field.as_deref(), Some("--mem"));
    assert!(
        p.detail.contains(&format!("(the largest has {mem} MiB)")),
        "{p:?}"
    );
    let (status, p) = c
        .try_submit(SCRIPT, &["--mem-per-cpu", &too_much])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (422, Some("--mem-per-cpu")),
        "{p:?}"
    );

    // The CLI prints the problem, naming the option.
    let (code, _, err) = c.cli(&c.token, &["submit", "-c", &too_many, "--wrap", "true"]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!(
            "-c {too_many}: no node of partition gpu has {too_many} CPUs"
        )),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constraints_and_node_lists_are_checked_against_the_nodes() {
    let c = cluster().await;

    // A feature no node has, and a malformed expression (with its position).
    let (status, p) = c
        .try_submit(SCRIPT, &["--constraint=nosuch"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (422, Some("--constraint")),
        "{p:?}"
    );
    assert!(p.detail.contains("\"nosuch\""), "{p:?}");
    let (status, p) = c.try_submit(SCRIPT, &["-C", "a|(b"]).await.unwrap_err();
    assert_eq!(status, 400, "{p:?}");
    assert!(p.detail.contains("position 5"), "{p:?}");

    // Features a node has are accepted, in Slurm's grammar; a feature no node has is
    // named, even as one alternative of `|` (as in Slurm).
    let (code, out, err) = c.cli(&c.token, &["node", "set", "node-1", "Features=h100,ib"]);
    assert_eq!(code, 0, "{out}{err}");
    c.submit(SCRIPT, &["-C", "(h100|ib)&ib", "-H"]).await;
    c.submit(SCRIPT, &["-C", "[h100|ib]", "-H"]).await;
    let (status, p) = c
        .try_submit(SCRIPT, &["-C", "h100|nvlink"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (422, Some("--constraint")),
        "{p:?}"
    );
    assert!(p.detail.contains("\"nvlink\""), "{p:?}");
    // Only node-1 has ib: a two-node job needing it on every node cannot run.
    let (status, p) = c
        .try_submit(SCRIPT, &["-C", "ib", "-N", "2"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (422, Some("--constraint")),
        "{p:?}"
    );
    c.submit(SCRIPT, &["-C", "ib*1", "-N", "2", "-H"]).await;

    // -w: a node that does not exist; more nodes than -N; -w and -x together.
    let (status, p) = c.try_submit(SCRIPT, &["-w", "node-9"]).await.unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (400, Some("--nodelist")),
        "{p:?}"
    );
    assert!(p.detail.contains("no node named node-9"), "{p:?}");
    let (status, p) = c
        .try_submit(SCRIPT, &["-w", "node-[1-2]", "-N", "1"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (400, Some("--nodelist")),
        "{p:?}"
    );
    let (status, p) = c
        .try_submit(SCRIPT, &["-w", "node-1", "-x", "node-1"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (400, Some("--exclude")),
        "{p:?}"
    );
    // -x leaving nothing.
    let (status, p) = c
        .try_submit(SCRIPT, &["-x", "node-[1-2]"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (422, Some("--exclude")),
        "{p:?}"
    );
    // Without -N, -w sets the node count (as in Slurm); the lists are kept.
    let id = c.submit(SCRIPT, &["-w", "node-[1-2]", "-H"]).await;
    let job = c.job(id).await;
    assert_eq!(job.num_nodes, 2);
    assert_eq!(job.spec.nodelist.as_deref(), Some("node-[1-2]"));

    // -w naming a node outside the partition.
    let (status, _) = c
        .call(
            reqwest::Method::PUT,
            "/v1/partitions/small",
            Some(&c.token),
            Some(json!({ "nodes": ["node-2"] })),
        )
        .await;
    assert_eq!(status, 201);
    let (status, p) = c
        .try_submit(SCRIPT, &["-p", "small", "-w", "node-1"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (400, Some("--nodelist")),
        "{p:?}"
    );
    assert!(p.detail.contains("not in partition small"), "{p:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_listing_partitions_shows_them_while_pending_and_starts_in_one() {
    let c = cluster().await;
    let (status, _) = c
        .call(
            reqwest::Method::PUT,
            "/v1/partitions/small",
            Some(&c.token),
            Some(json!({ "nodes": ["node-2"], "max_mem_per_node": 1000 })),
        )
        .await;
    assert_eq!(status, 201);
    let (status, p) = c
        .try_submit(SCRIPT, &["-p", "gpu,nosuch"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (400, Some("--partition")),
        "{p:?}"
    );
    // The first listed partition's MaxMemPerNode holds.
    let (status, p) = c
        .try_submit(SCRIPT, &["-p", "small,gpu", "--mem=2000"])
        .await
        .unwrap_err();
    assert_eq!((status, p.field.as_deref()), (422, Some("--mem")), "{p:?}");
    assert_eq!(
        p.detail,
        "--mem: partition small: 2000 MiB per node is more than the partition allows \
         (MaxMemPerNode=1000 MiB)"
    );

    // squeue shows the list while the job is pending (held here).
    let held = c.submit(SCRIPT, &["-p", "small,gpu", "-H"]).await;
    assert_eq!(c.job(held).await.partition, "small,gpu");
    let (_, rows) = c
        .call(
            reqwest::Method::GET,
            "/v1/jobs?partition=gpu",
            Some(&c.token),
            None,
        )
        .await;
    assert!(
        rows["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["id"] == json!(held)),
        "a job listing gpu among its partitions is in gpu's queue: {rows}"
    );

    // Once it runs, it is in the first listed partition that holds its node.
    let id = c
        .submit("#!/bin/sh\nsleep 30\n", &["-p", "small,gpu", "--gpus=1"])
        .await;
    let job = c.wait_for(id, 60, |j| j.state == JobState::Running).await;
    let node = job.allocations[0].node.clone();
    let expected = if node == "node-2" { "small" } else { "gpu" };
    assert_eq!(job.partition, expected, "started on {node}");

    // --time-min longer than the time limit is refused.
    let (status, p) = c
        .try_submit(SCRIPT, &["-t", "10", "--time-min", "20"])
        .await
        .unwrap_err();
    assert_eq!(
        (status, p.field.as_deref()),
        (400, Some("--time-min")),
        "{p:?}"
    );
}

/// Where jobs run: `-w` gets the named node, `-x` never the excluded one, `--constraint`
/// only nodes with the feature, `[a|b]` a gang of one kind, and a lower `Weight` is
/// filled first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_lists_constraints_and_weights_pick_the_nodes() {
    let c = TestCluster::start(Options {
        workers: 3,
        gpus: "2xH100",
        ..Default::default()
    })
    .await;
    for (node, settings) in [
        ("node-1", "Features=ib Weight=5"),
        ("node-2", "Features=eth Weight=5"),
        ("node-3", "Features=ib Weight=1"),
    ] {
        let mut args = vec!["node", "set", node];
        args.extend(settings.split(' '));
        let (code, out, err) = c.cli(&c.token, &args);
        assert_eq!(code, 0, "{out}{err}");
    }
    let nodes_of = |job: &berth_core::wire::Job| -> Vec<String> {
        job.allocations.iter().map(|a| a.node.clone()).collect()
    };
    let run = |args: &'static [&'static str]| {
        let c = &c;
        async move {
            let id = c.submit(SCRIPT, args).await;
            let job = c.wait_ended(id, 60).await;
            assert_eq!(job.state, JobState::Completed, "{args:?}: {job:?}");
            job
        }
    };
    // Weight before best fit: the weight-1 node takes a plain job.
    assert_eq!(nodes_of(&run(&["--gpus=1"]).await), ["node-3"]);
    assert_eq!(nodes_of(&run(&["-w", "node-2"]).await), ["node-2"]);
    assert_eq!(nodes_of(&run(&["-x", "node-3,node-1"]).await), ["node-2"]);
    assert_eq!(nodes_of(&run(&["--constraint=eth"]).await), ["node-2"]);
    let mut gang = nodes_of(&run(&["-N", "2", "--constraint=[ib|eth]"]).await);
    gang.sort();
    assert_eq!(
        gang,
        ["node-1", "node-3"],
        "both ib: the only kind with two nodes"
    );
    let mut two = nodes_of(&run(&["-N", "2", "-w", "node-2"]).await);
    two.sort();
    assert!(two.contains(&"node-2".to_string()), "{two:?}");
}

/// Constraints no set of the job's nodes can meet together (a count over more nodes than
/// have the feature, a matching OR with no kind enough for the gang) are refused at
/// submission, as is an expression nested or long enough to be an attack; so is a zero
/// memory per CPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constraints_no_nodes_meet_together_are_refused() {
    let c = cluster().await;
    let (code, out, err) = c.cli(&c.token, &["node", "set", "node-1", "Features=h100,ib"]);
    assert_eq!(code, 0, "{out}{err}");
    for args in [
        &["-C", "ib*2"][..],
        &["-N", "2", "-C", "ib*2"],
        &["-N", "2", "-C", "[h100|ib]"],
    ] {
        let (status, p) = c.try_submit(SCRIPT, args).await.unwrap_err();
        assert_eq!(
            (status, p.field.as_deref()),
            (422, Some("--constraint")),
            "{args:?}: {p:?}"
        );
        assert!(p.detail.contains("satisfy"), "{p:?}");
    }
    // Met: one ib node among two.
    c.submit(SCRIPT, &["-N", "2", "-C", "ib*1", "-H"]).await;
    let deep = format!("{}ib{}", "(".repeat(2000), ")".repeat(2000));
    let (status, p) = c.try_submit(SCRIPT, &["-C", &deep]).await.unwrap_err();
    assert_eq!(status, 400);
    assert!(
        p.field.as_deref().is_some_and(|f| f.starts_with("-C")),
        "{p:?}"
    );
    assert!(p.detail.contains("at most 1024"), "{}", p.detail);
    // The api itself refuses one given over REST (no sbatch parsing on the way).
    let (status, answer) = c
        .call(
            reqwest::Method::POST,
            "/v1/jobs",
            Some(&c.token),
            Some(serde_json::json!({
                "script": SCRIPT,
                "spec": {"constraint": format!("{}ib{}", "(".repeat(300), ")".repeat(300))}
            })),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["detail"].as_str().unwrap_or("").contains("nested"),
        "{answer}"
    );
    let (status, p) = c
        .try_submit(SCRIPT, &["--mem-per-cpu=0"])
        .await
        .unwrap_err();
    assert_eq!(p.field.as_deref(), Some("--mem-per-cpu"), "{status} {p:?}");
    // The api still answers.
    c.submit(SCRIPT, &["-C", "ib", "-H"]).await;
}
