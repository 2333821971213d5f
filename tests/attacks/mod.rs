//! The attack module: what an ordinary user of a shared cluster (a real Unix account, an
//! account in Berth, the job's own token) and a joined node try against Berth, each
//! refused. Tests that switch users need root (CI runs as root); they say "skipped" and
//! return early otherwise.
//!
//! One file per room of the system: each creates the Unix users it needs with
//! [`unix_user`] and a cluster whose worker runs jobs as their submitting user.

use std::process::Command;

/// Whether this process can create users and switch to them; prints why a test is
/// skipped when not.
pub fn can_switch_users(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        true
    } else {
        eprintln!("{test}: skipped: needs root to create Unix users and run jobs as them");
        false
    }
}

/// The Unix account `name`, created (with a home directory and bash) when missing.
/// Idempotent and safe to call from tests running in parallel.
pub fn unix_user(name: &str) -> nix::unistd::User {
    if let Ok(Some(user)) = nix::unistd::User::from_name(name) {
        return user;
    }
    let status = Command::new("useradd")
        .args(["--create-home", "--shell", "/bin/bash", name])
        .status()
        .expect("useradd runs");
    // Another test may have created it meanwhile (exit code 9: already exists).
    assert!(
        status.success() || status.code() == Some(9),
        "useradd {name}: {status}"
    );
    nix::unistd::User::from_name(name)
        .expect("the user database answers")
        .unwrap_or_else(|| panic!("user {name} exists after useradd"))
}

pub(crate) mod nodes;
mod tokens;
mod worker;
