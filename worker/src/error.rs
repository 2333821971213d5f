//! The worker's error type.

use std::path::PathBuf;

/// What can go wrong in the worker. Messages carry context; causes are chained through
/// `source()`.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The api could not be reached or the connection broke (retryable).
    #[error("request to {url} failed")]
    Http {
        /// The URL requested.
        url: String,
        /// The transport error.
        #[source]
        source: reqwest::Error,
    },
    /// The api answered with an error status.
    #[error("{url} answered {status}: {detail}")]
    Api {
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The problem document's `detail` (or the body, when not a problem document).
        detail: String,
    },
    /// The api's answer could not be decoded.
    #[error("could not decode the answer of {url}")]
    Decode {
        /// The URL requested.
        url: String,
        /// The decoding error.
        #[source]
        source: reqwest::Error,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client")]
    Client {
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// A `--simulate-gpus` value that is not `N` or `NxMODEL`.
    #[error("invalid simulated GPU spec {spec:?}: {reason}")]
    InvalidGpuSpec {
        /// The value given.
        spec: String,
        /// Why it is refused.
        reason: String,
    },
    /// A simulated CPU layout that cannot be (`--simulate-threads-per-core` over a CPU
    /// count that is not whole cores).
    #[error("invalid simulated CPU layout: {reason}")]
    InvalidCpuLayout {
        /// Why it is refused, naming the option.
        reason: String,
    },
    /// NVML loaded but failed to answer.
    #[error("NVML failed: {action}")]
    Nvml {
        /// What was asked.
        action: &'static str,
        /// The NVML error.
        #[source]
        source: nvml_wrapper::error::NvmlError,
    },
    /// A job's explicit working directory does not exist.
    #[error("working directory {} does not exist or is not a directory", path.display())]
    WorkDirMissing {
        /// The directory.
        path: PathBuf,
    },
    /// A file operation failed.
    #[error("could not {action} {}", path.display())]
    Io {
        /// What was being done (`create directory`, `open output file` …).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The job's user has no account on this node (the worker runs jobs as their
    /// submitting user when it runs as root).
    #[error("user {user} does not exist on node {node}")]
    UserUnknown {
        /// The submitting user.
        user: String,
        /// This node.
        node: String,
    },
    /// The submitting user is root on this node and the node does not allow root jobs.
    #[error("user {user} is root on node {node}, which does not run jobs as root (berth worker --allow-root-jobs)")]
    RootRefused {
        /// The submitting user.
        user: String,
        /// This node.
        node: String,
    },
    /// Files could not be handed to the job's user.
    #[error("could not give {} to user {user}", path.display())]
    Chown {
        /// The file or directory.
        path: PathBuf,
        /// The user.
        user: String,
        /// The cause.
        #[source]
        source: nix::errno::Errno,
    },
    /// The job's process could not be started: the shepherd's reason (an output file
    /// the job's user may not write, a working directory it cannot enter …).
    #[error("{message}")]
    Launch {
        /// What went wrong.
        message: String,
        /// Whose fault it was, as the shepherd saw it.
        fault: berth_core::wire::LaunchFault,
    },
    /// The batch shell could not be started.
    #[error("could not start bash for {}", script.display())]
    Spawn {
        /// The batch script.
        script: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl WorkerError {
    /// Whether trying again later may succeed: connection errors, 5xx, 408 and 429.
    pub fn is_retryable(&self) -> bool {
        match self {
            WorkerError::Http { .. } | WorkerError::Decode { .. } => true,
            WorkerError::Api { status, .. } => *status >= 500 || *status == 429 || *status == 408,
            _ => false,
        }
    }

    /// Whose fault a failed batch launch with this error was: the job's own settings
    /// (a missing `--chdir`, an `--output` that cannot be opened), the user on this node
    /// (unknown here, or root where root jobs are refused), or else the node (its job
    /// directory, scratch space, or starting the shepherd or the shell).
    pub fn launch_fault(&self) -> berth_core::wire::LaunchFault {
        use berth_core::wire::LaunchFault;
        match self {
            WorkerError::WorkDirMissing { .. } => LaunchFault::Job,
            WorkerError::Io { action, .. }
                if matches!(*action, "open the output file" | "share the output file") =>
            {
                LaunchFault::Job
            }
            WorkerError::UserUnknown { .. } | WorkerError::RootRefused { .. } => LaunchFault::User,
            WorkerError::Launch { fault, .. } => *fault,
            _ => LaunchFault::Node,
        }
    }

    /// The message with its chain of causes (`a: b: c`), for logs and `LaunchFailed`
    /// reports.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(err) = cause {
            text.push_str(": ");
            text.push_str(&err.to_string());
            cause = err.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::wire::LaunchFault;

    #[test]
    fn a_launch_failure_is_the_nodes_unless_the_job_or_its_user_caused_it() {
        let io = |action| WorkerError::Io {
            action,
            path: PathBuf::from("/x"),
            source: std::io::Error::other("boom"),
        };
        let user = |name: &str| name.to_string();
        for (err, fault) in [
            (io("create the job directory"), LaunchFault::Node),
            (io("write the batch script"), LaunchFault::Node),
            (
                WorkerError::Spawn {
                    script: PathBuf::from("/x"),
                    source: std::io::Error::other("boom"),
                },
                LaunchFault::Node,
            ),
            (io("open the output file"), LaunchFault::Job),
            (
                WorkerError::Launch {
                    message: "could not open the output file /root/x: bob may not write it".into(),
                    fault: LaunchFault::Job,
                },
                LaunchFault::Job,
            ),
            (
                WorkerError::Launch {
                    message: "the shepherd did not start the job".into(),
                    fault: LaunchFault::Node,
                },
                LaunchFault::Node,
            ),
            (
                WorkerError::WorkDirMissing {
                    path: PathBuf::from("/nowhere"),
                },
                LaunchFault::Job,
            ),
            (
                WorkerError::UserUnknown {
                    user: user("ghost"),
                    node: user("node-1"),
                },
                LaunchFault::User,
            ),
            (
                WorkerError::RootRefused {
                    user: user("root"),
                    node: user("node-1"),
                },
                LaunchFault::User,
            ),
        ] {
            assert_eq!(err.launch_fault(), fault, "{}", err.chain());
        }
    }
}
