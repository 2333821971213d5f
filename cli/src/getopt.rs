//! getopt_long's rule for the Slurm commands whose options Berth reads itself (`sreport`,
//! `scontrol`; clap does it for the others with `infer_long_args`, and sbatch's parser in
//! `berth_core::sbatch`): a long option may be given as any unambiguous prefix of its
//! name (`--noh` is `--noheader`), an exact name is never ambiguous, and a prefix of
//! several names is refused with getopt's words.

/// `arg` with its long option's name completed from `longs` (`--pars=x` →
/// `--parsable2=x`); `None` for anything but a long option (`-n`, a word); an error in
/// getopt's words for an unknown name or an ambiguous prefix.
///
/// # Errors
/// `unrecognized option '--foo'`, or `option '--p' is ambiguous; possibilities:
/// '--parsable' '--parsable2'`.
pub fn complete_long(arg: &str, longs: &[&str]) -> Option<Result<String, String>> {
    let body = arg.strip_prefix("--").filter(|b| !b.is_empty())?;
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    let full = if longs.contains(&name) {
        name.to_string()
    } else {
        let matches: Vec<&&str> = longs.iter().filter(|l| l.starts_with(name)).collect();
        match matches.as_slice() {
            [one] => one.to_string(),
            [] => return Some(Err(format!("unrecognized option '--{name}'"))),
            many => {
                let list: Vec<String> = many.iter().map(|l| format!("'--{l}'")).collect();
                return Some(Err(format!(
                    "option '--{name}' is ambiguous; possibilities: {}",
                    list.join(" ")
                )));
            }
        }
    };
    Some(Ok(match value {
        Some(v) => format!("--{full}={v}"),
        None => format!("--{full}"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_complete_exact_names_win_and_ambiguity_is_refused() {
        let longs = [
            "noheader",
            "parsable",
            "parsable2",
            "tres",
            "time-format",
            "json",
        ];
        assert_eq!(
            complete_long("--noh", &longs),
            Some(Ok("--noheader".into()))
        );
        assert_eq!(
            complete_long("--tr=cpu", &longs),
            Some(Ok("--tres=cpu".into()))
        );
        assert_eq!(
            complete_long("--parsable", &longs),
            Some(Ok("--parsable".into()))
        );
        assert_eq!(
            complete_long("--parsable2", &longs),
            Some(Ok("--parsable2".into()))
        );
        assert_eq!(
            complete_long("--pars", &longs),
            Some(Err(
                "option '--pars' is ambiguous; possibilities: '--parsable' '--parsable2'".into()
            ))
        );
        assert_eq!(
            complete_long("--t", &longs),
            Some(Err(
                "option '--t' is ambiguous; possibilities: '--tres' '--time-format'".into()
            ))
        );
        assert_eq!(
            complete_long("--x", &longs),
            Some(Err("unrecognized option '--x'".into()))
        );
        assert_eq!(complete_long("-n", &longs), None);
        assert_eq!(complete_long("cluster", &longs), None);
    }
}
