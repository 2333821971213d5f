//! Slurm's compressed host lists (`node-[1-3,7]`, `gpu[01-04],login1`).
//!
//! The format: comma-separated items; an item is a host name in which bracketed lists of
//! numbers and ranges (`[1-3,7]`, `[01-04]`) may appear, with a prefix and a suffix
//! (`rack[1-2]-gpu`), several times (`r[1-2]n[1-2]`, expanded with the first bracket
//! varying slowest). A range's zero padding is the width of its first number, as in
//! Slurm (`[08-10]` → `08,09,10`).

/// Error parsing a host list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid host list {value:?}: {reason}")]
pub struct HostlistError {
    /// The text given.
    pub value: String,
    /// Why it is refused.
    pub reason: String,
}

/// The most host names one list may expand to; a guard against `n[0-999999999]`.
pub const MAX_EXPANDED_HOSTS: usize = 1_000_000;

/// A host name split as `prefix` + the number written with `digits` characters.
struct Numbered<'a> {
    prefix: &'a str,
    value: u64,
    digits: &'a str,
}

/// Splits a trailing run of decimal digits off a host name (`node-07` → `node-`, 7).
fn split_number(host: &str) -> Option<Numbered<'_>> {
    let start = host
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_digit())
        .last()
        .map(|(i, _)| i)?;
    let digits = &host[start..];
    // Longer runs could overflow; such names stay as written.
    if digits.len() > 18 {
        return None;
    }
    Some(Numbered {
        prefix: &host[..start],
        value: digits.parse().ok()?,
        digits,
    })
}

/// Hosts of one prefix whose numbers are written with a common zero-padding width.
struct Group<'a> {
    prefix: &'a str,
    width: usize,
    /// Inclusive ranges, in input order.
    ranges: Vec<(u64, u64)>,
}

impl Group<'_> {
    fn render(&self, out: &mut String) {
        let w = self.width;
        if let [(lo, hi)] = self.ranges.as_slice() {
            if lo == hi {
                out.push_str(&format!("{}{lo:0w$}", self.prefix));
                return;
            }
        }
        out.push_str(self.prefix);
        out.push('[');
        for (i, (lo, hi)) in self.ranges.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if lo == hi {
                out.push_str(&format!("{lo:0w$}"));
            } else {
                out.push_str(&format!("{lo:0w$}-{hi:0w$}"));
            }
        }
        out.push(']');
    }
}

/// Compresses host names into Slurm's form, keeping their order:
/// `["node-1","node-2","node-3","gpu7"]` → `node-[1-3],gpu7`; zero padding is kept
/// (`n01,n02` → `n[01-02]`).
///
/// Consecutive names that share a prefix and a padding width and end in a number are
/// grouped into one bracket; runs of consecutive ascending numbers become ranges. A group
/// of one host stays plain (`node-1`). Names without a trailing number are written as
/// they are. [`expand`] of the result gives `hosts` back, in order (duplicates included),
/// for names made of letters, digits, `-`, `_` and `.`.
pub fn compress(hosts: &[String]) -> String {
    let mut out = String::new();
    let mut group: Option<Group<'_>> = None;
    let flush = |group: &mut Option<Group<'_>>, out: &mut String| {
        if let Some(g) = group.take() {
            if !out.is_empty() {
                out.push(',');
            }
            g.render(out);
        }
    };
    for host in hosts {
        let Some(n) = split_number(host) else {
            flush(&mut group, &mut out);
            if !out.is_empty() {
                out.push(',');
            }
            out.push_str(host);
            continue;
        };
        if let Some(g) = group.as_mut() {
            let w = g.width;
            if g.prefix == n.prefix && format!("{:0w$}", n.value) == n.digits {
                let last = g.ranges.last_mut().expect("a group has a range");
                if last.1.checked_add(1) == Some(n.value) {
                    last.1 = n.value;
                } else {
                    g.ranges.push((n.value, n.value));
                }
                continue;
            }
        }
        flush(&mut group, &mut out);
        // Padded (`007`): that width; unpadded (`7`, `10`): the natural width.
        let width = if n.digits.len() > 1 && n.digits.starts_with('0') {
            n.digits.len()
        } else {
            1
        };
        group = Some(Group {
            prefix: n.prefix,
            width,
            ranges: vec![(n.value, n.value)],
        });
    }
    flush(&mut group, &mut out);
    out
}

/// Expands a compressed host list into names, in order (what `scontrol show hostnames`
/// prints): `node-[1-3,7]` → `node-1 node-2 node-3 node-7`; `gpu[01-02],login1` →
/// `gpu01 gpu02 login1`. An empty or all-blank list gives no names.
///
/// # Errors
///
/// [`HostlistError`] for an empty item (`a,,b`), unbalanced or nested brackets, a bracket
/// item that is not `N` or `N-M` with `N ≤ M`, or more than [`MAX_EXPANDED_HOSTS`] names.
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let err = |reason: String| HostlistError {
        value: list.to_string(),
        reason,
    };
    if list.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth > 0 => return Err(err("nested '['".into())),
            '[' => depth += 1,
            ']' if depth == 0 => return Err(err("']' without '['".into())),
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(err("'[' without ']'".into()));
    }
    items.push(&list[start..]);

    let mut hosts = Vec::new();
    for item in items {
        let item = item.trim();
        if item.is_empty() {
            return Err(err("empty host name".into()));
        }
        expand_item(item, &mut hosts).map_err(err)?;
    }
    Ok(hosts)
}

/// Appends the names of one item (`pre[1-3]mid[a]post` style) to `hosts`.
fn expand_item(item: &str, hosts: &mut Vec<String>) -> Result<(), String> {
    let mut names = vec![String::new()];
    let mut rest = item;
    while !rest.is_empty() {
        let Some(open) = rest.find('[') else {
            for n in &mut names {
                n.push_str(rest);
            }
            break;
        };
        let close = rest[open..]
            .find(']')
            .map(|c| open + c)
            .ok_or("'[' without ']'")?;
        let literal = &rest[..open];
        let numbers = bracket_numbers(&rest[open + 1..close])?;
        if names.len().saturating_mul(numbers.len()) + hosts.len() > MAX_EXPANDED_HOSTS {
            return Err(format!("more than {MAX_EXPANDED_HOSTS} host names"));
        }
        names = names
            .iter()
            .flat_map(|n| numbers.iter().map(move |num| format!("{n}{literal}{num}")))
            .collect();
        rest = &rest[close + 1..];
    }
    hosts.extend(names);
    Ok(())
}

/// The numbers a bracket's content stands for, formatted with their padding.
fn bracket_numbers(content: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in content.split(',') {
        let part = part.trim();
        let number = |s: &str| -> Result<u64, String> {
            if s.is_empty() || s.len() > 18 || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("{part:?} is not N or N-M"));
            }
            s.parse().map_err(|_| format!("{part:?} is not N or N-M"))
        };
        let (lo_text, hi_text) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi) = (number(lo_text)?, number(hi_text)?);
        if hi < lo {
            return Err(format!("range {part:?} runs backwards"));
        }
        if (hi - lo) as usize >= MAX_EXPANDED_HOSTS - out.len() {
            return Err(format!("more than {MAX_EXPANDED_HOSTS} host names"));
        }
        let w = lo_text.len();
        out.extend((lo..=hi).map(|n| format!("{n:0w$}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn compresses_runs_keeping_order() {
        let hosts = strings(&["node-1", "node-2", "node-3", "node-7", "gpu7"]);
        assert_eq!(compress(&hosts), "node-[1-3,7],gpu7");
        assert_eq!(compress(&strings(&["n01", "n02"])), "n[01-02]");
        assert_eq!(compress(&strings(&["node-1"])), "node-1");
        assert_eq!(compress(&strings(&["a", "b"])), "a,b");
        assert_eq!(compress(&[]), "");
        assert_eq!(compress(&strings(&["n9", "n10", "n11"])), "n[9-11]");
        assert_eq!(compress(&strings(&["n3", "n1", "n2"])), "n[3,1-2]");
        // Different padding widths are different groups.
        assert_eq!(compress(&strings(&["n1", "n01"])), "n1,n01");
        assert_eq!(
            compress(&strings(&["gpu01", "gpu02", "login1"])),
            "gpu[01-02],login1"
        );
    }

    #[test]
    fn expands_slurm_lists() {
        assert_eq!(
            expand("node-[1-3,7]").unwrap(),
            strings(&["node-1", "node-2", "node-3", "node-7"])
        );
        assert_eq!(
            expand("gpu[01-04],login1").unwrap(),
            strings(&["gpu01", "gpu02", "gpu03", "gpu04", "login1"])
        );
        assert_eq!(expand("a,b").unwrap(), strings(&["a", "b"]));
        assert_eq!(expand("n[08-10]").unwrap(), strings(&["n08", "n09", "n10"]));
        assert_eq!(
            expand("rack[1-2]-gpu").unwrap(),
            strings(&["rack1-gpu", "rack2-gpu"])
        );
        assert_eq!(
            expand("r[1-2]n[1-2]").unwrap(),
            strings(&["r1n1", "r1n2", "r2n1", "r2n2"])
        );
        assert_eq!(expand("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn refuses_malformed_lists() {
        for bad in [
            "a,,b", "n[1-3", "n1-3]", "n[[1]]", "n[3-1]", "n[a-b]", "n[]", "n[1-]",
        ] {
            let e = expand(bad).unwrap_err();
            assert_eq!(e.value, bad);
        }
        assert!(expand("n[0-999999999]").is_err());
    }

    proptest! {
        #[test]
        fn expand_inverts_compress(
            hosts in proptest::collection::vec(
                prop_oneof![
                    "[a-c]{1,3}-?[0-9]{1,3}",
                    "[a-z][a-z0-9._-]{0,6}",
                ],
                0..24,
            )
        ) {
            let compressed = compress(&hosts);
            prop_assert_eq!(expand(&compressed).unwrap(), hosts);
        }
    }
}
