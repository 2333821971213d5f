//! GPU device isolation on cgroup v2, which has no `devices` files: a small
//! `BPF_PROG_TYPE_CGROUP_DEVICE` program attached to the job's group (kernel ≥ 4.15;
//! Documentation/admin-guide/cgroup-v2.rst, "Device controller") refuses the NVIDIA
//! character devices (major [`NVIDIA_MAJOR`]) whose minor numbers the job does not hold
//! and allows every other device, as the v1 `devices.deny` lines do.
//!
//! The program is attached with `BPF_F_ALLOW_MULTI`, so programs an init system attached
//! above keep applying (an access must pass all of them). It lives as long as the group:
//! removing the group detaches it. Loading and attaching need root (`CAP_BPF` and
//! `CAP_SYS_ADMIN`); where the kernel refuses, the job runs without device isolation and
//! the worker says so in its log.
//!
//! The bytecode is built here (its layout below); the two `bpf(2)` calls are the only
//! unsafe code in Berth.

use crate::cgroup::NVIDIA_MAJOR;
use std::os::fd::AsRawFd;
use std::path::Path;

/// `bpf(2)` commands (linux/bpf.h).
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
/// `enum bpf_prog_type`: `BPF_PROG_TYPE_CGROUP_DEVICE`.
const PROG_TYPE_CGROUP_DEVICE: u32 = 15;
/// `enum bpf_attach_type`: `BPF_CGROUP_DEVICE`.
const ATTACH_CGROUP_DEVICE: u32 = 6;
/// `BPF_F_ALLOW_MULTI`.
const F_ALLOW_MULTI: u32 = 1 << 1;
/// `BPF_DEVCG_DEV_CHAR`: the device type in the low 16 bits of `access_type`.
const DEV_CHAR: i32 = 1 << 1;

/// One eBPF instruction (`struct bpf_insn`): opcode, registers (dst low nibble, src high),
/// signed offset, signed immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    /// The opcode.
    pub code: u8,
    /// `dst_reg | src_reg << 4`.
    pub regs: u8,
    /// The jump or memory offset.
    pub off: i16,
    /// The immediate.
    pub imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// `BPF_LDX | BPF_MEM | BPF_W`: `dst = *(u32 *)(src + off)`.
const LDX_W: u8 = 0x61;
/// `BPF_ALU | BPF_AND | BPF_K`: `dst = (u32)dst & imm`.
const AND32_K: u8 = 0x54;
/// `BPF_JMP | BPF_JNE | BPF_K`.
const JNE_K: u8 = 0x55;
/// `BPF_JMP | BPF_JEQ | BPF_K`.
const JEQ_K: u8 = 0x15;
/// `BPF_ALU64 | BPF_MOV | BPF_K`: `dst = imm`.
const MOV64_K: u8 = 0xb7;
/// `BPF_JMP | BPF_EXIT`.
const EXIT: u8 = 0x95;

/// The program refusing character devices `NVIDIA_MAJOR:m` for each `m` in `denied` and
/// allowing everything else. With `ctx` (`struct bpf_cgroup_dev_ctx { u32 access_type;
/// u32 major; u32 minor; }`) in r1:
///
/// ```text
/// 0    r2 = ctx->major
/// 1    r3 = ctx->minor
/// 2    r4 = ctx->access_type
/// 3    w4 &= 0xffff                      device type
/// 4    if r4 != CHAR goto allow
/// 5    if r2 != 195 goto allow
/// 6+k  if r3 == denied[k] goto deny      for each k
/// 6+n  allow: r0 = 1; exit
/// 8+n  deny:  r0 = 0; exit
/// ```
pub fn program(denied: &[u32]) -> Vec<Insn> {
    let n = denied.len() as i16;
    let mut p = vec![
        insn(LDX_W, 2, 1, 4, 0),
        insn(LDX_W, 3, 1, 8, 0),
        insn(LDX_W, 4, 1, 0, 0),
        insn(AND32_K, 4, 0, 0, 0xffff),
        // Jump offsets count from the next instruction.
        insn(JNE_K, 4, 0, n + 1, DEV_CHAR),
        insn(JNE_K, 2, 0, n, NVIDIA_MAJOR as i32),
    ];
    for (k, minor) in denied.iter().enumerate() {
        p.push(insn(JEQ_K, 3, 0, n + 1 - k as i16, *minor as i32));
    }
    p.extend([
        insn(MOV64_K, 0, 0, 0, 1),
        insn(EXIT, 0, 0, 0, 0),
        insn(MOV64_K, 0, 0, 0, 0),
        insn(EXIT, 0, 0, 0, 0),
    ]);
    p
}

/// The head of `union bpf_attr` for `BPF_PROG_LOAD`, up to `expected_attach_type`.
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// The head of `union bpf_attr` for `BPF_PROG_ATTACH`.
#[repr(C)]
#[derive(Default)]
struct ProgAttachAttr {
    target_fd: u32,
    attach_bpf_fd: u32,
    attach_type: u32,
    attach_flags: u32,
    replace_bpf_fd: u32,
}

fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised `#[repr(C)]` prefix of `union bpf_attr` for
    // `cmd` (every byte the kernel reads lies within `size_of::<T>()`, which it is told),
    // and any pointers inside it point at buffers that outlive the call.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Loads [`program`]`(denied)` and attaches it to the cgroup v2 directory `group`.
///
/// # Errors
/// The kernel's refusal (`EPERM` without the capabilities, `EINVAL` on kernels without
/// cgroup device programs), with the verifier's log when it rejected the program.
pub fn deny_gpus(group: &Path, denied: &[u32]) -> std::io::Result<()> {
    let insns = program(denied);
    let license = c"GPL";
    let mut log = vec![0u8; 4096];
    let mut load = ProgLoadAttr {
        prog_type: PROG_TYPE_CGROUP_DEVICE,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        ..Default::default()
    };
    load.prog_name[..10].copy_from_slice(b"berth_gpus");
    let prog = match bpf(BPF_PROG_LOAD, &mut load) {
        Ok(fd) => {
            // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
            #[allow(unsafe_code)]
            unsafe {
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32)
            }
        }
        Err(e) => {
            let verifier = String::from_utf8_lossy(&log);
            let verifier = verifier.trim_end_matches('\0').trim();
            return Err(std::io::Error::new(
                e.kind(),
                format!("loading the GPU device program: {e} {verifier}"),
            ));
        }
    };
    let dir = std::fs::File::open(group)?;
    let mut attach = ProgAttachAttr {
        target_fd: dir.as_raw_fd() as u32,
        attach_bpf_fd: prog.as_raw_fd() as u32,
        attach_type: ATTACH_CGROUP_DEVICE,
        attach_flags: F_ALLOW_MULTI,
        ..Default::default()
    };
    bpf(BPF_PROG_ATTACH, &mut attach).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "attaching the GPU device program to {}: {e}",
                group.display()
            ),
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn the_program_jumps_to_deny_for_each_denied_minor_only() {
        let p = program(&[1, 3]);
        assert_eq!(p.len(), 12);
        // The two guards skip the two minor tests to "allow" (index 8).
        assert_eq!((p[4].code, p[4].off, p[4].imm), (JNE_K, 3, DEV_CHAR));
        assert_eq!((p[5].code, p[5].off, p[5].imm), (JNE_K, 2, 195));
        // Each minor test lands on "deny" (index 10).
        assert_eq!((p[6].code, 6 + 1 + p[6].off, p[6].imm), (JEQ_K, 10, 1));
        assert_eq!((p[7].code, 7 + 1 + p[7].off, p[7].imm), (JEQ_K, 10, 3));
        assert_eq!((p[8].imm, p[10].imm), (1, 0));
        assert_eq!(std::mem::size_of::<Insn>(), 8);
    }

    /// On this kernel: a process in a cgroup v2 group with the program cannot open GPU 1's
    /// device node (EPERM) but reaches GPU 0's (ENXIO: no driver behind it here). Needs
    /// root and a cgroup v2 mount; says why when it cannot run.
    #[test]
    fn the_kernel_refuses_only_the_denied_gpu() {
        let mount = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
            .into_iter()
            .map(Path::new)
            .find(|m| m.join("cgroup.procs").exists() && m.join("cgroup.controllers").exists());
        let Some(mount) = mount else {
            eprintln!("SKIPPED: no cgroup v2 mount");
            return;
        };
        if !nix::unistd::Uid::effective().is_root() {
            eprintln!("SKIPPED: not root");
            return;
        }
        let pid = std::process::id();
        let group = mount.join(format!("berth-bpf-test-{pid}"));
        std::fs::create_dir_all(&group).unwrap();
        if let Err(e) = deny_gpus(&group, &[1]) {
            let _ = std::fs::remove_dir(&group);
            eprintln!("SKIPPED: the kernel refused the program here: {e}");
            return;
        }
        let devs = std::env::temp_dir().join(format!("berth-bpf-devs-{pid}"));
        std::fs::create_dir_all(&devs).unwrap();
        for minor in [0, 1] {
            nix::sys::stat::mknod(
                &devs.join(format!("nvidia{minor}")),
                nix::sys::stat::SFlag::S_IFCHR,
                nix::sys::stat::Mode::from_bits_truncate(0o666),
                nix::sys::stat::makedev(NVIDIA_MAJOR as u64, minor),
            )
            .unwrap();
        }
        let open = |minor: u32| {
            let out = Command::new("/bin/sh")
                .arg("-c")
                .arg(format!(
                    "echo $$ > {}/cgroup.procs && exec cat {}/nvidia{minor}",
                    group.display(),
                    devs.display()
                ))
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        let denied = open(1);
        let allowed = open(0);
        let _ = std::fs::remove_dir_all(&devs);
        let _ = std::fs::remove_dir(&group);
        assert!(denied.contains("Operation not permitted"), "{denied}");
        assert!(
            !allowed.contains("Operation not permitted") && allowed.contains("No such device"),
            "{allowed}"
        );
    }
}
