//! Secrets from files, so that none needs to be in a process's environment as set by a
//! command line or on the command line itself: for each secret variable Berth reads
//! (`DATABASE_URL`, `DATABASE_DIRECT_URL`, `BERTH_JWT_SECRET`, `BERTH_TOKEN`, `BERTH_BOOTSTRAP_TOKEN`), when it is
//! not set, its value is read from
//! * the file `NAME_FILE` names (Docker's and Kubernetes' convention: a Secret mounted as
//!   a file), else
//! * systemd's credential of the same name in lower case (`database_url`, `jwt_secret`
//!   for `BERTH_JWT_SECRET` …) in `$CREDENTIALS_DIRECTORY` (`LoadCredential=`).
//!
//! A trailing newline is dropped. This runs first thing in `main`, before any thread
//! starts, and sets the variable for the rest of the process (clap's `env` attributes and
//! the server configuration read it as if it had been set).

use anyhow::Context;
use std::path::{Path, PathBuf};

/// The secret variables read from files, with their systemd credential names.
pub const SECRETS: &[(&str, &str)] = &[
    ("DATABASE_URL", "database_url"),
    ("DATABASE_DIRECT_URL", "database_direct_url"),
    ("BERTH_JWT_SECRET", "jwt_secret"),
    ("BERTH_TOKEN", "token"),
    ("BERTH_BOOTSTRAP_TOKEN", "bootstrap_token"),
];

/// Where the value of `name` comes from when it is not set, if anywhere: `NAME_FILE`,
/// else `$CREDENTIALS_DIRECTORY/credential` when that file exists.
fn source(name: &str, credential: &str, var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if var(name).is_some_and(|v| !v.is_empty()) {
        return None;
    }
    if let Some(file) = var(&format!("{name}_FILE")).filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(file));
    }
    let dir = var("CREDENTIALS_DIRECTORY").filter(|d| !d.is_empty())?;
    let path = Path::new(&dir).join(credential);
    path.exists().then_some(path)
}

/// The secret in `path`, without its trailing newline.
///
/// # Errors
/// When the file cannot be read (naming it) or is empty.
fn read_secret(path: &Path, name: &str) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading {name} from {}", path.display()))?;
    let value = text.strip_suffix('\n').unwrap_or(&text);
    let value = value.strip_suffix('\r').unwrap_or(value);
    anyhow::ensure!(
        !value.is_empty(),
        "{} (for {name}) is empty",
        path.display()
    );
    Ok(value.to_string())
}

/// Sets each secret variable that is not set from its file (see the module). Call before
/// any other thread starts.
///
/// # Errors
/// A named file that cannot be read, or is empty.
pub fn load_from_files() -> anyhow::Result<()> {
    let var = |name: &str| std::env::var(name).ok();
    for (name, credential) in SECRETS {
        if let Some(path) = source(name, credential, &var) {
            let value = read_secret(&path, name)?;
            // Single-threaded still: nothing reads the environment concurrently.
            std::env::set_var(name, value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_set_variable_wins_then_name_file_then_the_credential() {
        let dir = std::env::temp_dir().join(format!("berth-secrets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("jwt_secret"), "from-credential\n").unwrap();
        std::fs::write(dir.join("db"), "postgres://x\n").unwrap();
        let env: HashMap<String, String> = [
            ("DATABASE_URL_FILE", dir.join("db").display().to_string()),
            ("CREDENTIALS_DIRECTORY", dir.display().to_string()),
            ("BERTH_TOKEN", "set".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let var = |n: &str| env.get(n).cloned();
        assert_eq!(
            source("DATABASE_URL", "database_url", &var),
            Some(dir.join("db"))
        );
        assert_eq!(
            source("BERTH_JWT_SECRET", "jwt_secret", &var),
            Some(dir.join("jwt_secret"))
        );
        assert_eq!(source("BERTH_TOKEN", "token", &var), None, "set already");
        assert_eq!(
            source("BERTH_BOOTSTRAP_TOKEN", "bootstrap_token", &var),
            None
        );
        assert_eq!(
            read_secret(&dir.join("jwt_secret"), "BERTH_JWT_SECRET").unwrap(),
            "from-credential"
        );
        std::fs::write(dir.join("empty"), "\n").unwrap();
        assert!(read_secret(&dir.join("empty"), "X").is_err());
        assert!(read_secret(&dir.join("missing"), "X")
            .unwrap_err()
            .to_string()
            .contains("missing"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
