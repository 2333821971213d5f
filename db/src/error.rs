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
    /// The server could not be reached, or the pool is exhausted.
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
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
            // 22021 character_not_in_repertoire (a NUL byte in text), 22P05
            // untranslatable_character: the input, not the server, is at fault.
            if matches!(db.code().as_deref(), Some("22021" | "22P05")) {
                return DbError::InvalidText(e);
            }
        }
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
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
    use super::is_unavailable_code;

    #[test]
    fn shutdown_and_connection_states_are_unavailable() {
        for code in ["08006", "08001", "57P01", "57P02", "57P03", "53300"] {
            assert!(is_unavailable_code(code), "{code}");
        }
        for code in ["23505", "42P01", "40001", "57014"] {
            assert!(!is_unavailable_code(code), "{code}");
        }
    }
}
