use super::*;

fn spec(types: &[(&str, &str)], zones: &[&str]) -> PoolSpec {
    let types: Vec<serde_json::Value> = types
        .iter()
        .map(|(n, g)| serde_json::json!({"name": n, "gpus": g, "cpus": 32, "memory": "256G"}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "provider": "local", "max_nodes": 4, "instance_types": types, "zones": zones
    }))
    .unwrap()
}

#[test]
fn a_capacity_error_moves_to_the_next_zone_then_type() {
    let s = spec(
        &[("big", "8xH100"), ("bigger", "8xH200"), ("small", "4xH100")],
        &["a", "b"],
    );
    let mut cooled = HashSet::new();
    let c = candidates(&s, "big", &cooled);
    let names: Vec<(&str, Option<&str>)> = c
        .iter()
        .map(|(i, z, _)| (s.instance_types[*i].name.as_str(), z.as_deref()))
        .collect();
    // The smaller type never stands in for the planned one.
    assert_eq!(
        names,
        [
            ("big", Some("a")),
            ("big", Some("b")),
            ("bigger", Some("a")),
            ("bigger", Some("b"))
        ]
    );
    cooled.insert(("big".to_string(), "a".to_string()));
    cooled.insert(("big".to_string(), "b".to_string()));
    assert_eq!(preferred_type(&s, &cooled).as_deref(), Some("bigger"));
    let c = candidates(&s, "big", &cooled);
    assert_eq!(s.instance_types[c[0].0].name, "bigger");
}

use crate::planner::{self, NodeView, PendingJob, PlannerConfig, RunningAlloc, Snapshot};

/// A cluster of one busy 8-GPU node (its job ends at `busy_until`) and pool `burst`'s
/// four powered-down 8-GPU slots (expected boot 5 s), with `pending` queued.
fn cluster(busy_until: i64, pending: Vec<PendingJob>) -> (Arc<Cloud>, Snapshot, Vec<SlotView>) {
    let now = 1_000_000;
    let gpus: Vec<(u32, String)> = (0..8).map(|i| (i, "H100".to_string())).collect();
    let node = |id: i64, name: &str, available: bool| NodeView {
        id,
        name: name.into(),
        available,
        gpus: gpus.clone(),
        cpus: 32,
        memory_mib: 262_144,
        weight: 1,
        ..Default::default()
    };
    let mut nodes = vec![node(1, "static-1", true)];
    let mut slots = Vec::new();
    for i in 1..=4 {
        nodes.push(node(10 + i, &format!("burst-{i}"), false));
        slots.push(SlotView {
            id: 10 + i,
            name: format!("burst-{i}"),
            pool: "burst".into(),
            state: "POWERED_DOWN".into(),
            launched_at: None,
        });
    }
    let snapshot = Snapshot {
        now,
        nodes,
        running: vec![RunningAlloc {
            job_id: 1,
            node_id: 1,
            gpus: (0..8).collect(),
            cpus: 8,
            mem_mib: 1024,
            exclusive: false,
            end: Some(now + busy_until),
        }],
        pending,
        ..Default::default()
    };
    let cloud = Cloud::new(CloudSettings::default());
    cloud.shared().pools.insert(
        "burst".into(),
        PoolPlanning {
            offerable: true,
            expected_boot: 5,
            instance_type: "sim-8xh100".into(),
            market: Some(Market::OnDemand),
            launch_budget: 20,
            max_nodes: 4,
        },
    );
    (cloud, snapshot, slots)
}

fn job(id: i64, nodes: u32) -> PendingJob {
    PendingJob {
        id,
        submit_time: 999_000,
        nodes,
        gpus_per_node: 8,
        cpus: nodes,
        cpus_per_node: 1,
        time_limit: Some(600),
        user: "u".into(),
        account: "a".into(),
        qos: "normal".into(),
        ..Default::default()
    }
}

fn intents(busy_until: i64, pending: Vec<PendingJob>) -> (Vec<LaunchIntent>, planner::Plan) {
    let (cloud, mut snapshot, slots) = cluster(busy_until, pending);
    cloud.adjust_snapshot(&mut snapshot, &slots);
    let mut plan = planner::plan(&snapshot, &PlannerConfig::default());
    let intents = cloud.launch_intents(&mut plan, snapshot.now, &slots);
    (intents, plan)
}

#[test]
fn a_job_is_launched_for_only_when_a_new_node_starts_it_sooner() {
    // The busy node frees in an hour: a slot is launched, the job starts after the boot.
    let (launches, plan) = intents(3600, vec![job(2, 1)]);
    assert_eq!(launches.len(), 1);
    assert_eq!(launches[0].nodes, ["burst-1"]);
    assert_eq!(launches[0].job_id, Some(2));
    assert_eq!(plan.waiting(2).unwrap().expected_start, Some(1_000_005));
    assert!(
        plan.starts.is_empty(),
        "nothing starts on a node still booting"
    );
    // It frees in 3 s, before a new node could boot: no launch, the job waits for it.
    let (launches, plan) = intents(3, vec![job(2, 1)]);
    assert!(launches.is_empty(), "{launches:?}");
    assert_eq!(plan.waiting(2).unwrap().expected_start, Some(1_000_003));
}

#[test]
fn a_gang_is_launched_whole_in_one_launch() {
    let (launches, _) = intents(3600, vec![job(2, 2), job(3, 1)]);
    assert_eq!(launches.len(), 2, "{launches:?}");
    assert_eq!(launches[0].nodes, ["burst-1", "burst-2"]);
    assert_eq!(launches[0].job_id, Some(2));
    assert_eq!(launches[1].nodes, ["burst-3"]);
}

#[test]
fn a_pool_that_cannot_launch_offers_nothing() {
    let (cloud, mut snapshot, slots) = cluster(3600, vec![job(2, 1)]);
    cloud.shared().pools.get_mut("burst").unwrap().offerable = false;
    cloud.adjust_snapshot(&mut snapshot, &slots);
    let mut plan = planner::plan(&snapshot, &PlannerConfig::default());
    assert!(cloud
        .launch_intents(&mut plan, snapshot.now, &slots)
        .is_empty());
    assert_eq!(plan.waiting(2).unwrap().expected_start, Some(1_003_600));
}

#[test]
fn backoff_doubles_to_ten_minutes() {
    assert_eq!(backoff(1), Duration::from_secs(30));
    assert_eq!(backoff(2), Duration::from_secs(60));
    assert_eq!(backoff(5), Duration::from_secs(480));
    assert_eq!(backoff(9), Duration::from_secs(600));
}
