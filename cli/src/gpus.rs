//! `berth gpus`: what the worker's GPU backend sees on this machine — the devices it
//! offers (whole GPUs, MIG instances, shards), MIG modes (NVML) and a run of samples. For checking a node before it joins, and for the
//! NVIDIA hardware check under `bench/`.

use berth_core::wire::GpuInfo;
use berth_worker::gpu::{GpuBackend, NvmlBackend, SimulatedBackend};
use std::time::Duration;

/// Prints the inventory (each device's kind, and the GPU a MIG instance or shard is part
/// of), then `seconds / interval` rounds of samples.
///
/// # Errors
/// A bad `--simulate-gpus`, or NVML missing when `require_nvml`.
pub async fn probe(
    simulate: Option<&str>,
    require_nvml: bool,
    seconds: u64,
    interval: u64,
) -> anyhow::Result<i32> {
    let mut nvml = None;
    let backend: Box<dyn GpuBackend> = match simulate {
        Some(spec) => Box::new(SimulatedBackend::parse(spec, &crate::server::host_name())?),
        None => match NvmlBackend::new() {
            Ok(backend) => {
                nvml = Some(NvmlBackend::new()?);
                Box::new(backend)
            }
            Err(err) if require_nvml => anyhow::bail!("NVML: {}", err.chain()),
            Err(err) => {
                eprintln!(
                    "NVML is not available ({}): a worker here offers no GPU (unless given \
                     --simulate-gpus)",
                    err.chain()
                );
                Box::new(berth_worker::gpu::NoGpus)
            }
        },
    };
    println!("backend: {}", backend.kind());
    if let Some(version) = nvml.as_ref().and_then(NvmlBackend::driver_version) {
        println!("driver: {version}");
    }
    let inventory = backend.inventory();
    for line in inventory_lines(&inventory) {
        println!("{line}");
    }
    if let Some(nvml) = &nvml {
        for (index, mode) in nvml.mig_modes() {
            let mode = match mode {
                Some(true) => "enabled",
                Some(false) => "disabled",
                None => "not supported",
            };
            println!("gpu {index}: MIG {mode}");
        }
    }
    let rounds = (seconds / interval.max(1)).max(1);
    println!("time_s gpu util_pct memory_used_mib power_w temperature_c");
    let start = std::time::Instant::now();
    for round in 0..rounds {
        if round > 0 {
            tokio::time::sleep(Duration::from_secs(interval.max(1))).await;
        }
        let at = start.elapsed().as_secs();
        for sample in backend.sample(&[]) {
            println!(
                "{at:>6} {:>3} {:>8} {:>15} {:>7.1} {:>13}",
                sample.index,
                sample.utilization_pct,
                sample.memory_used_mib,
                sample.power_w,
                sample.temperature_c
            );
        }
    }
    Ok(0)
}

/// The inventory table: a header, then one line per device with its index, kind (`gpu`,
/// `mig`, `shard`), parent GPU (`-` for a whole GPU), model, memory (MiB) and UUID.
fn inventory_lines(inventory: &[GpuInfo]) -> Vec<String> {
    let line = |index: &str, kind: &str, parent: &str, model: &str, memory: &str, uuid: &str| {
        format!("{index:>3}  {kind:<5}  {parent:>6}  {model:<40} {memory:>10}  {uuid}")
    };
    let mut lines = vec![line("gpu", "kind", "parent", "model", "memory_mib", "uuid")];
    lines.extend(inventory.iter().map(|gpu| {
        line(
            &gpu.index.to_string(),
            gpu.kind.as_str(),
            &gpu.parent.map_or("-".to_string(), |p| p.to_string()),
            &gpu.model,
            &gpu.memory_mib.to_string(),
            &gpu.uuid,
        )
    }));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inventory_shows_kind_and_parent() {
        let mig = SimulatedBackend::parse("1xA100:mig=3g.40gb*2", "n")
            .unwrap()
            .inventory();
        let lines = inventory_lines(&mig);
        assert_eq!(lines.len(), 3);
        let words: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(words[..3], ["gpu", "kind", "parent"]);
        let words: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(words[..3], ["1", "mig", "0"]);
        assert!(lines[2].contains("NVIDIA A100-SXM4-80GB MIG 3g.40gb"));
        assert!(lines[2].contains(&mig[1].uuid));

        let shards = SimulatedBackend::parse("2xH100:shards=2", "n")
            .unwrap()
            .inventory();
        let lines = inventory_lines(&shards);
        let words: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(words[..3], ["3", "shard", "1"]);

        let whole = SimulatedBackend::parse("1xH100", "n").unwrap().inventory();
        let lines = inventory_lines(&whole);
        let words: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(words[..3], ["0", "gpu", "-"]);
    }
}
