use super::*;

/// A queue job with every field given a value, and one with every optional field empty.
fn jobs() -> [QueueJob; 2] {
    let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
    let full = QueueJob {
        id: 12,
        name: "train".into(),
        user: "vera".into(),
        account: Some("ml".into()),
        partition: "gpu".into(),
        qos: Some("high".into()),
        state: JobState::Running,
        reason: Some("None".into()),
        submit_time: t("2026-12-01T10:00:00Z"),
        start_time: Some(t("2026-12-01T10:05:00Z")),
        end_time: Some(t("2026-12-01T11:05:00Z")),
        time_limit: Some(3600),
        num_nodes: 2,
        num_tasks: 16,
        num_cpus: 32,
        gpus_per_node: 8,
        nodelist: Some("gpu-[1-2]".into()),
        work_dir: Some("/home/vera".into()),
        restart_count: 1,
        exit_code: Some(0),
        exit_signal: Some(9),
        expected_start: Some(t("2026-12-01T10:04:00Z")),
        priority: Some(7),
        nice: -5,
        array_job_id: Some(10),
        array_task_id: Some(2),
        array_tasks_pending: Some("3-9".into()),
        array_max_running: Some(2),
    };
    let empty = QueueJob {
        account: None,
        qos: None,
        reason: None,
        start_time: None,
        end_time: None,
        time_limit: None,
        nodelist: None,
        work_dir: None,
        exit_code: None,
        exit_signal: None,
        expected_start: None,
        priority: None,
        array_job_id: None,
        array_task_id: None,
        array_tasks_pending: None,
        array_max_running: None,
        ..full.clone()
    };
    [full, empty]
}

#[test]
fn every_field_written_sparsely_is_the_job_as_it_serializes() {
    for job in jobs() {
        let sparse = SparseQueueJob {
            job: &job,
            fields: QueueFields::ALL,
        };
        assert_eq!(
            serde_json::to_string(&sparse).unwrap(),
            serde_json::to_string(&job).unwrap()
        );
    }
}

#[test]
fn a_sparse_job_carries_id_state_and_the_fields_named() {
    let [job, _] = jobs();
    let fields = QueueFields::parse("name, partition,,start_time").unwrap();
    let text = serde_json::to_string(&SparseQueueJob { job: &job, fields }).unwrap();
    assert_eq!(
        text,
        r#"{"id":12,"name":"train","partition":"gpu","state":"RUNNING","start_time":"2026-12-01T10:05:00Z"}"#
    );
    // It reads back with the other fields at their defaults.
    let back: QueueJob = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (back.id, back.state, back.name.as_str()),
        (12, JobState::Running, "train")
    );
    assert_eq!(
        (back.user.as_str(), back.num_nodes, back.account),
        ("", 0, None)
    );
    assert_eq!(back.submit_time, DateTime::<Utc>::default());
    assert!(fields.contains("partition") && fields.contains("id"));
    assert!(!fields.contains("user") && !fields.contains("nonsense"));
}

#[test]
fn a_name_that_is_no_field_is_refused_by_name() {
    let err = QueueFields::parse("name,script").unwrap_err();
    assert!(
        err.starts_with("\"script\" is not a field of a queue job (one of id, name,"),
        "{err}"
    );
    assert_eq!(
        QueueFields::parse("").unwrap(),
        QueueFields::parse("id,state").unwrap()
    );
}
