//! The database layer's error, with unique and check violations recognised by constraint
//! name in one place.

/// An error from the database layer.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// A unique or exclusion constraint refused the write (`constraint` names it).
    #[error("conflict on {constraint}")]
    Conflict {
        /// The constraint's name, as in the migrations.
        constraint: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A foreign key refused the write (a referenced row does not exist).
    #[error("reference broken by {constraint}")]
    ForeignKey {
        /// The constraint's name.
        constraint: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// A CHECK constraint refused the write.
    #[error("check {constraint} failed")]
    Check {
        /// The constraint's name.
        constraint: String,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
    /// Text the database cannot store (a NUL byte, an untranslatable character).
    #[error("text the database cannot store")]
    InvalidText(#[source] sqlx::Error),
    /// The server could not be reached (refused, reset, closed before it answered, a
    /// TLS or protocol failure while connecting), or the pool is exhausted.
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// A statement ran past `statement_timeout`, waited for a lock past `lock_timeout`,
    /// or its session sat in a transaction past `idle_in_transaction_session_timeout`
    /// (see [`crate::Timeouts`]): the database is too busy or a lock is held too long.
    #[error("database timed out")]
    TimedOut(#[source] sqlx::Error),
    /// Any other driver error.
    #[error("database error")]
    Sqlx(#[source] sqlx::Error),
}

impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &e {
            let constraint = db.constraint().unwrap_or_default().to_string();
            match db.kind() {
                sqlx::error::ErrorKind::UniqueViolation => {
                    return DbError::Conflict {
                        constraint,
                        source: e,
                    }
                }
                sqlx::error::ErrorKind::ForeignKeyViolation => {
                    return DbError::ForeignKey {
                        constraint,
                        source: e,
                    }
                }
                sqlx::error::ErrorKind::CheckViolation => {
                    return DbError::Check {
                        constraint,
                        source: e,
                    }
                }
                _ => {}
            }
            if db.code().as_deref().is_some_and(is_unavailable_code) {
                return DbError::Unavailable(e);
            }
            if db.code().as_deref().is_some_and(is_timeout_code) {
                return DbError::TimedOut(e);
            }
            // 22021 character_not_in_repertoire (a NUL byte in text), 22P05
            // untranslatable_character: the input, not the server, is at fault.
            if matches!(db.code().as_deref(), Some("22021" | "22P05")) {
                return DbError::InvalidText(e);
            }
        }
        match e {
            // A protocol error is a connection that broke mid-conversation, or a peer
            // that is not PostgreSQL: a TCP front (a proxy, a load balancer) that accepts
            // and closes while its backend is down answers an `SSLRequest` with nothing
            // ("unexpected response from SSLRequest: 0x00").
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed => DbError::Unavailable(e),
            other => DbError::Sqlx(other),
        }
    }
}

/// SQLSTATEs that mean the server is going away, starting or out of connections rather
/// than that the request is wrong: class 08 (connection exception), 57P01
/// `admin_shutdown` (a fast or smart shutdown), 57P02 `crash_shutdown`, 57P03
/// `cannot_connect_now` (starting up or in recovery), 53300 `too_many_connections`.
pub fn is_unavailable_code(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// SQLSTATEs of Berth's session timeouts: 57014 `query_canceled` (`statement_timeout`),
/// 55P03 `lock_not_available` (`lock_timeout`), 25P03
/// `idle_in_transaction_session_timeout`.
pub fn is_timeout_code(code: &str) -> bool {
    matches!(code, "57014" | "55P03" | "25P03")
}

impl DbError {
    /// The constraint that refused a write, for conflicts and violations.
    pub fn constraint(&self) -> Option<&str> {
        match self {
            DbError::Conflict { constraint, .. }
            | DbError::ForeignKey { constraint, .. }
            | DbError::Check { constraint, .. } => Some(constraint),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_timeout_code, is_unavailable_code, DbError};

    #[test]
    fn shutdown_and_connection_states_are_unavailable() {
        for code in ["08006", "08001", "57P01", "57P02", "57P03", "53300"] {
            assert!(is_unavailable_code(code), "{code}");
        }
        for code in ["23505", "42P01", "40001", "57014"] {
            assert!(!is_unavailable_code(code), "{code}");
        }
    }

    #[test]
    fn session_timeouts_are_timeouts() {
        for code in ["57014", "55P03", "25P03"] {
            assert!(is_timeout_code(code), "{code}");
        }
        for code in ["23505", "40001", "08006"] {
            assert!(!is_timeout_code(code), "{code}");
        }
    }

    #[test]
    fn a_peer_that_closes_before_answering_is_unavailable() {
        let e = sqlx::Error::Protocol("unexpected response from SSLRequest: 0x00".into());
        assert!(matches!(DbError::from(e), DbError::Unavailable(_)));
    }
}
