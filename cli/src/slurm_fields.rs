//! The output fields of Slurm's `squeue` (`-O` names and `-o` letters) and `sacct`
//! (`-o` names), as Slurm (master of 2026-08, the 25.x series) defines them in
//! `src/squeue/opts.c` (`fmt_data_job`, hidden aliases left out) and `src/sacct/sacct.c`
//! (`fields`): the list the docs' field tables and the tests that every field is printed
//! or refused by name are made from.

/// squeue's job fields: the `-O/--Format` name and, when it has one, the `-o/--format`
/// letter.
pub const SQUEUE_JOB_FIELDS: &[(&str, Option<char>)] = &[
    ("Account", Some('a')),
    ("AccrueTime", None),
    ("admin_comment", None),
    ("AllocNodes", None),
    ("AllocSID", None),
    ("ArrayJobId", Some('F')),
    ("ArrayTaskId", Some('K')),
    ("AssocId", None),
    ("BatchFlag", None),
    ("BatchHost", Some('B')),
    ("BoardsPerNode", None),
    ("BurstBuffer", None),
    ("BurstBufferState", None),
    ("Cluster", None),
    ("ClusterFeature", None),
    ("Command", Some('o')),
    ("Comment", Some('k')),
    ("Container", None),
    ("ContainerId", None),
    ("Contiguous", Some('O')),
    ("Cores", Some('I')),
    ("CoreSpec", Some('X')),
    ("CPUsPerTask", None),
    ("cpus-per-task", None),
    ("cpus-per-tres", None),
    ("CronJob", None),
    ("Deadline", None),
    ("DelayBoot", None),
    ("Dependency", Some('E')),
    ("DerivedEC", None),
    ("EligibleTime", None),
    ("EndTime", Some('e')),
    ("ExcNodes", Some('x')),
    ("Exclusive", None),
    ("exit_code", None),
    ("Feature", Some('f')),
    ("GroupId", Some('G')),
    ("GroupName", Some('g')),
    ("HetJobId", None),
    ("HetJobIdSet", None),
    ("HetJobOffset", None),
    ("JobArrayId", Some('i')),
    ("JobId", Some('A')),
    ("LastSchedEval", None),
    ("Licenses", Some('W')),
    ("LicensesAlloc", None),
    ("MaxCPUs", None),
    ("MaxNodes", None),
    ("mem-per-tres", None),
    ("MCSLabel", None),
    ("MinCPUs", Some('c')),
    ("MinMemory", Some('m')),
    ("MinTime", None),
    ("MinTmpDisk", Some('d')),
    ("Name", Some('j')),
    ("Network", None),
    ("Nice", Some('y')),
    ("NodeList", Some('N')),
    ("NTPerCore", None),
    ("NTPerNode", None),
    ("NTPerSocket", None),
    ("NTPerBoard", None),
    ("NumCPUs", Some('C')),
    ("NumNodes", Some('D')),
    ("NumTasks", None),
    ("Origin", None),
    ("OriginRaw", None),
    ("OverSubscribe", Some('h')),
    ("Partition", Some('P')),
    ("PendingTime", None),
    ("PreemptTime", None),
    ("Prefer", None),
    ("Priority", Some('p')),
    ("PriorityLong", Some('Q')),
    ("Profile", None),
    ("QOS", Some('q')),
    ("Reason", Some('r')),
    ("ReasonList", Some('R')),
    ("Reboot", None),
    ("ReqNodes", Some('n')),
    ("ReqSwitch", None),
    ("Requeue", None),
    ("Reservation", Some('v')),
    ("ResizeTime", None),
    ("RestartCnt", None),
    ("Runtime", None),
    ("SchedNodes", Some('Y')),
    ("SCT", Some('z')),
    ("SegmentSize", None),
    ("SiblingsActive", None),
    ("SiblingsActiveRaw", None),
    ("SiblingsViable", None),
    ("SiblingsViableRaw", None),
    ("SLUID", Some('s')),
    ("Sockets", Some('H')),
    ("SPerBoard", None),
    ("StartTime", Some('S')),
    ("State", Some('T')),
    ("StateCompact", Some('t')),
    ("StdErr", None),
    ("StdIn", None),
    ("StdOut", None),
    ("SubmitTime", Some('V')),
    ("system_comment", None),
    ("Threads", Some('J')),
    ("TimeLeft", Some('L')),
    ("TimeLimit", Some('l')),
    ("TimeUsed", Some('M')),
    ("tres-alloc", None),
    ("tres-bind", None),
    ("tres-freq", None),
    ("tres-per-job", None),
    ("tres-per-node", None),
    ("tres-per-socket", None),
    ("tres-per-task", None),
    ("UserId", Some('U')),
    ("UserName", Some('u')),
    ("Wait4Switch", None),
    ("WCKey", Some('w')),
    ("WorkDir", Some('Z')),
];

/// sacct's `-o/--format` field names.
pub const SACCT_FIELDS: &[&str] = &[
    "Account",
    "AdminComment",
    "AllocCPUS",
    "AllocNodes",
    "AllocTRES",
    "AssocID",
    "AveCPU",
    "AveCPUFreq",
    "AveDiskRead",
    "AveDiskWrite",
    "AvePages",
    "AveRSS",
    "AveVMSize",
    "BlockID",
    "Cluster",
    "Comment",
    "Constraints",
    "ConsumedEnergy",
    "ConsumedEnergyRaw",
    "Container",
    "CPUTime",
    "CPUTimeRAW",
    "DBIndex",
    "DerivedExitCode",
    "Elapsed",
    "ElapsedRaw",
    "Eligible",
    "End",
    "Exclusive",
    "ExitCode",
    "Extra",
    "FailedNode",
    "Flags",
    "GID",
    "Group",
    "JobID",
    "JobIDRaw",
    "JobName",
    "Layout",
    "Licenses",
    "MaxDiskRead",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWrite",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "MaxPages",
    "MaxPagesNode",
    "MaxPagesTask",
    "MaxRSS",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSize",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "McsLabel",
    "MinCPU",
    "MinCPUNode",
    "MinCPUTask",
    "NCPUS",
    "NNodes",
    "NodeList",
    "NTasks",
    "OriginalSLUID",
    "OverSubscribe",
    "Partition",
    "Planned",
    "PlannedCPU",
    "PlannedCPURAW",
    "Priority",
    "QOS",
    "QOSRAW",
    "QOSREQ",
    "Reason",
    "ReqCPUFreq",
    "ReqCPUFreqGov",
    "ReqCPUFreqMax",
    "ReqCPUFreqMin",
    "ReqCPUS",
    "ReqMem",
    "ReqNodes",
    "ReqTRES",
    "Reservation",
    "ReservationId",
    "ReqReservation",
    "Restarts",
    "SegmentSize",
    "SLUID",
    "Start",
    "State",
    "StdErr",
    "StdIn",
    "StdOut",
    "Submit",
    "SubmitLine",
    "Suspended",
    "SystemComment",
    "SystemCPU",
    "Timelimit",
    "TimelimitRaw",
    "TotalCPU",
    "TRESUsageInAve",
    "TRESUsageInMax",
    "TRESUsageInMaxNode",
    "TRESUsageInMaxTask",
    "TRESUsageInMin",
    "TRESUsageInMinNode",
    "TRESUsageInMinTask",
    "TRESUsageInTot",
    "TRESUsageOutAve",
    "TRESUsageOutMax",
    "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask",
    "TRESUsageOutMin",
    "TRESUsageOutMinNode",
    "TRESUsageOutMinTask",
    "TRESUsageOutTot",
    "UID",
    "User",
    "UserCPU",
    "WCKey",
    "WCKeyID",
    "WorkDir",
];

/// Where [`fields_markdown`] is checked in, relative to the workspace.
pub const DOCS_PATH: &str = "docs/src/generated/fields.md";

/// The docs' page of squeue's and sacct's fields, each with what Berth does with it,
/// found by asking Berth's own format parsers ([`crate::squeue::parse_long_format`],
/// [`crate::squeue::parse_format`], [`crate::acct::parse_format`]): `printed` (Slurm's
/// value) or `refused` (the command stops, naming the field).
pub fn fields_markdown() -> String {
    let verdict = |ok: bool| if ok { "printed" } else { "refused" };
    let mut out = String::from(
        "<!-- Generated by `BERTH_UPDATE_DOCS=1 cargo test -p berth --lib fields_markdown` \
         from Slurm's field lists (cli/src/slurm_fields.rs) and Berth's own format parsers: \
         do not edit by hand. -->\n\n\
         ## squeue\n\n\
         `-O/--Format` names (any case) and `-o/--format` letters of job fields (steps, \
         `-s`, print their default columns).\n\n\
         | `-O` name | on Berth | `-o` letter | on Berth |\n|---|---|---|---|\n",
    );
    let (mut printed, mut total) = (0, 0);
    for (name, letter) in SQUEUE_JOB_FIELDS {
        let by_name = crate::squeue::parse_long_format(name).is_ok();
        total += 1;
        printed += usize::from(by_name);
        let (letter_cell, letter_verdict) = match letter {
            Some(c) => (
                format!("`%{c}`"),
                verdict(crate::squeue::parse_format(&format!("%{c}")).is_ok()),
            ),
            None => (String::new(), ""),
        };
        out.push_str(&format!(
            "| `{name}` | {} | {letter_cell} | {letter_verdict} |\n",
            verdict(by_name)
        ));
    }
    out.push_str(&format!(
        "\n{printed} of {total} `-O` fields printed.\n\n## sacct\n\n`-o/--format` names (any \
         case; `NAME%WIDTH` sets a width).\n\n| field | on Berth |\n|---|---|\n"
    ));
    let (mut printed, mut total) = (0, 0);
    for name in SACCT_FIELDS {
        let ok = crate::acct::parse_format(name).is_ok();
        total += 1;
        printed += usize::from(ok);
        out.push_str(&format!("| `{name}` | {} |\n", verdict(ok)));
    }
    out.push_str(&format!(
        "\n{printed} of {total} fields printed. Berth's own fields, not in Slurm: \
         `sacct --helpformat` lists them with the others.\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of Slurm's is printed or refused naming it, never taken as another.
    #[test]
    fn every_slurm_field_is_printed_or_refused_by_name() {
        for (name, letter) in SQUEUE_JOB_FIELDS {
            if let Err(e) = crate::squeue::parse_long_format(name) {
                assert!(e.contains(&format!("{name:?}")), "{name}: {e}");
            }
            if let Some(c) = letter {
                if let Err(e) = crate::squeue::parse_format(&format!("%{c}")) {
                    assert!(e.contains(&format!("%{c}")), "%{c}: {e}");
                }
            }
        }
        for name in SACCT_FIELDS {
            if let Err(e) = crate::acct::parse_format(name) {
                assert!(e.contains(&format!("{name:?}")), "{name}: {e}");
            }
        }
    }

    #[test]
    fn fields_markdown() {
        let generated = super::fields_markdown();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(DOCS_PATH);
        if std::env::var_os("BERTH_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated,
            "{DOCS_PATH} is stale: run `BERTH_UPDATE_DOCS=1 cargo test -p berth --lib fields_markdown`"
        );
        assert!(generated.contains("| `Reason` | printed | `%r` | printed |"));
    }
}
