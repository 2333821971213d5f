use super::*;

#[test]
fn without_nvml_and_without_simulated_gpus_a_node_offers_none() {
    if nvml_available() {
        // A GPU machine: NVML decides.
        return;
    }
    let backend = detect_backend_for_node(None, "n").unwrap();
    assert_eq!(backend.kind(), "none");
    assert!(backend.inventory().is_empty());
    assert!(backend.sample(&[]).is_empty());
    let simulated = detect_backend_for_node(Some("2xA100"), "n").unwrap();
    assert_eq!(simulated.inventory().len(), 2);
}

#[test]
fn sharded_backend_splits_whole_gpus_and_maps_samples_errors_and_minors() {
    let dir = std::env::temp_dir().join(format!("berth-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let faults = dir.join("faults");
    std::fs::write(&faults, "xid 1 79\n").unwrap();
    let inner = SimulatedBackend::parse("2xH100/2", "n")
        .unwrap()
        .with_fault_file(&faults);
    let b = ShardedBackend::new(Box::new(inner), 3).unwrap();
    let inv = b.inventory();
    let shape: Vec<(u32, GpuKind, Option<u32>, Option<u32>)> = inv
        .iter()
        .map(|g| (g.index, g.kind, g.parent, g.domain))
        .collect();
    assert_eq!(
        shape,
        (0..6)
            .map(|i| (i, GpuKind::Shard, Some(i / 3), Some(i / 3)))
            .collect::<Vec<_>>()
    );
    assert_eq!(inv[4].uuid, inv[3].uuid, "shards carry their GPU's UUID");
    // A job on shard 4 makes GPU 1 busy: its three shards sample busy, GPU 0's idle.
    let samples = b.sample(&[4]);
    assert_eq!(samples.len(), 6);
    assert!(samples[3..].iter().all(|s| s.utilization_pct >= 70));
    assert!(samples[..3].iter().all(|s| s.utilization_pct < 70));
    assert_eq!(b.xid_errors(), vec![(3, 79), (4, 79), (5, 79)]);
    assert_eq!(
        b.device_minors(),
        vec![(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1)]
    );
    // MIG instances are not sharded.
    let mig = ShardedBackend::new(
        Box::new(SimulatedBackend::parse("1xA100:mig=3g.40gb*2", "n").unwrap()),
        4,
    )
    .unwrap();
    assert!(mig.inventory().iter().all(|g| g.kind == GpuKind::Mig));
    assert_eq!(mig.inventory().len(), 2);
    assert!(ShardedBackend::new(Box::new(SimulatedBackend::new(1, "H100", "n")), 0).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn topology_domains_split_consecutive_indices() {
    let gpus = SimulatedBackend::parse("8xH100/2", "n")
        .unwrap()
        .inventory();
    let domains: Vec<Option<u32>> = gpus.iter().map(|g| g.domain).collect();
    assert_eq!(domains, [0, 0, 0, 0, 1, 1, 1, 1].map(Some).to_vec());
    assert!(SimulatedBackend::parse("8xH100", "n")
        .unwrap()
        .inventory()
        .iter()
        .all(|g| g.domain.is_none()));
    for bad in ["8xH100/3", "8xH100/0", "8xH100/x"] {
        let err = SimulatedBackend::parse(bad, "n").unwrap_err().to_string();
        assert!(err.contains(bad), "{err}");
    }
}

#[test]
fn mig_specs_split_each_gpu_into_instances() {
    let backend = SimulatedBackend::parse("2xA100:mig=3g.40gb*2", "node-1").unwrap();
    let devices = backend.inventory();
    assert_eq!(
        devices
            .iter()
            .map(|d| (d.index, d.kind, d.parent))
            .collect::<Vec<_>>(),
        vec![
            (0, GpuKind::Mig, Some(0)),
            (1, GpuKind::Mig, Some(0)),
            (2, GpuKind::Mig, Some(1)),
            (3, GpuKind::Mig, Some(1)),
        ]
    );
    assert!(devices
        .iter()
        .all(|d| d.model == "NVIDIA A100-SXM4-80GB MIG 3g.40gb" && d.memory_mib == 40 * 1024));
    assert!(devices.iter().all(|d| d.uuid.starts_with("MIG-sim-")));
    let mut uuids: Vec<&str> = devices.iter().map(|d| d.uuid.as_str()).collect();
    uuids.sort_unstable();
    uuids.dedup();
    assert_eq!(uuids.len(), 4);
    // Stable per node and index, distinct between nodes.
    let again = SimulatedBackend::parse("2xA100:mig=3g.40gb*2", "node-1").unwrap();
    assert_eq!(again.inventory(), devices);
    let other = SimulatedBackend::parse("2xA100:mig=3g.40gb*2", "node-2").unwrap();
    assert_ne!(other.inventory()[0].uuid, devices[0].uuid);
    // Isolation goes by the parent GPU's device.
    assert_eq!(
        backend.device_minors(),
        vec![(0, 0), (1, 0), (2, 1), (3, 1)]
    );
    // Domains by parent GPU.
    let domains: Vec<Option<u32>> = SimulatedBackend::parse("4xH100:mig=1g.10gb*7/2", "n")
        .unwrap()
        .inventory()
        .iter()
        .map(|d| d.domain)
        .collect();
    assert_eq!(domains.len(), 28);
    assert_eq!(domains[13], Some(0));
    assert_eq!(domains[14], Some(1));
}

#[test]
fn shard_specs_offer_each_gpu_several_times() {
    let gpus = SimulatedBackend::parse("8xH100", "node-1")
        .unwrap()
        .inventory();
    let backend = SimulatedBackend::parse("8xH100:shards=2/2", "node-1").unwrap();
    let shards = backend.inventory();
    assert_eq!(shards.len(), 16);
    for shard in &shards {
        let parent = shard.index / 2;
        assert_eq!(shard.kind, GpuKind::Shard);
        assert_eq!(shard.parent, Some(parent));
        assert_eq!(shard.uuid, gpus[parent as usize].uuid);
        assert_eq!(shard.model, "NVIDIA H100 80GB HBM3");
        assert_eq!(shard.memory_mib, 81559);
        assert_eq!(shard.domain, Some(parent / 4));
    }
    assert_eq!(backend.device_minors()[5], (5, 2));
    // A plain spec's GPUs are whole, with no parent.
    assert!(gpus
        .iter()
        .all(|g| g.kind == GpuKind::Gpu && g.parent.is_none()));
}

#[test]
fn mig_profiles_give_their_memory() {
    assert_eq!(mig_profile_memory_mib("3g.40gb"), Some(40 * 1024));
    assert_eq!(mig_profile_memory_mib("1g.10gb+me"), Some(10 * 1024));
    assert_eq!(mig_profile_memory_mib("1c.3g.40gb"), Some(40 * 1024));
    assert_eq!(mig_profile_memory_mib("7g.80gb"), Some(80 * 1024));
    for bad in [
        "3g", "40gb", "3g.gb", "3g.0gb", "g.40gb", "3x.40gb", "3g.40", "",
    ] {
        assert_eq!(mig_profile_memory_mib(bad), None, "{bad:?}");
    }
}

#[test]
fn bad_mig_and_shard_specs_are_refused_by_name() {
    for bad in [
        "2xA100:mig=3g.40gb",
        "2xA100:mig=3g*2",
        "2xA100:mig=3g.40gb*0",
        "2xA100:mig=3g.40gb*8",
        "2xA100:mig=*2",
        "2xA100:mig=3g.40gb*2:shards=2",
        "2xA100:shards=2:shards=2",
        "2xA100:shards=0",
        "2xA100:shards=x",
        "2xA100:shards=129",
        "2xA100:fraction=2",
        "2xA100:",
        "8xH100/2:shards=2",
        "8xH100:shards=2/3",
        // More than 128 devices on a node.
        "8xH100:shards=32",
        "129xH100",
    ] {
        let err = SimulatedBackend::parse(bad, "n").unwrap_err();
        assert!(
            matches!(err, WorkerError::InvalidGpuSpec { .. }),
            "{bad:?} should be refused"
        );
        let message = err.to_string();
        assert!(message.contains(bad), "{message}");
    }
}

#[test]
fn shard_and_mig_samples_and_faults_go_by_device_index() {
    let dir = std::env::temp_dir().join(format!("berth-gpu-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("faults");
    std::fs::write(&file, "lost 3\nxid 2 79\n").unwrap();
    let backend = SimulatedBackend::parse("2xH100:shards=2", "n")
        .unwrap()
        .with_fault_file(&file);
    let samples = backend.sample(&[1]);
    assert_eq!(
        samples.iter().map(|s| s.index).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(samples[0].utilization_pct, 0);
    assert!(samples[1].utilization_pct >= 70);
    // Each shard draws a share of its GPU's 700 W.
    assert!(
        samples[1].power_w <= 350.0 * 0.95 + 0.1,
        "{}",
        samples[1].power_w
    );
    assert_eq!(backend.xid_errors(), vec![(2, 79)]);
    let mig = SimulatedBackend::parse("1xA100:mig=3g.40gb*2", "n").unwrap();
    let samples = mig.sample(&[0]);
    assert_eq!(samples.len(), 2);
    assert!(samples[0].memory_used_mib <= 40 * 1024);
    assert!(mig.utilization_measured(0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `nvidia-smi -L` on a machine with GPU 0 in MIG mode (two 3g.40gb instances) and
/// GPU 1 whole.
const SMI_ONE_MIG_ONE_WHOLE: &str = "\
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)
  MIG 3g.40gb     Device  0: (UUID: MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f)
  MIG 3g.40gb     Device  1: (UUID: MIG-cba663e8-9bed-5b7c-8ca2-f2c5aa3e0b1f)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-0e2a7d3c-1b4f-4f6a-9c5e-2d8b7a6f1e03)
";

#[test]
fn parses_nvidia_smi_listings() {
    let gpus = parse_nvidia_smi_list(SMI_ONE_MIG_ONE_WHOLE);
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].index, 0);
    assert_eq!(gpus[0].name, "NVIDIA A100-SXM4-80GB");
    assert_eq!(gpus[0].uuid, "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77");
    assert_eq!(
        gpus[0].mig,
        vec![
            ListedMig {
                profile: "3g.40gb".into(),
                device: 0,
                uuid: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".into(),
            },
            ListedMig {
                profile: "3g.40gb".into(),
                device: 1,
                uuid: "MIG-cba663e8-9bed-5b7c-8ca2-f2c5aa3e0b1f".into(),
            },
        ]
    );
    assert_eq!(gpus[1].index, 1);
    assert_eq!(gpus[1].uuid, "GPU-0e2a7d3c-1b4f-4f6a-9c5e-2d8b7a6f1e03");
    assert!(gpus[1].mig.is_empty());

    // Drivers before R470 name MIG devices `MIG-GPU-…/gi/ci`; blank lines and a MIG
    // line before any GPU are skipped.
    let old = "  MIG 1g.5gb Device 0: (UUID: MIG-orphan)\n\n\
GPU 0: A100-SXM4-40GB (UUID: GPU-aaaa)\n  MIG 1g.5gb Device 0: (UUID: MIG-GPU-aaaa/7/0)\n\
  MIG 1g.5gb+me Device 1: (UUID: MIG-GPU-aaaa/8/0)\n";
    let gpus = parse_nvidia_smi_list(old);
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].mig.len(), 2);
    assert_eq!(gpus[0].mig[0].uuid, "MIG-GPU-aaaa/7/0");
    assert_eq!(gpus[0].mig[1].profile, "1g.5gb+me");
    assert_eq!(gpus[0].mig[1].device, 1);
    assert!(parse_nvidia_smi_list("").is_empty());
    assert!(parse_nvidia_smi_list("No devices found.\n").is_empty());
}

#[test]
fn mig_instances_follow_the_physical_gpus() {
    let listing = parse_nvidia_smi_list(SMI_ONE_MIG_ONE_WHOLE);
    let uuid = Some("GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77".to_string());
    let instances = mig_instances(2, &[(0, uuid)], Ok(&listing));
    assert_eq!(
        instances,
        vec![
            MigInstance {
                index: 2,
                parent: 0,
                uuid: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".into(),
                profile: "3g.40gb".into(),
                gpu_name: "NVIDIA A100-SXM4-80GB".into(),
            },
            MigInstance {
                index: 3,
                parent: 0,
                uuid: "MIG-cba663e8-9bed-5b7c-8ca2-f2c5aa3e0b1f".into(),
                profile: "3g.40gb".into(),
                gpu_name: "NVIDIA A100-SXM4-80GB".into(),
            },
        ]
    );
    // Found by UUID even where the listing numbers GPUs differently; by index when
    // NVML gave no UUID.
    let renumbered: Vec<ListedGpu> = listing
        .iter()
        .cloned()
        .map(|mut gpu| {
            gpu.index = 1 - gpu.index;
            gpu
        })
        .collect();
    let uuid = Some("GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77".to_string());
    assert_eq!(mig_instances(2, &[(0, uuid)], Ok(&renumbered))[0].parent, 0);
    assert_eq!(mig_instances(2, &[(0, None)], Ok(&listing)).len(), 2);
    // GPU 1 has no instances; a GPU not listed or no listing at all offers nothing.
    assert!(mig_instances(2, &[(1, None)], Ok(&listing)).is_empty());
    assert!(mig_instances(2, &[(5, None)], Ok(&listing)).is_empty());
    assert!(mig_instances(2, &[(0, None)], Err("nvidia-smi: not found")).is_empty());
}

#[test]
fn nvml_bus_ids_map_to_sysfs_names() {
    // No such device here: the lookup is None rather than an error.
    assert_eq!(numa_node("00000000:FF:1F.7"), None);
}

#[test]
fn parses_count_and_model() {
    let backend = SimulatedBackend::parse("4xA100", "node-1").unwrap();
    let gpus = backend.inventory();
    assert_eq!(gpus.len(), 4);
    assert_eq!(gpus[3].index, 3);
    assert!(gpus.iter().all(|gpu| gpu.model == "NVIDIA A100-SXM4-80GB"));
    assert!(gpus.iter().all(|gpu| gpu.memory_mib == 81920));
    assert!(gpus.iter().all(|gpu| gpu.uuid.starts_with("GPU-sim-")));

    let plain = SimulatedBackend::parse("8", "node-1").unwrap().inventory();
    assert_eq!(plain.len(), 8);
    assert_eq!(plain[0].model, "NVIDIA H100 80GB HBM3");
    assert_eq!(plain[0].memory_mib, 81559);

    let l4 = SimulatedBackend::parse("2xl4", "n").unwrap().inventory();
    assert_eq!(l4[0].model, "NVIDIA L4");

    let odd = SimulatedBackend::parse("2xMI300X", "n")
        .unwrap()
        .inventory();
    assert_eq!(odd[1].model, "MI300X");
    assert_eq!(odd[1].memory_mib, 24576);
}

#[test]
fn rejects_bad_specs() {
    for spec in ["", "x", "H100", "8x", "8y", "99999xH100", "-1"] {
        let err = SimulatedBackend::parse(spec, "n").err();
        assert!(
            matches!(err, Some(WorkerError::InvalidGpuSpec { .. })),
            "{spec:?} should be refused"
        );
    }
}

#[test]
fn uuids_are_stable_and_distinct() {
    let a = SimulatedBackend::parse("8", "node-1").unwrap().inventory();
    let again = SimulatedBackend::parse("8", "node-1").unwrap().inventory();
    let b = SimulatedBackend::parse("8", "node-2").unwrap().inventory();
    assert_eq!(a, again);
    let mut uuids: Vec<&str> = a.iter().chain(&b).map(|gpu| gpu.uuid.as_str()).collect();
    uuids.sort_unstable();
    uuids.dedup();
    assert_eq!(uuids.len(), 16);
}

#[test]
fn injected_faults_show_in_samples() {
    let dir = std::env::temp_dir().join(format!("berth-gpu-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("faults");
    std::fs::write(&file, "xid 3 79\nlost 2\nstuck 1\nnonsense\n").unwrap();
    let backend = SimulatedBackend::new(4, "H100", "n").with_fault_file(&file);
    assert_eq!(backend.xid_errors(), vec![(3, 79)]);
    let samples = backend.sample(&[1, 3]);
    assert_eq!(
        samples.iter().map(|s| s.index).collect::<Vec<_>>(),
        vec![0, 1, 3]
    );
    assert_eq!(samples[1].utilization_pct, 0, "stuck while busy");
    assert!(samples[2].utilization_pct >= 70);
}

#[test]
fn busy_gpus_look_busy() {
    let backend = SimulatedBackend::parse("4xH100", "node-1").unwrap();
    let samples = backend.sample(&[1, 2]);
    assert_eq!(samples.len(), 4);
    for sample in &samples {
        if sample.index == 1 || sample.index == 2 {
            assert!((70..=100).contains(&sample.utilization_pct));
            assert!(sample.memory_used_mib > 40_000);
            assert!(sample.power_w > 300.0);
        } else {
            assert_eq!(sample.utilization_pct, 0);
            assert!(sample.power_w < 100.0);
        }
    }
}
