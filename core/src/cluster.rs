//! The cluster's name (Slurm's `ClusterName`) and the `-M/--clusters` option of the
//! Slurm-named commands: one Berth installation is one cluster, so `-M` takes `all` (or
//! Slurm's vestigial `-1`) or a list naming this cluster only; any other name is refused
//! in Slurm's words.

/// The name a cluster has when its configuration names none.
pub const DEFAULT_CLUSTER_NAME: &str = "berth";

/// The longest cluster name (slurmdbd keeps them in a 64-byte column, and names its
/// per-cluster tables after them; Berth asks for 40 characters at most).
pub const MAX_CLUSTER_NAME: usize = 40;

/// Checks a configured cluster name: 1 to [`MAX_CLUSTER_NAME`] lower-case letters,
/// digits, `-` and `_`, starting with a letter or a digit (Slurm maps upper case to lower
/// case silently; Berth refuses it so that the name is what the operator wrote).
///
/// # Errors
/// Why the name is refused.
pub fn validate_cluster_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_CLUSTER_NAME {
        return Err(format!("1 to {MAX_CLUSTER_NAME} characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err("must start with a lower-case letter or a digit".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "{c:?} is not allowed: lower-case letters, digits, '-' and '_' only"
        ));
    }
    Ok(())
}

/// Checks a `-M/--clusters` value (`all`, `-1`, or a comma-separated list of names, any
/// case) against this cluster's name `ours`. `option` names where the value came from in
/// the error (`--cluster`, or `SLURM_CLUSTERS` from the environment).
///
/// # Errors
/// The lines Slurm's commands print for a name the database does not know, each without
/// the command's `NAME: error: ` prefix: `No cluster 'X' known by database.` then
/// `'VALUE' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr
/// list clusters' to see available clusters.`
pub fn check_clusters(value: &str, ours: &str, option: &str) -> Result<(), Vec<String>> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("all") || value == "-1" {
        return Ok(());
    }
    let mut lines: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|name| !name.eq_ignore_ascii_case(ours))
        .map(|name| format!("No cluster '{name}' known by database."))
        .collect();
    if lines.is_empty() {
        return Ok(());
    }
    lines.push(format!(
        "'{value}' can't be reached now, or it is an invalid entry for {option}.  Use \
         'sacctmgr list clusters' to see available clusters."
    ));
    Err(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_an_operator_may_write_them() {
        for good in ["berth", "gpu-east_2", "7"] {
            assert_eq!(validate_cluster_name(good), Ok(()), "{good}");
        }
        for bad in ["", "Berth", "-x", "a b", &"x".repeat(41)] {
            assert!(validate_cluster_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn all_and_our_own_name_are_this_cluster() {
        for value in ["all", "ALL", "-1", "berth", "Berth", "berth,berth"] {
            assert_eq!(
                check_clusters(value, "berth", "--cluster"),
                Ok(()),
                "{value}"
            );
        }
    }

    #[test]
    fn another_name_is_refused_as_slurm_refuses_it() {
        assert_eq!(
            check_clusters("berth,tinyfat", "berth", "--cluster"),
            Err(vec![
                "No cluster 'tinyfat' known by database.".to_string(),
                "'berth,tinyfat' can't be reached now, or it is an invalid entry for \
                 --cluster.  Use 'sacctmgr list clusters' to see available clusters."
                    .to_string(),
            ])
        );
        let env = check_clusters("other", "berth", "SLURM_CLUSTERS").unwrap_err();
        assert!(
            env[1].contains("invalid entry for SLURM_CLUSTERS"),
            "{env:?}"
        );
    }
}
