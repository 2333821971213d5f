//! The report journal: job reports kept on disk, numbered, until the api acknowledges
//! them, so that neither an api or database outage nor a worker restart loses one; and,
//! after that, a bounded history of acknowledged reports, so that a database failover that
//! forgets them loses nothing either.
//!
//! `{state_dir}/journal/reports.jsonl` holds one JSON line per report not yet
//! acknowledged, each with its sequence number (`seq`, increasing per node), after a
//! first line `{"next_seq": N, "acked_seq": M}` (`acked_seq`: the highest number the api
//! acknowledged). A new report is appended and flushed to disk before it is sent; an
//! acknowledgement first appends the reports the api took to
//! `{state_dir}/journal/history.jsonl`, then rewrites the pending file (write a temporary
//! file, then rename) without them. A line cut short by a crash is skipped on reading.
//! The api applies each report once per (job, run, kind, node), so a report sent again
//! after a crash between its acknowledgement and the rewrite changes nothing.
//!
//! The history keeps the last [`HISTORY_REPORTS`] acknowledged reports (the file is
//! compacted when it holds twice as many). It answers two questions: whether this node
//! ever ran a job run (the worker never launches one a second time, whatever the api
//! says after a failover), and which reports to send again when the api's database
//! remembers fewer than it acknowledged ([`Journal::resend_after`]).
//!
//! Batch scripts that outlive a worker process are found again by the launcher (their
//! shepherds keep them going), so a restarted worker reports them as running and the api
//! never assigns a run twice.

use berth_core::wire::{JobReport, ReportKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Acknowledged reports kept in the history (about half as many job runs).
pub const HISTORY_REPORTS: usize = 4096;

/// One line of the journal file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header {
        next_seq: u64,
        #[serde(default)]
        acked_seq: u64,
    },
    Report(Box<JobReport>),
}

/// What the journal knows of a job run this node was given.
#[derive(Debug, Clone, PartialEq)]
pub enum RunRecord<'a> {
    /// Never seen: it may be launched.
    Unknown,
    /// Started here, no end recorded.
    Started,
    /// Ended here (exited or could not start), with its end report.
    Ended(&'a JobReport),
}

/// The on-disk queue of reports not yet acknowledged, and the history of those that were.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    file: Option<File>,
    next_seq: u64,
    acked_seq: u64,
    pending: Vec<JobReport>,
    /// Acknowledged reports by sequence number, the last [`HISTORY_REPORTS`].
    history: BTreeMap<u64, JobReport>,
    history_lines: usize,
    /// [`HISTORY_REPORTS`] (smaller in tests).
    history_limit: usize,
}

/// A new file of this process's user alone (mode 0600), replacing any at `path`: the
/// journal holds the node's reports and the runs' grants.
fn private_file(path: &Path) -> std::io::Result<File> {
    let _ = std::fs::remove_file(path);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

fn read_lines(path: &Path) -> Vec<Line> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Line>(&line) {
            Ok(parsed) => lines.push(parsed),
            Err(_) => tracing::warn!(file = %path.display(), "skipping a damaged journal line"),
        }
    }
    lines
}

impl Journal {
    /// Opens (or creates) the journal under `state_dir`, loading the reports a previous
    /// worker process left unacknowledged, oldest first, and the history.
    ///
    /// # Errors
    /// When the directory cannot be created or the file cannot be written.
    pub fn open(state_dir: &Path) -> std::io::Result<Journal> {
        Self::open_keeping(state_dir, HISTORY_REPORTS)
    }

    /// [`Journal::open`] with a history of `history_limit` reports.
    fn open_keeping(state_dir: &Path, history_limit: usize) -> std::io::Result<Journal> {
        let dir = state_dir.join("journal");
        std::fs::create_dir_all(&dir)?;
        let mut next_seq = 1;
        let mut acked_seq = 0;
        let mut history = BTreeMap::new();
        let mut history_lines = 0;
        for line in read_lines(&dir.join("history.jsonl")) {
            if let Line::Report(report) = line {
                history_lines += 1;
                if let Some(seq) = report.seq {
                    next_seq = next_seq.max(seq + 1);
                    acked_seq = acked_seq.max(seq);
                    history.insert(seq, *report);
                }
            }
        }
        let mut pending = Vec::new();
        for line in read_lines(&dir.join("reports.jsonl")) {
            match line {
                Line::Header {
                    next_seq: n,
                    acked_seq: a,
                } => {
                    next_seq = next_seq.max(n);
                    acked_seq = acked_seq.max(a);
                }
                Line::Report(report) => {
                    if let Some(seq) = report.seq {
                        next_seq = next_seq.max(seq + 1);
                        // Acknowledged, then a crash before the pending file was rewritten.
                        if history.contains_key(&seq) {
                            continue;
                        }
                    }
                    pending.push(*report);
                }
            }
        }
        pending.sort_by_key(|r| r.seq);
        while history.len() > history_limit {
            history.pop_first();
        }
        let mut journal = Journal {
            dir,
            file: None,
            next_seq,
            acked_seq,
            pending,
            history,
            history_lines,
            history_limit,
        };
        journal.rewrite()?;
        if journal.history_lines > 2 * history_limit {
            journal.compact_history();
        }
        Ok(journal)
    }

    /// The reports not yet acknowledged, oldest first.
    pub fn pending(&self) -> &[JobReport] {
        &self.pending
    }

    /// The highest job id of the reports it keeps, pending or acknowledged (`None` when it
    /// keeps none).
    pub fn max_job_id(&self) -> Option<i64> {
        self.pending
            .iter()
            .chain(self.history.values())
            .map(|r| r.job_id)
            .max()
    }

    /// The highest sequence number the api acknowledged (0 when none).
    pub fn acked_seq(&self) -> u64 {
        self.acked_seq
    }

    /// What the journal knows of job run (`job_id`, `run`) of `incarnation`, pending or
    /// acknowledged: reports of another incarnation (another job that had the same id,
    /// before a database failover) are not this run's.
    pub fn run_record(
        &self,
        job_id: i64,
        run: u32,
        incarnation: Option<berth_core::wire::Incarnation>,
    ) -> RunRecord<'_> {
        let mut started = false;
        for report in self.pending.iter().chain(self.history.values()) {
            if report.job_id != job_id
                || report.run != run
                || !berth_core::wire::same_incarnation(report.incarnation, incarnation)
            {
                continue;
            }
            if report.kind == ReportKind::Started {
                started = true;
            } else {
                return RunRecord::Ended(report);
            }
        }
        if started {
            RunRecord::Started
        } else {
            RunRecord::Unknown
        }
    }

    /// Numbers `report`, writes it to disk, and queues it. A failing disk is logged and
    /// the report kept in memory.
    pub fn append(&mut self, mut report: JobReport) -> &JobReport {
        report.seq = Some(self.next_seq);
        self.next_seq += 1;
        let result = (|| -> std::io::Result<()> {
            let file = match &mut self.file {
                Some(file) => file,
                None => return Err(std::io::Error::other("the journal file is not open")),
            };
            let mut line = serde_json::to_vec(&Line::Report(Box::new(report.clone())))?;
            line.push(b'\n');
            file.write_all(&line)?;
            file.sync_data()
        })();
        if let Err(e) = result {
            tracing::error!(error = %e, dir = %self.dir.display(), "could not write the report journal; keeping the report in memory");
        }
        self.pending.push(report);
        self.pending.last().expect("just pushed")
    }

    /// The api took the first `n` pending reports (applied or refused for good): moves
    /// them to the history, on disk too.
    pub fn ack(&mut self, n: usize) {
        let n = n.min(self.pending.len());
        if n == 0 {
            return;
        }
        let taken: Vec<JobReport> = self.pending.drain(..n).collect();
        if let Err(e) = self.remember(&taken) {
            tracing::error!(error = %e, dir = %self.dir.display(), "could not write the report history");
        }
        if let Err(e) = self.rewrite() {
            tracing::error!(error = %e, dir = %self.dir.display(), "could not rewrite the report journal");
        }
    }

    /// The api's database remembers this node's reports only up to `remembered`: the
    /// acknowledged reports after it that the history keeps go back to the pending queue
    /// (with their numbers, in order), to be sent again. Returns how many. When the
    /// history keeps none of them, the journal's `acked_seq` falls back to `remembered`
    /// (what it no longer has is lost; the api stops asking).
    pub fn resend_after(&mut self, remembered: u64) -> usize {
        let again: Vec<JobReport> = self
            .history
            .range(remembered + 1..)
            .map(|(_, r)| r.clone())
            .filter(|r| !self.pending.iter().any(|p| p.seq == r.seq))
            .collect();
        let oldest = self.history.keys().next().copied();
        if oldest.is_some_and(|oldest| oldest > remembered + 1) {
            tracing::warn!(remembered, oldest, "the report history no longer reaches back to what the api's database remembers; some reports are lost");
        }
        if again.is_empty() {
            self.acked_seq = remembered;
        } else {
            self.pending.extend(again.iter().cloned());
            self.pending.sort_by_key(|r| r.seq);
        }
        if let Err(e) = self.rewrite() {
            tracing::error!(error = %e, dir = %self.dir.display(), "could not rewrite the report journal");
        }
        again.len()
    }

    /// Sends the end report of an ended run (of `incarnation`) again (the api assigns the
    /// run as if it had never ended): it goes back to the pending queue. Returns false
    /// when it is pending already or unknown.
    pub fn resend_end(
        &mut self,
        job_id: i64,
        run: u32,
        incarnation: Option<berth_core::wire::Incarnation>,
    ) -> bool {
        let Some(end) = self
            .history
            .values()
            .find(|r| {
                r.job_id == job_id
                    && r.run == run
                    && r.kind != ReportKind::Started
                    && berth_core::wire::same_incarnation(r.incarnation, incarnation)
            })
            .cloned()
        else {
            return false;
        };
        if self.pending.iter().any(|p| p.seq == end.seq) {
            return false;
        }
        self.pending.push(end);
        self.pending.sort_by_key(|r| r.seq);
        if let Err(e) = self.rewrite() {
            tracing::error!(error = %e, dir = %self.dir.display(), "could not rewrite the report journal");
        }
        true
    }

    /// Appends acknowledged reports to the history file and map.
    fn remember(&mut self, taken: &[JobReport]) -> std::io::Result<()> {
        let mut text = Vec::new();
        for report in taken {
            let Some(seq) = report.seq else { continue };
            self.acked_seq = self.acked_seq.max(seq);
            if self.history.insert(seq, report.clone()).is_none() {
                text.extend(serde_json::to_vec(&Line::Report(Box::new(report.clone())))?);
                text.push(b'\n');
                self.history_lines += 1;
            }
        }
        while self.history.len() > self.history_limit {
            self.history.pop_first();
        }
        if !text.is_empty() {
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(self.dir.join("history.jsonl"))?;
            file.write_all(&text)?;
            file.sync_data()?;
        }
        if self.history_lines > 2 * self.history_limit {
            self.compact_history();
        }
        Ok(())
    }

    /// Rewrites the history file with what the history keeps.
    fn compact_history(&mut self) {
        let result = (|| -> std::io::Result<()> {
            let path = self.dir.join("history.jsonl");
            let tmp = self.dir.join("history.jsonl.tmp");
            let mut text = Vec::new();
            for report in self.history.values() {
                text.extend(serde_json::to_vec(&Line::Report(Box::new(report.clone())))?);
                text.push(b'\n');
            }
            let mut out = private_file(&tmp)?;
            out.write_all(&text)?;
            out.sync_data()?;
            std::fs::rename(&tmp, &path)
        })();
        match result {
            Ok(()) => self.history_lines = self.history.len(),
            Err(e) => {
                tracing::error!(error = %e, dir = %self.dir.display(), "could not compact the report history")
            }
        }
    }

    /// Writes the header and the pending reports to a new file and puts it in place.
    fn rewrite(&mut self) -> std::io::Result<()> {
        let path = self.dir.join("reports.jsonl");
        let tmp = self.dir.join("reports.jsonl.tmp");
        {
            let mut out = private_file(&tmp)?;
            let mut text = serde_json::to_vec(&Line::Header {
                next_seq: self.next_seq,
                acked_seq: self.acked_seq,
            })?;
            text.push(b'\n');
            for report in &self.pending {
                text.extend(serde_json::to_vec(&Line::Report(Box::new(report.clone())))?);
                text.push(b'\n');
            }
            out.write_all(&text)?;
            out.sync_data()?;
        }
        std::fs::rename(&tmp, &path)?;
        self.file = Some(OpenOptions::new().append(true).open(&path)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("berth-journal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn report(job_id: i64, kind: ReportKind) -> JobReport {
        JobReport {
            job_id,
            run: 0,
            kind,
            at: Utc::now(),
            exit_code: (kind == ReportKind::Exited).then_some(0),
            signal: None,
            timed_out: false,
            cancelled: false,
            message: None,
            seq: None,
            pid: None,
            out_of_memory: false,
            cpu_time_seconds: None,
            max_rss_mib: None,
            launch_fault: None,
            grant: None,
            node_failed: false,
            incarnation: None,
        }
    }

    #[test]
    fn reports_survive_a_restart_in_order_and_acknowledged_ones_do_not() {
        let d = dir("restart");
        let mut j = Journal::open(&d).unwrap();
        j.append(report(1, ReportKind::Started));
        j.append(report(1, ReportKind::Exited));
        j.append(report(2, ReportKind::Started));
        j.ack(1);
        j.append(report(2, ReportKind::Exited));
        drop(j);
        // A line cut short by a crash is skipped.
        let mut f = OpenOptions::new()
            .append(true)
            .open(d.join("journal/reports.jsonl"))
            .unwrap();
        f.write_all(b"{\"job_id\":3,\"ru").unwrap();

        let mut j = Journal::open(&d).unwrap();
        let seen: Vec<(i64, ReportKind, Option<u64>)> = j
            .pending()
            .iter()
            .map(|r| (r.job_id, r.kind, r.seq))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, ReportKind::Exited, Some(2)),
                (2, ReportKind::Started, Some(3)),
                (2, ReportKind::Exited, Some(4)),
            ]
        );
        // Numbering goes on after the restart, even once everything was acknowledged.
        j.ack(3);
        drop(j);
        let mut j = Journal::open(&d).unwrap();
        assert!(j.pending().is_empty());
        assert_eq!(j.append(report(4, ReportKind::Started)).seq, Some(5));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn acknowledged_reports_are_remembered_across_restarts_and_sent_again_on_request() {
        let d = dir("history");
        let mut j = Journal::open(&d).unwrap();
        j.append(report(1, ReportKind::Started));
        j.append(report(1, ReportKind::Exited));
        j.append(report(2, ReportKind::Started));
        j.ack(3);
        assert_eq!(j.acked_seq(), 3);
        assert!(j.pending().is_empty());
        drop(j);

        let mut j = Journal::open(&d).unwrap();
        assert_eq!(j.acked_seq(), 3, "the acknowledgements survive a restart");
        assert!(
            matches!(j.run_record(1, 0, None), RunRecord::Ended(r) if r.kind == ReportKind::Exited)
        );
        assert_eq!(j.run_record(2, 0, None), RunRecord::Started);
        assert_eq!(j.run_record(3, 0, None), RunRecord::Unknown);
        assert_eq!(j.run_record(1, 1, None), RunRecord::Unknown, "another run");
        assert_eq!(j.max_job_id(), Some(2));

        // The api's database remembers up to 1: reports 2 and 3 go out again, in order,
        // before a report made since.
        j.append(report(3, ReportKind::Started));
        assert_eq!(j.resend_after(1), 2);
        let seqs: Vec<Option<u64>> = j.pending().iter().map(|r| r.seq).collect();
        assert_eq!(seqs, vec![Some(2), Some(3), Some(4)]);
        j.ack(3);
        assert_eq!(j.acked_seq(), 4);
        // Asked again for what it no longer has, it gives up and the api stops asking.
        assert_eq!(j.resend_after(4), 0);
        assert_eq!(j.acked_seq(), 4);

        // An ended run the api assigns again: its end report is sent again, once.
        assert!(j.resend_end(1, 0, None));
        assert!(!j.resend_end(1, 0, None), "already pending");
        assert_eq!(j.pending()[0].kind, ReportKind::Exited);
        assert!(!j.resend_end(2, 0, None), "no end recorded");
        // The node's reports and the runs' grants are root's alone.
        use std::os::unix::fs::PermissionsExt;
        for file in ["reports.jsonl", "history.jsonl"] {
            let mode = std::fs::metadata(d.join("journal").join(file))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_run_of_another_incarnation_is_not_this_one() {
        let d = dir("incarnation");
        let mut j = Journal::open(&d).unwrap();
        let (old, new) = (
            berth_core::wire::Incarnation::new_v4(),
            berth_core::wire::Incarnation::new_v4(),
        );
        let with = |kind, inc| JobReport {
            incarnation: Some(inc),
            ..report(7, kind)
        };
        j.append(with(ReportKind::Started, old));
        j.append(with(ReportKind::Exited, old));
        j.ack(2);
        // Job 7 of the lost primary ended here; job 7 of the promoted server is another
        // job: it never ran here, and the old end is not sent for it.
        assert!(matches!(j.run_record(7, 0, Some(old)), RunRecord::Ended(_)));
        assert_eq!(j.run_record(7, 0, Some(new)), RunRecord::Unknown);
        assert!(!j.resend_end(7, 0, Some(new)));
        // An assignment from an api older than incarnations matches any.
        assert!(matches!(j.run_record(7, 0, None), RunRecord::Ended(_)));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_history_is_bounded_on_disk_and_in_memory() {
        let d = dir("bounded");
        let limit = 16;
        let mut j = Journal::open_keeping(&d, limit).unwrap();
        for job in 0..(2 * limit + 10) as i64 {
            j.append(report(job, ReportKind::LaunchFailed));
            j.ack(1);
        }
        assert_eq!(j.history.len(), limit);
        let lines = std::fs::read_to_string(d.join("journal/history.jsonl"))
            .unwrap()
            .lines()
            .count();
        assert!(lines <= 2 * limit, "{lines} lines");
        drop(j);
        let j = Journal::open_keeping(&d, limit).unwrap();
        assert_eq!(j.history.len(), limit);
        assert_eq!(
            j.run_record(0, 0, None),
            RunRecord::Unknown,
            "the oldest are forgotten"
        );
        let newest = (2 * limit + 9) as i64;
        assert!(matches!(j.run_record(newest, 0, None), RunRecord::Ended(_)));
        assert_eq!(j.acked_seq(), (2 * limit + 10) as u64);
        let _ = std::fs::remove_dir_all(&d);
    }
}
