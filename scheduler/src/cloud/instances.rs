//! Terminating a node's instance (its slot returns to POWERED_DOWN) and comparing a
//! provider's instances with the nodes that should own them.

use super::*;

impl Cloud {
    /// Terminates node `n`'s instance and returns its slot to POWERED_DOWN (requeueing
    /// what runs there when `force`).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn power_down(
        &self,
        db: &Pool,
        term: i64,
        n: &ScalingNodeRow,
        spec: &PoolSpec,
        raw: &serde_json::Value,
        kind: &str,
        reason: &str,
        force: bool,
    ) -> Result<bool, DbError> {
        if kind != "powered_down" && n.state != "POWERING_DOWN" {
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            if force {
                crate::reconcile::fail_node_runs_in_tx(&mut tx, n.id, &n.name).await?;
            }
            if !scaling::node_power_down_begin_in_tx(&mut tx, n.id, reason, force).await? {
                return Ok(true);
            }
            tx.commit().await?;
        }
        if let Some(id) = &n.instance_id {
            let provider = match self.provider(&n.pool, spec, raw).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(pool = %n.pool, error = %e, "no provider to terminate with");
                    return Ok(true);
                }
            };
            if let Err(e) = provider.terminate(std::slice::from_ref(id)).await {
                tracing::warn!(node.name = %n.name, instance = %id, error = %e, "terminate failed; retrying");
                return Ok(true);
            }
        }
        let Some(mut tx) = self.check(db, term).await? else {
            return Ok(false);
        };
        scaling::node_powered_down_in_tx(&mut tx, n.id, None).await?;
        let event_kind = match kind {
            "powered_down" => "terminate",
            k => k,
        };
        cloud_db::cloud_event_insert_in_tx(
            &mut tx,
            &n.pool,
            event_kind,
            Some(&n.name),
            n.instance_id.as_deref(),
            None,
            reason,
        )
        .await?;
        if kind == "boot_timeout" {
            // An image that never boots must not be relaunched at the launch rate: the
            // pool backs off as after a failed launch.
            let failures = scaling::pool_consecutive_failures(&mut *tx, &n.pool).await?;
            let wait = backoff(failures + 1);
            if let Some(p) = self.shared().pools.get_mut(&n.pool) {
                p.offerable = false;
            }
            scaling::pool_failure(
                &mut *tx,
                &n.pool,
                &format!("{}: {reason}", n.name),
                Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default(),
            )
            .await?;
            if let Some(launch) = n.launch_id {
                let job = scaling::cloud_launch_job(&mut *tx, launch).await?;
                if let Some(job) = job {
                    self.shared().job_reasons.insert(
                        job,
                        (
                            format!("CloudBootTimeout: {} {reason}", n.name),
                            n.pool.clone(),
                        ),
                    );
                    let run = job::job_restart_count(&mut *tx, job).await?;
                    job::job_event_insert(
                        &mut *tx,
                        job,
                        "cloud_boot_timeout",
                        run,
                        Some(&n.name),
                        serde_json::json!({"reason": reason, "instance_id": n.instance_id}),
                    )
                    .await?;
                }
            }
        }
        // The slot takes the pool's preferred shape again.
        let preferred = self
            .shared()
            .pools
            .get(&n.pool)
            .map(|p| p.instance_type.clone());
        if let Some(t) = preferred {
            if let Some(shape) = spec
                .instance_types
                .iter()
                .find(|x| x.name == t)
                .and_then(|x| x.shape().ok())
            {
                cloud_db::slot_shape_set_in_tx(&mut tx, &n.pool, &n.name, &shape, &spec.features)
                    .await?;
            }
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
        tx.commit().await?;
        tracing::info!(pool = %n.pool, node.name = %n.name, kind, reason, "node powered down");
        Ok(true)
    }

    /// Compares a pool's instances with its nodes.
    pub(super) async fn compare(
        &self,
        db: &Pool,
        term: i64,
        name: &str,
        spec: &PoolSpec,
        raw: &serde_json::Value,
        nodes: &[ScalingNodeRow],
    ) -> Result<bool, DbError> {
        let provider = match self.provider(name, spec, raw).await {
            Ok(p) => p,
            Err(_) => return Ok(true),
        };
        let instances = match provider.describe(&self.settings.cluster, name).await {
            Ok(i) => i,
            Err(e) => {
                tracing::warn!(pool = name, error = %e, "describe failed");
                return Ok(true);
            }
        };
        let now = Utc::now();
        let known: HashSet<&str> = nodes
            .iter()
            .filter_map(|n| n.instance_id.as_deref())
            .collect();
        let open: HashSet<String> = scaling::launch_open_list(db)
            .await?
            .into_iter()
            .map(|l| l.id.to_string())
            .collect();
        let grace = chrono::Duration::from_std(self.settings.orphan_grace).unwrap_or_default();
        let mut orphans = Vec::new();
        for i in &instances {
            if i.state.is_gone() || known.contains(i.id.as_str()) {
                continue;
            }
            if i.launch_id.as_ref().is_some_and(|l| open.contains(l)) {
                continue;
            }
            if i.launched_at.is_none_or(|t| t + grace < now) {
                orphans.push(i.id.clone());
            }
        }
        if !orphans.is_empty() {
            if let Err(e) = provider.terminate(&orphans).await {
                tracing::warn!(pool = name, error = %e, "terminating orphans failed");
            } else {
                let Some(mut tx) = self.check(db, term).await? else {
                    return Ok(false);
                };
                for id in &orphans {
                    cloud_db::cloud_event_insert_in_tx(
                        &mut tx,
                        name,
                        "orphan_terminated",
                        None,
                        Some(id),
                        None,
                        "an instance tagged with this cluster that no node knows",
                    )
                    .await?;
                }
                tx.commit().await?;
            }
        }
        let live: HashMap<&str, &Instance> = instances
            .iter()
            .filter(|i| !i.state.is_gone())
            .map(|i| (i.id.as_str(), i))
            .collect();
        for n in nodes.iter().filter(|n| n.pool == name) {
            let Some(id) = &n.instance_id else { continue };
            if !matches!(
                n.state.as_str(),
                "UP" | "DRAINING" | "DRAINED" | "POWERING_UP"
            ) {
                continue;
            }
            if live.contains_key(id.as_str()) {
                continue;
            }
            if n.power_changed_at
                .is_some_and(|t| t + chrono::Duration::seconds(20) > now)
                && n.state == "POWERING_UP"
            {
                continue;
            }
            let reason = format!("instance {id} gone");
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            let jobs = crate::reconcile::fail_node_runs_in_tx(&mut tx, n.id, &n.name)
                .await?
                .into_iter()
                .map(|(job, _)| job)
                .collect::<Vec<_>>();
            scaling::node_instance_gone_in_tx(&mut tx, n.id, &reason).await?;
            cloud_db::cloud_event_insert_in_tx(
                &mut tx,
                name,
                "instance_gone",
                Some(&n.name),
                Some(id),
                jobs.first().copied(),
                &format!("{reason}; {} job(s) requeued", jobs.len()),
            )
            .await?;
            notify::notify(&mut *tx, notify::JOBS_CHANNEL, "node").await?;
            tx.commit().await?;
            tracing::warn!(pool = name, node.name = %n.name, instance = %id, jobs = jobs.len(), "instance gone: node DOWN");
        }
        Ok(true)
    }
}
