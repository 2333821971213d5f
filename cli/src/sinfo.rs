//! `sinfo` (`berth nodes`): partitions and nodes in Slurm's layouts. Every view is a `%`
//! format, as in Slurm: the default `%#P %.5a %.10l %.6D %.6t %N`, `-s` (summarize)
//! `%#P %.5a %.10l %.16F %N`, `-l` `%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N`,
//! `-N` `%#N %.6D %#P %6t`, `-N -l` `%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f
//! %20E`, `-R` `%20E %9u %19H %N` (`-R -l`: `%20E %12U %19H %6t %N`); `-o` takes any of
//! the letters below and `-O` their long names (`NodeList:20,StateLong:.10`).
//!
//! Lines group the nodes of a partition whose shown fields agree (`%D`, `%N`, `%C`, `%F`,
//! `%A` sum or list the group); `-N` gives one line per node and partition; `-R` one line
//! per reason. `%#X` is as wide as its widest value.
//!
//! `--json`/`--yaml` print Slurm's `sinfo --json` document instead (data parser v0.0.44,
//! [`berth_api::slurmrestd::sinfo_document`]) of the partitions and nodes the filters
//! select (`-p`, `-n`, `-t`, `-r`, `-d`, `-R`; `-N` one entry per node); the formats do
//! not apply to it.
//!
//! `%u` and `%U` print who set a node's reason (the operator who drained it, `slurm` for
//! the reasons Berth sets itself; Berth knows no uids, so `%U` has no `(uid)`), `%H` when
//! (local time); `Unknown` for a reason older than Berth's record of them. Berth knows no sockets, threads or local disk: `%z` prints what Slurm
//! prints for a node configured with CPUs alone (`CPUS:1:1`), `%d` (TMP_DISK) `0`.

use crate::client::Client;
use crate::format::{
    cpus_aiot, field, node_in_partition, node_state_short, parse_percent_format, sinfo_time_limit,
    SinfoPart,
};
use berth_core::hostlist;
use berth_core::state::NodeState;
use berth_core::wire::{Node, Partition};

/// sinfo's options (Slurm's names).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SinfoArgs {
    /// Node-oriented: one line per node (and partition).
    #[arg(short = 'N', long = "Node")]
    pub node: bool,
    /// The long format.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// A summary per partition: nodes allocated/idle/other/total.
    #[arg(short = 's', long = "summarize")]
    pub summarize: bool,
    /// Why nodes are down, drained or draining (only nodes with a reason).
    #[arg(short = 'R', long = "list-reasons")]
    pub list_reasons: bool,
    /// sinfo's `%` format: `%P` partition, `%R` its name alone, `%a` availability, `%l`
    /// time limit, `%L` default time, `%s` job size, `%p` priority tier, `%g` groups,
    /// `%h` oversubscribe, `%r` root only, `%D` nodes, `%F` nodes A/I/O/T, `%A` nodes
    /// A/I, `%t`/`%T` state, `%N` node list, `%n` host names, `%o` addresses, `%c` CPUs,
    /// `%C` CPUs A/I/O/T, `%B` max CPUs per node, `%z` S:C:T, `%X %Y %Z` sockets, cores,
    /// threads, `%d` local disk, `%m` memory (MiB), `%e` free memory,
    /// `%f`/`%b` features, `%w` weight, `%G` GRES, `%E` reason, `%u`/`%U`/`%H` reason's
    /// user and time; `%.10C` right-aligns in 10 columns, `%#N` fits the widest value.
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// sinfo's long field names, comma-separated, each `Name[:[.]WIDTH]` (default width
    /// 20): Partition, PartitionName, Available, Time, DefaultTime, Size, PriorityTier,
    /// Groups, OverSubscribe, Root, Nodes, NodeAIOT, NodeAI, StateCompact, StateLong,
    /// NodeList, NodeHost, NodeAddr, CPUs, CPUsState, MaxCPUsPerNode, Memory, FreeMem,
    /// Features, FeaturesAct, Weight, Gres, Reason, User, UserLong, Timestamp.
    #[arg(short = 'O', long = "Format", value_name = "FIELDS")]
    pub long_format: Option<String>,
    /// Only these partitions (comma-separated).
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<String>,
    /// Only these nodes (a host list: `node-[1-4]`).
    #[arg(short = 'n', long = "nodes")]
    pub nodes: Option<String>,
    /// Only nodes in these states (comma-separated: idle, mix, alloc, drain, drng, down,
    /// or the long names).
    #[arg(short = 't', long = "states")]
    pub states: Option<String>,
    /// Only responding nodes (not down).
    #[arg(short = 'r', long = "responding")]
    pub responding: bool,
    /// Only nodes that stopped responding (down).
    #[arg(short = 'd', long = "dead")]
    pub dead: bool,
    /// Leave out the header line.
    #[arg(short = 'h', long = "noheader")]
    pub noheader: bool,
    /// Every partition, hidden ones too: Berth hides none.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Group only nodes whose shown fields are identical: what Berth always does.
    #[arg(short = 'e', long = "exact")]
    pub exact: bool,
    /// Do not show hidden partitions: Berth has none.
    #[arg(long)]
    pub hide: bool,
    /// Print sizes as they are (MiB): what Berth does.
    #[arg(long)]
    pub noconvert: bool,
    /// Show this cluster only: Berth's api serves one.
    #[arg(long)]
    pub local: bool,
    /// Repeat every SECONDS seconds, with the time above each report.
    #[arg(short = 'i', long = "iterate", value_name = "SECONDS")]
    pub iterate: Option<u64>,
    /// More detail on stderr (accepted; Berth prints nothing more).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// Berth's node table: one line per node with its CPUs (A/I/O/T), memory, GPUs
    /// allocated/total, GPU models, features and reason.
    #[arg(long)]
    pub gpus: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Refused: sort order.
    #[arg(
        short = 'S',
        long = "sort",
        value_name = "SORT",
        allow_hyphen_values = true
    )]
    pub sort: Option<String>,
    /// Refused: reservations (see `scontrol show reservation`).
    #[arg(short = 'T', long = "reservation")]
    pub reservation: bool,
    /// `all` or this cluster's name (Berth is one cluster; another name is refused);
    /// `SLURM_CLUSTERS` when absent. The table follows a `CLUSTER: NAME` line.
    #[arg(
        short = 'M',
        long = "clusters",
        visible_alias = "cluster",
        value_name = "CLUSTERS",
        allow_hyphen_values = true
    )]
    pub clusters: Option<String>,
    /// Refused: federation.
    #[arg(long)]
    pub federation: bool,
    /// Print Slurm's `sinfo --json` document (data parser v0.0.44: `sinfo` entries of
    /// node groups per partition, with `meta`, `errors`, `warnings`) instead of a table.
    #[arg(long, conflicts_with = "yaml")]
    pub json: bool,
    /// The same document as YAML (`sinfo --yaml`).
    #[arg(long)]
    pub yaml: bool,
}

impl SinfoArgs {
    /// The first option given that Berth refuses, as a message naming it.
    pub fn refused(&self) -> Option<String> {
        let r = |o: &str, why: &str| Some(crate::scancel::refusal("sinfo", o, why));
        if self.sort.is_some() {
            return r("-S/--sort", "lines come in partition and node order");
        }
        if self.reservation {
            return r("-T/--reservation", "use `scontrol show reservation`");
        }
        if self.federation {
            return r("--federation", "there is no federation");
        }
        None
    }

    /// The `%` format this view prints (`-o`, else `-O`'s translation, else the view's
    /// default).
    ///
    /// # Errors
    /// A bad `-O` field, named.
    pub fn view_format(&self) -> Result<String, String> {
        if let Some(f) = &self.format {
            return Ok(f.clone());
        }
        if let Some(f) = &self.long_format {
            return long_format_to_percent(f);
        }
        Ok(
            match (self.list_reasons, self.summarize, self.node, self.long) {
                (true, _, _, false) => "%20E %9u %19H %N",
                (true, _, _, true) => "%20E %12U %19H %6t %N",
                (false, true, _, _) => "%#P %.5a %.10l %.16F %N",
                (false, false, true, false) => "%#N %.6D %#P %6t",
                (false, false, true, true) => {
                    "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E"
                }
                (false, false, false, true) => "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N",
                (false, false, false, false) => "%#P %.5a %.10l %.6D %.6t %N",
            }
            .to_string(),
        )
    }
}

/// The letters sinfo `-o` takes in Berth, their headers and `-O` names.
const FIELDS: &[(char, &str, &str)] = &[
    ('P', "PARTITION", "Partition"),
    ('R', "PARTITION", "PartitionName"),
    ('a', "AVAIL", "Available"),
    ('l', "TIMELIMIT", "Time"),
    ('L', "DEFAULTTIME", "DefaultTime"),
    ('s', "JOB_SIZE", "Size"),
    ('p', "PRIO_TIER", "PriorityTier"),
    ('g', "GROUPS", "Groups"),
    ('h', "OVERSUBSCRIBE", "OverSubscribe"),
    ('r', "ROOT", "Root"),
    ('D', "NODES", "Nodes"),
    ('F', "NODES(A/I/O/T)", "NodeAIOT"),
    ('A', "NODES(A/I)", "NodeAI"),
    ('t', "STATE", "StateCompact"),
    ('T', "STATE", "StateLong"),
    ('N', "NODELIST", "NodeList"),
    ('n', "HOSTNAMES", "NodeHost"),
    ('o', "NODE_ADDR", "NodeAddr"),
    ('c', "CPUS", "CPUs"),
    ('C', "CPUS(A/I/O/T)", "CPUsState"),
    ('B', "MAX_CPUS_PER_NODE", "MaxCPUsPerNode"),
    ('z', "S:C:T", "SocketCoreThread"),
    ('X', "SOCKETS", "Sockets"),
    ('Y', "CORES", "Cores"),
    ('Z', "THREADS", "Threads"),
    ('d', "TMP_DISK", "Disk"),
    ('m', "MEMORY", "Memory"),
    ('e', "FREE_MEM", "FreeMem"),
    ('f', "AVAIL_FEATURES", "Features"),
    ('b', "ACTIVE_FEATURES", "FeaturesAct"),
    ('w', "WEIGHT", "Weight"),
    ('G', "GRES", "Gres"),
    ('E', "REASON", "Reason"),
    ('u', "USER", "User"),
    ('U', "USER", "UserLong"),
    ('H', "TIMESTAMP", "Timestamp"),
];

/// Fields summed or listed over a line's nodes, not part of what groups them.
const AGGREGATE: &[char] = &['D', 'N', 'n', 'o', 'C', 'F', 'A'];

/// Translates `-O Name[:[.]WIDTH][SUFFIX],…` into a `%` format (`%20N`, `%.10T`).
///
/// # Errors
/// An unknown name or a bad width, named.
pub fn long_format_to_percent(spec: &str) -> Result<String, String> {
    let mut out = String::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, size) = item.split_once(':').unwrap_or((item, ""));
        let letter = FIELDS
            .iter()
            .find(|(_, _, long)| long.eq_ignore_ascii_case(name))
            .map(|(l, _, _)| *l)
            .ok_or_else(|| {
                let names: Vec<&str> = FIELDS.iter().map(|(_, _, n)| *n).collect();
                format!(
                    "-O/--Format: {name:?} is not a field Berth shows ({})",
                    names.join(", ")
                )
            })?;
        let right = size.starts_with('.');
        let size = size.trim_start_matches('.');
        let digits: String = size.chars().take_while(char::is_ascii_digit).collect();
        let suffix = &size[digits.len()..];
        let width: usize = if digits.is_empty() {
            20
        } else {
            digits
                .parse()
                .map_err(|_| format!("-O/--Format: bad width in {item:?}"))?
        };
        out.push('%');
        if right {
            out.push('.');
        }
        out.push_str(&width.to_string());
        out.push(letter);
        out.push_str(&suffix.replace('%', "%%"));
    }
    Ok(out)
}

/// sinfo's `%T`: the long state in lower case (`idle`, `mixed`, `allocated`, `draining`,
/// `drained`, `down`), with a cloud node's power suffix (`idle~`).
fn state_long(node: &Node) -> String {
    let short = node_state_short(node);
    let (base, suffix) = match short.char_indices().last() {
        Some((i, '~' | '#' | '%')) => (&short[..i], &short[i..]),
        _ => (short.as_str(), ""),
    };
    let long = match base {
        "mix" => "mixed",
        "alloc" => "allocated",
        "drng" => "draining",
        "drain" => "drained",
        other => other,
    };
    format!("{long}{suffix}")
}

/// A node's share of `%F`: (allocated, idle, other) as 0/1 each.
fn node_aio(node: &Node) -> (u32, u32, u32) {
    match node.state {
        NodeState::Idle if node_state_short(node) == "idle" => (0, 1, 0),
        NodeState::Idle | NodeState::Mixed | NodeState::Allocated => (1, 0, 0),
        _ => (0, 0, 1),
    }
}

fn features(node: &Node) -> String {
    if node.features.is_empty() {
        "(null)".to_string()
    } else {
        node.features.join(",")
    }
}

/// The value of letter `kind` for `node` in `partition` (`None`: the `-R` view, which
/// is not by partition). Aggregates are filled in per line.
fn value(kind: char, partition: Option<&Partition>, node: Option<&Node>) -> String {
    let na = || "n/a".to_string();
    match (kind, partition, node) {
        ('P', Some(p), _) if p.is_default => format!("{}*", p.name),
        ('P' | 'R', Some(p), _) => p.name.clone(),
        ('a', Some(_), _) => "up".into(),
        ('l', Some(p), _) => sinfo_time_limit(p.max_time),
        ('L', Some(p), _) => match p.default_time {
            Some(t) => sinfo_time_limit(Some(t)),
            None => "n/a".into(),
        },
        ('s', Some(p), _) => match p.max_nodes {
            Some(n) => format!("1-{n}"),
            None => "1-infinite".into(),
        },
        ('p', Some(p), _) => p.priority_tier.to_string(),
        ('g', Some(_), _) => "all".into(),
        ('h', Some(_), _) => "NO".into(),
        ('r', Some(_), _) => "no".into(),
        ('B', Some(_), _) => "UNLIMITED".into(),
        ('t', _, None) | ('T', _, None) => na(),
        ('t', _, Some(n)) => node_state_short(n),
        ('T', _, Some(n)) => state_long(n),
        ('c', _, Some(n)) => n.cpus.to_string(),
        ('z', _, Some(n)) => {
            let (sockets, cores, threads) = node_shape(n);
            format!("{sockets}:{cores}:{threads}")
        }
        ('X', _, Some(n)) => node_shape(n).0.to_string(),
        ('Y', _, Some(n)) => node_shape(n).1.to_string(),
        ('Z', _, Some(n)) => node_shape(n).2.to_string(),
        ('d', _, Some(_)) => "0".into(),
        ('m', _, Some(n)) => n.memory_mib.to_string(),
        ('e', _, Some(n)) => n
            .memory_effective_mib
            .saturating_sub(n.memory_allocated_mib)
            .to_string(),
        ('f' | 'b', _, Some(n)) => features(n),
        ('w', _, Some(n)) => n.weight.to_string(),
        ('G', _, Some(n)) => {
            let whole = n.gpus.iter().filter(|g| g.parent.is_none()).count();
            if n.gpus.is_empty() {
                "(null)".into()
            } else {
                format!("gpu:{whole}")
            }
        }
        ('E', _, Some(n)) => n.reason.clone().unwrap_or_else(|| "none".into()),
        ('u' | 'U', _, Some(n)) => n.reason_user.clone().unwrap_or_else(|| "Unknown".into()),
        ('H', _, Some(n)) => crate::format::scontrol_time(n.reason_time),
        (_, _, None) => String::new(),
        _ => String::new(),
    }
}

/// One output line: what groups it, its nodes, and its fields' values.
struct Line {
    key: Vec<String>,
    nodes: Vec<Node>,
    values: Vec<String>,
}

/// sinfo's table in `%` format `format` (see the module's letters): one line per group
/// of nodes whose shown fields agree, per partition (`node_oriented`: one per node and
/// partition; `reasons`: the `-R` view, nodes with a reason, not by partition), with a
/// header unless `header` is false. A partition without nodes shows one `n/a` line
/// (not with `reasons` or `node_oriented`). Lines end in a newline, trailing spaces
/// trimmed.
///
/// # Errors
/// A letter Berth does not show, named.
pub fn render(
    format: &str,
    partitions: &[Partition],
    nodes: &[Node],
    node_oriented: bool,
    reasons: bool,
    header: bool,
) -> Result<String, String> {
    let known: Vec<char> = FIELDS.iter().map(|(k, _, _)| *k).collect();
    let parts = parse_percent_format(format, &known)?;
    // As Slurm's sinfo: lines are told apart by partition only when the format shows the
    // partition (`%P`, `%R`); otherwise identical lines of different partitions are one
    // (a node in two of them counted once), and a partition without nodes shows nothing.
    let by_partition = parts.iter().any(|p| {
        matches!(
            p,
            SinfoPart::Field {
                kind: 'P' | 'R',
                ..
            }
        )
    });
    let mut lines: Vec<Line> = Vec::new();
    let mut add = |partition: Option<&Partition>, node: Option<&Node>| {
        let values: Vec<String> = parts
            .iter()
            .map(|p| match p {
                SinfoPart::Field { kind, .. } if !AGGREGATE.contains(kind) => {
                    value(*kind, partition, node)
                }
                _ => String::new(),
            })
            .collect();
        let mut key = vec![partition
            .filter(|_| by_partition)
            .map(|p| p.name.clone())
            .unwrap_or_default()];
        key.extend(values.iter().cloned());
        if node_oriented {
            key.push(node.map(|n| n.name.clone()).unwrap_or_default());
        }
        match lines.iter_mut().find(|l| l.key == key) {
            Some(line) => {
                if let Some(node) = node.filter(|n| !line.nodes.iter().any(|m| m.name == n.name)) {
                    line.nodes.push(node.clone());
                }
            }
            None => lines.push(Line {
                key,
                nodes: node.cloned().into_iter().collect(),
                values,
            }),
        }
    };
    if reasons {
        for node in nodes.iter().filter(|n| n.reason.is_some()) {
            add(None, Some(node));
        }
    } else {
        for partition in partitions {
            let members: Vec<&Node> = nodes
                .iter()
                .filter(|n| node_in_partition(n, partition))
                .collect();
            if members.is_empty() && !node_oriented && by_partition {
                add(Some(partition), None);
            }
            for node in members {
                add(Some(partition), Some(node));
            }
        }
    }
    // Every line's cells, aggregates filled in.
    let mut rows: Vec<Vec<String>> = Vec::new();
    for l in &lines {
        let names: Vec<String> = l.nodes.iter().map(|n| n.name.clone()).collect();
        let cpus = l.nodes.iter().map(cpus_aiot).fold((0, 0, 0, 0), |s, c| {
            (s.0 + c.0, s.1 + c.1, s.2 + c.2, s.3 + c.3)
        });
        let aio = l
            .nodes
            .iter()
            .map(node_aio)
            .fold((0, 0, 0), |s, c| (s.0 + c.0, s.1 + c.1, s.2 + c.2));
        let row = parts
            .iter()
            .zip(&l.values)
            .map(|(p, v)| match p {
                SinfoPart::Literal(_) => String::new(),
                SinfoPart::Field { kind, .. } => match kind {
                    'D' => names.len().to_string(),
                    'N' | 'n' | 'o' => hostlist::compress(&names),
                    'C' => format!("{}/{}/{}/{}", cpus.0, cpus.1, cpus.2, cpus.3),
                    'F' => format!("{}/{}/{}/{}", aio.0, aio.1, aio.2, names.len()),
                    'A' => format!("{}/{}", aio.0, aio.1),
                    _ => v.clone(),
                },
            })
            .collect();
        rows.push(row);
    }
    let heads: Vec<String> = parts
        .iter()
        .map(|p| match p {
            SinfoPart::Field { kind, .. } => FIELDS
                .iter()
                .find(|(k, _, _)| k == kind)
                .map_or("", |(_, h, _)| h)
                .to_string(),
            SinfoPart::Literal(_) => String::new(),
        })
        .collect();
    // `%#X`: as wide as the widest value (and the header).
    let widths: Vec<Option<usize>> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| match p {
            SinfoPart::Field { width: Some(0), .. } => Some(
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([heads[i].chars().count()])
                    .max()
                    .unwrap_or(0),
            ),
            SinfoPart::Field { width, .. } => *width,
            SinfoPart::Literal(_) => None,
        })
        .collect();
    let render_line = |cells: &[String]| {
        let mut line = String::new();
        for (i, p) in parts.iter().enumerate() {
            match p {
                SinfoPart::Literal(text) => line.push_str(text),
                SinfoPart::Field { right, .. } => match widths[i] {
                    Some(w) => line.push_str(&field(&cells[i], w, *right)),
                    None => line.push_str(&cells[i]),
                },
            }
        }
        let mut line = line.trim_end().to_string();
        line.push('\n');
        line
    };
    let mut out = String::new();
    if header {
        out.push_str(&render_line(&heads));
    }
    for row in &rows {
        out.push_str(&render_line(row));
    }
    Ok(out)
}

/// Whether `node` is in one of sinfo `-t`'s states (short or long names, any case;
/// `drain` also takes draining nodes, as in Slurm).
fn in_states(node: &Node, states: &[String]) -> bool {
    let short = node_state_short(node);
    let long = state_long(node);
    let bare = |s: &str| s.trim_end_matches(['~', '#', '%', '*']).to_string();
    states.iter().any(|s| {
        let s = s.to_ascii_lowercase();
        s == short
            || s == long
            || s == bare(&short)
            || s == bare(&long)
            || s == node.state.as_str().to_ascii_lowercase()
            || (s == "drain" && matches!(node.state, NodeState::Draining | NodeState::Drained))
            || (s == "powered_down" || s == "cloud") && node.state == NodeState::PoweredDown
    })
}

/// `sinfo ARGS`: prints the view; the exit status.
///
/// # Errors
/// An option Berth refuses, a bad format, filter or state, or the api's refusal.
pub async fn run(client: &Client, args: &SinfoArgs) -> anyhow::Result<i32> {
    if let Some(message) = args.refused() {
        anyhow::bail!(message);
    }
    let format = args.view_format().map_err(anyhow::Error::msg)?;
    let cluster = crate::clusters::check(
        client,
        "sinfo",
        args.clusters.as_deref(),
        Some("SLURM_CLUSTERS"),
    )
    .await?;
    let wanted_nodes = match &args.nodes {
        Some(list) => Some(
            hostlist::expand(list)
                .map_err(|e| anyhow::anyhow!("sinfo: -n/--nodes {list:?}: {e}"))?,
        ),
        None => None,
    };
    let states: Option<Vec<String>> = args
        .states
        .as_ref()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    if let Some(states) = &states {
        const KNOWN: &[&str] = &[
            "idle",
            "mix",
            "mixed",
            "alloc",
            "allocated",
            "drain",
            "drained",
            "drng",
            "draining",
            "down",
            "powered_down",
            "powering_up",
            "powering_down",
            "cloud",
        ];
        if let Some(bad) = states
            .iter()
            .find(|s| !KNOWN.contains(&s.to_ascii_lowercase().as_str()))
        {
            anyhow::bail!("sinfo: error: Invalid node state specified: {bad}");
        }
    }
    loop {
        let mut nodes = client.node_list().await?.items;
        nodes.retain(|n| {
            wanted_nodes.as_ref().is_none_or(|w| w.contains(&n.name))
                && states.as_ref().is_none_or(|s| in_states(n, s))
                && (!args.responding || n.state != NodeState::Down)
                && (!args.dead || n.state == NodeState::Down)
        });
        let node_filtered =
            wanted_nodes.is_some() || states.is_some() || args.responding || args.dead;
        if args.json || args.yaml {
            if args.list_reasons {
                nodes.retain(|n| n.reason.is_some());
            }
            let mut partitions = client.partition_list().await?.items;
            if let Some(p) = &args.partition {
                let wanted: Vec<&str> = p.split(',').map(str::trim).collect();
                partitions.retain(|x| wanted.contains(&x.name.as_str()));
            }
            let all_nodes: Vec<String> = if node_filtered || args.list_reasons {
                client
                    .node_list()
                    .await?
                    .items
                    .into_iter()
                    .map(|n| n.name)
                    .collect()
            } else {
                nodes.iter().map(|n| n.name.clone()).collect()
            };
            let who: serde_json::Value = client.get_json("/v1/whoami").await?;
            crate::clusters::name(client).await?;
            let document = berth_api::slurmrestd::sinfo_document(
                &partitions,
                &nodes,
                &all_nodes,
                args.node,
                node_filtered || args.list_reasons,
                who["user"].as_str().unwrap_or(""),
            );
            crate::format::print_document(&document, args.yaml)?;
            let Some(seconds) = args.iterate else {
                return Ok(0);
            };
            tokio::time::sleep(std::time::Duration::from_secs(seconds.max(1))).await;
            continue;
        }
        let text = if args.gpus {
            crate::format::node_table(&nodes)
        } else {
            let mut partitions = client.partition_list().await?.items;
            if let Some(p) = &args.partition {
                let wanted: Vec<&str> = p.split(',').map(str::trim).collect();
                partitions.retain(|x| wanted.contains(&x.name.as_str()));
            }
            if node_filtered {
                // A partition none of whose nodes pass shows nothing.
                partitions.retain(|p| nodes.iter().any(|n| node_in_partition(n, p)));
            }
            render(
                &format,
                &partitions,
                &nodes,
                args.node,
                args.list_reasons && args.format.is_none() && args.long_format.is_none(),
                !args.noheader,
            )
            .map_err(anyhow::Error::msg)?
        };
        // Slurm's multi-cluster form: `CLUSTER: NAME` above the table.
        let text = match &cluster {
            Some(name) if !args.noheader => format!("CLUSTER: {name}\n{text}"),
            _ => text,
        };
        let Some(seconds) = args.iterate else {
            print!("{text}");
            return Ok(0);
        };
        println!("{}", chrono::Local::now().format("%a %b %e %H:%M:%S %Y"));
        print!("{text}");
        println!();
        use std::io::Write;
        std::io::stdout().flush()?;
        tokio::time::sleep(std::time::Duration::from_secs(seconds.max(1))).await;
    }
}

/// A node's sockets, cores per socket and threads per core (Slurm's `%X`, `%Y`, `%Z`): as
/// the api shows them, or `CPUs:1:1` (a node configured with CPUs alone) from an api that
/// shows none.
fn node_shape(n: &Node) -> (u32, u32, u32) {
    if n.threads_per_core == 0 {
        (n.cpus, 1, 1)
    } else {
        (n.sockets, n.cores_per_socket, n.threads_per_core)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::tests::{node, partition};

    fn args(line: &[&str]) -> SinfoArgs {
        #[derive(clap::Parser)]
        #[command(disable_help_flag = true)]
        struct P {
            #[command(flatten)]
            a: SinfoArgs,
        }
        let mut v = vec!["sinfo"];
        v.extend(line);
        <P as clap::Parser>::try_parse_from(v).unwrap().a
    }

    /// When node-5 was drained.
    fn reason_time() -> chrono::DateTime<chrono::Utc> {
        "2026-12-01T10:20:30Z".parse().unwrap()
    }

    fn cluster() -> (Vec<Partition>, Vec<Node>) {
        let mut n2 = node("node-2", NodeState::Mixed, 8, 2);
        n2.cpus_allocated = 4;
        let mut n5 = node("node-5", NodeState::Drained, 8, 0);
        n5.reason = Some("bad fan".into());
        n5.reason_user = Some("olga".into());
        n5.reason_time = Some(reason_time());
        let nodes = vec![
            node("node-1", NodeState::Idle, 8, 0),
            n2,
            node("node-3", NodeState::Idle, 8, 0),
            node("node-4", NodeState::Idle, 8, 0),
            n5,
        ];
        let mut debug = partition("debug", false);
        debug.nodes = vec!["node-9".into()];
        debug.max_time = Some(1800);
        (vec![partition("gpu", true), debug], nodes)
    }

    fn view(line: &[&str]) -> Vec<String> {
        let (p, n) = cluster();
        let a = args(line);
        render(
            &a.view_format().unwrap(),
            &p,
            &n,
            a.node,
            a.list_reasons,
            !a.noheader,
        )
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
    }

    #[test]
    fn default_view_groups_by_partition_and_state() {
        assert_eq!(
            view(&[]),
            vec![
                "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
                "gpu*         up   infinite      3   idle node-[1,3-4]",
                "gpu*         up   infinite      1    mix node-2",
                "gpu*         up   infinite      1  drain node-5",
                "debug        up      30:00      0    n/a",
            ]
        );
        assert_eq!(
            view(&["-h"])[0],
            "gpu*         up   infinite      3   idle node-[1,3-4]"
        );
    }

    /// Issue 29: without `%P`/`%R` in the format, identical lines of different
    /// partitions are one, each node counted once, as Slurm's sinfo prints them.
    #[test]
    fn a_format_without_the_partition_merges_identical_lines() {
        let (mut p, n) = cluster();
        p[1].nodes = vec!["node-1".into(), "node-2".into(), "node-9".into()];
        let text = |format: &str| render(format, &p, &n, false, false, true).unwrap();
        assert_eq!(
            text("%t %D %N"),
            "STATE NODES NODELIST\nidle 3 node-[1,3-4]\nmix 1 node-2\ndrain 1 node-5\n"
        );
        // With the partition, a line per partition (and one for a partition with none).
        assert_eq!(
            text("%P %t %D %N"),
            "PARTITION STATE NODES NODELIST\ngpu* idle 3 node-[1,3-4]\ngpu* mix 1 node-2\n\
             gpu* drain 1 node-5\ndebug idle 1 node-1\ndebug mix 1 node-2\n"
        );
    }

    #[test]
    fn summarize_counts_nodes_allocated_idle_other_total() {
        assert_eq!(
            view(&["-s"]),
            vec![
                "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST",
                "gpu*         up   infinite          1/3/1/5 node-[1-5]",
                "debug        up      30:00          0/0/0/0",
            ]
        );
    }

    #[test]
    fn list_reasons_shows_only_nodes_with_one() {
        assert_eq!(
            view(&["-R"]),
            vec![
                "REASON               USER      TIMESTAMP           NODELIST",
                format!(
                    "bad fan              olga      {} node-5",
                    crate::format::scontrol_time(Some(reason_time()))
                )
                .as_str(),
            ]
        );
        // A reason from before Berth recorded who set it and when.
        let (p, mut n) = cluster();
        n[4].reason_user = None;
        n[4].reason_time = None;
        let a = args(&["-R"]);
        let text = render(
            &a.view_format().unwrap(),
            &p,
            &n,
            a.node,
            a.list_reasons,
            !a.noheader,
        )
        .unwrap();
        assert_eq!(
            text.lines().nth(1),
            Some("bad fan              Unknown   Unknown             node-5")
        );
        assert_eq!(
            view(&["-R", "-l"])[0],
            "REASON               USER         TIMESTAMP           STATE  NODELIST"
        );
    }

    #[test]
    fn long_and_node_oriented_views_have_slurms_columns() {
        assert_eq!(
            view(&["-l"])[..3],
            [
                "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST",
                "gpu*         up   infinite 1-infinite   no       NO        all      3        idle node-[1,3-4]",
                "gpu*         up   infinite 1-infinite   no       NO        all      1       mixed node-2",
            ]
        );
        assert_eq!(
            view(&["-N"])[..3],
            [
                "NODELIST  NODES PARTITION STATE",
                "node-1        1 gpu*      idle",
                "node-2        1 gpu*      mix",
            ]
        );
        assert_eq!(
            view(&["-N", "-l"])[..2],
            [
                "NODELIST  NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON",
                "node-1        1 gpu*             idle   32   32:1:1   1024        0      1   (null) none",
            ]
        );
    }

    #[test]
    fn format_letters_and_long_field_names() {
        let (p, n) = cluster();
        let out = render("%P %C %c %m %f", &p[..1], &n[..3], false, false, true).unwrap();
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            vec![
                "PARTITION CPUS(A/I/O/T) CPUS MEMORY AVAIL_FEATURES",
                "gpu* 4/92/0/96 32 1024 (null)",
            ]
        );
        let f = long_format_to_percent("NodeList:10,StateLong:.8,CPUs").unwrap();
        assert_eq!(f, "%10N%.8T%20c");
        let out = render(&f, &p[..1], &n[..2], true, false, false).unwrap();
        assert_eq!(out, "node-1        idle32\nnode-2       mixed32\n");
        let err = long_format_to_percent("NodeList,Bogus").unwrap_err();
        assert!(err.contains("\"Bogus\""), "{err}");
        let err = render("%P %v", &p, &n, false, false, true).unwrap_err();
        assert!(err.contains("%v"), "{err}");
    }

    #[test]
    fn refused_options_are_named() {
        assert_eq!(args(&["--json"]).refused(), None);
        assert_eq!(args(&["--yaml", "-N"]).refused(), None);
        assert!(args(&["-S", "P"]).refused().unwrap().contains("-S/--sort"));
        assert_eq!(args(&["-p", "gpu", "-t", "idle"]).refused(), None);
    }
}
