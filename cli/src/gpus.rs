//! `berth gpus`: what the worker's GPU backend sees on this machine — the inventory, MIG
//! modes (NVML) and a run of samples. For checking a node before it joins, and for the
//! NVIDIA hardware check under `bench/`.

use berth_worker::gpu::{GpuBackend, NvmlBackend, SimulatedBackend};
use std::time::Duration;

/// Prints the inventory, then `seconds / interval` rounds of samples.
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
                    "NVML is not available ({}); simulating 8 H100s",
                    err.chain()
                );
                Box::new(SimulatedBackend::new(8, "H100", "probe"))
            }
        },
    };
    println!("backend: {}", backend.kind());
    if let Some(version) = nvml.as_ref().and_then(NvmlBackend::driver_version) {
        println!("driver: {version}");
    }
    let inventory = backend.inventory();
    println!("{:>3}  {:<40} {:>10}  uuid", "gpu", "model", "memory_mib");
    for gpu in &inventory {
        println!(
            "{:>3}  {:<40} {:>10}  {}",
            gpu.index, gpu.model, gpu.memory_mib, gpu.uuid
        );
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
