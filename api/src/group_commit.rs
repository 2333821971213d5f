//! Group commit of submissions: concurrent `POST /v1/jobs` (and slurmrestd's
//! `job/submit`) share one transaction.
//!
//! Each submission is checked on its own ([`crate::submit`]), then handed to this
//! process's committers with a channel for its answer. A committer takes the first
//! submission waiting and every other one already queued behind it (no window: a lone
//! submission is stored at once, a burst in batches of up to [`MAX_BATCH`]), stores them
//! in one transaction (one `BEGIN`, one `COMMIT` and one WAL flush, one `NOTIFY` for the
//! scheduler) and answers each. [`COMMITTERS`] committers run, so that one batch is
//! gathered while another commits.
//!
//! A submission refused inside the transaction (its partition was deleted meanwhile) is
//! answered alone and the others go on. When the database refuses a statement, which
//! aborts the shared transaction, each submission of the batch is stored again in a
//! transaction of its own and gets its own answer: one bad submission never fails
//! another. A submission whose client went away meanwhile is stored all the same (as a
//! request whose answer was lost); clients that retry send an `Idempotency-Key`.

use crate::error::ApiError;
use berth_db::DbError;
use std::sync::{Arc, OnceLock};
use tokio::sync::{mpsc, oneshot, Mutex};

/// The most submissions one transaction stores.
pub const MAX_BATCH: usize = 256;

/// How many batches may be stored at once by one api process.
pub const COMMITTERS: usize = 2;

/// One checked submission waiting to be stored.
pub(crate) struct Pending {
    /// What [`crate::submit`] checked.
    pub prepared: crate::submit::Prepared,
    /// `(user, key, request hash)` of an `Idempotency-Key`.
    pub idempotency: Option<(String, String, String)>,
    /// Where the job id (or the refusal) goes.
    pub answer: oneshot::Sender<Result<i64, ApiError>>,
}

/// This process's committers, started on the first submission.
#[derive(Clone, Default)]
pub struct GroupCommit {
    queue: Arc<OnceLock<mpsc::Sender<Pending>>>,
}

impl GroupCommit {
    /// Stores `pending` with whatever else is queued; returns its job id.
    ///
    /// # Errors
    /// What storing it alone would return ([`crate::submit`]): 400 for a partition
    /// deleted meanwhile, 503 when the database is unreachable.
    pub(crate) async fn store(
        &self,
        pool: &berth_db::Pool,
        prepared: crate::submit::Prepared,
        idempotency: Option<(String, String, String)>,
    ) -> Result<i64, ApiError> {
        let queue = self.queue.get_or_init(|| start(pool.clone()));
        let (answer, answered) = oneshot::channel();
        let pending = Pending {
            prepared,
            idempotency,
            answer,
        };
        let closed = || ApiError::Unavailable(DbError::Unavailable(sqlx::Error::PoolClosed));
        if queue.send(pending).await.is_err() {
            return Err(closed());
        }
        answered.await.unwrap_or_else(|_| Err(closed()))
    }
}

/// Starts the committers; returns their queue.
fn start(pool: berth_db::Pool) -> mpsc::Sender<Pending> {
    let (queue, receiver) = mpsc::channel::<Pending>(4 * MAX_BATCH);
    let receiver = Arc::new(Mutex::new(receiver));
    for _ in 0..COMMITTERS {
        let (pool, receiver) = (pool.clone(), receiver.clone());
        tokio::spawn(async move {
            loop {
                let mut batch = Vec::new();
                {
                    // One committer gathers at a time; the other may be committing.
                    let mut receiver = receiver.lock().await;
                    let Some(first) = receiver.recv().await else {
                        return;
                    };
                    batch.push(first);
                    while batch.len() < MAX_BATCH {
                        match receiver.try_recv() {
                            Ok(next) => batch.push(next),
                            Err(_) => break,
                        }
                    }
                }
                commit(&pool, batch).await;
            }
        });
    }
    queue
}

/// Stores a batch in one transaction, else each of its submissions alone.
async fn commit(pool: &berth_db::Pool, batch: Vec<Pending>) {
    if batch.len() > 1 {
        match store_all(pool, &batch).await {
            Ok(results) => {
                for (pending, result) in batch.into_iter().zip(results) {
                    let _ = pending.answer.send(result);
                }
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, submissions = batch.len(),
                    "a batch of submissions failed; storing each alone");
            }
        }
    }
    for pending in batch {
        let result = match store_all(pool, std::slice::from_ref(&pending)).await {
            Ok(mut results) => results
                .pop()
                .unwrap_or_else(|| Err(ApiError::Internal("a submission got no answer".into()))),
            Err(e) => Err(e.into()),
        };
        let _ = pending.answer.send(result);
    }
}

/// Stores `batch` in one transaction: each submission's answer, or the database's error
/// that rolled back the whole of it.
async fn store_all(
    pool: &berth_db::Pool,
    batch: &[Pending],
) -> Result<Vec<Result<i64, ApiError>>, DbError> {
    let mut tx = berth_db::begin(pool).await?;
    let mut results = Vec::with_capacity(batch.len());
    let mut stored = Vec::new();
    for pending in batch {
        // A refusal of this submission alone: nothing of it is written.
        if let Some(gone) = crate::submit::partitions_gone_in_tx(&mut tx, &pending.prepared).await?
        {
            results.push(Err(gone));
            continue;
        }
        let id = berth_db::job::job_insert_in_tx(&mut tx, &pending.prepared.insert).await?;
        if let Some((user, key, hash)) = &pending.idempotency {
            berth_db::idempotency::idempotency_insert_in_tx(&mut tx, user, key, hash, id).await?;
        }
        stored.push((id, pending.prepared.insert.user_name.as_str()));
        results.push(Ok(id));
    }
    if let (Some((first, _)), Some((last, _))) = (stored.first(), stored.last()) {
        let payload = if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        };
        berth_db::notify::notify(&mut *tx, berth_db::notify::JOBS_CHANNEL, &payload).await?;
    }
    tx.commit().await?;
    for (id, user) in &stored {
        tracing::info!(job.id = id, user, "job submitted");
    }
    tracing::debug!(
        submissions = batch.len(),
        stored = stored.len(),
        "submissions committed"
    );
    Ok(results)
}
