//! LISTEN/NOTIFY channels that wake the scheduler and the api's long polls.

use crate::DbError;
use sqlx::PgExecutor;

/// Channel the scheduler listens on: a job was submitted, ended, or released resources.
pub const JOBS_CHANNEL: &str = "berth_jobs";
/// Channel the api's node long polls listen on; the payload is the node name.
pub const NODE_CHANNEL: &str = "berth_node";

/// Sends a notification (delivered when the surrounding transaction commits).
///
/// # Errors
/// [`DbError`] from the driver.
pub async fn notify(ex: impl PgExecutor<'_>, channel: &str, payload: &str) -> Result<(), DbError> {
    sqlx::query!("SELECT pg_notify($1, $2)", channel, payload)
        .execute(ex)
        .await?;
    Ok(())
}
