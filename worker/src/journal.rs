//! The report journal: job reports kept on disk, numbered, until the api acknowledges
//! them, so that neither an api or database outage nor a worker restart loses one.
//!
//! `{state_dir}/journal/reports.jsonl` holds one JSON line per report not yet
//! acknowledged, each with its sequence number (`seq`, increasing per node), after a
//! first line `{"next_seq": N}`. A new report is appended and flushed to disk before it
//! is sent; an acknowledgement rewrites the file (write a temporary file, then rename)
//! without the reports the api took. A line cut short by a crash is skipped on reading.
//! The api applies each report once per (job, run, kind, node), so a report sent again
//! after a crash between its acknowledgement and the rewrite changes nothing.
//!
//! Batch scripts that outlive a worker process are found again by the launcher (their
//! shepherds keep them going), so a restarted worker reports them as running and the api
//! never assigns a run twice.

use berth_core::wire::JobReport;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// One line of the journal file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Header { next_seq: u64 },
    Report(Box<JobReport>),
}

/// The on-disk queue of reports not yet acknowledged.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    file: Option<File>,
    next_seq: u64,
    pending: Vec<JobReport>,
}

impl Journal {
    /// Opens (or creates) the journal under `state_dir`, loading the reports a previous
    /// worker process left unacknowledged, oldest first.
    ///
    /// # Errors
    /// When the directory cannot be created or the file cannot be written.
    pub fn open(state_dir: &Path) -> std::io::Result<Journal> {
        let dir = state_dir.join("journal");
        std::fs::create_dir_all(&dir)?;
        let mut next_seq = 1;
        let mut pending = Vec::new();
        if let Ok(file) = File::open(dir.join("reports.jsonl")) {
            for line in BufReader::new(file).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Line>(&line) {
                    Ok(Line::Header { next_seq: n }) => next_seq = next_seq.max(n),
                    Ok(Line::Report(report)) => {
                        if let Some(seq) = report.seq {
                            next_seq = next_seq.max(seq + 1);
                        }
                        pending.push(*report);
                    }
                    Err(_) => tracing::warn!("skipping a damaged journal line"),
                }
            }
        }
        pending.sort_by_key(|r| r.seq);
        let mut journal = Journal {
            dir,
            file: None,
            next_seq,
            pending,
        };
        journal.rewrite()?;
        Ok(journal)
    }

    /// The reports not yet acknowledged, oldest first.
    pub fn pending(&self) -> &[JobReport] {
        &self.pending
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

    /// The api took the first `n` pending reports: forgets them, on disk too.
    pub fn ack(&mut self, n: usize) {
        let n = n.min(self.pending.len());
        if n == 0 {
            return;
        }
        self.pending.drain(..n);
        if let Err(e) = self.rewrite() {
            tracing::error!(error = %e, dir = %self.dir.display(), "could not rewrite the report journal");
        }
    }

    /// Writes the header and the pending reports to a new file and puts it in place.
    fn rewrite(&mut self) -> std::io::Result<()> {
        let path = self.dir.join("reports.jsonl");
        let tmp = self.dir.join("reports.jsonl.tmp");
        {
            let mut out = File::create(&tmp)?;
            let mut text = serde_json::to_vec(&Line::Header {
                next_seq: self.next_seq,
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
    use berth_core::wire::ReportKind;
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
            node_failed: false,
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
}
