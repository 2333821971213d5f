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
        }
        match e {
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_) => DbError::Unavailable(e),
            other => DbError::Sqlx(other),
        }
    }
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
