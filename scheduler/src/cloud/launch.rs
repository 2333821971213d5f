//! Sending a written launch to its provider and recording what came back: instances,
//! or a capacity error that sets the (type, zone) aside and backs the pool off.

use super::*;

impl Cloud {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn send_launch(
        &self,
        db: &Pool,
        term: i64,
        launch: &scaling::LaunchRow,
        spec: &PoolSpec,
        raw: &serde_json::Value,
        failures: i32,
        cooled: &HashSet<(String, String)>,
    ) -> Result<bool, DbError> {
        let provider = match self.provider(&launch.pool, spec, raw).await {
            Ok(p) => p,
            Err(e) => {
                return self
                    .launch_failed(db, term, launch, failures, &format!("provider: {e}"), None)
                    .await
            }
        };
        // One-time tokens bound to each node, expiring with the boot timeout.
        let expires = launch.created_at + chrono::Duration::seconds(spec.boot_timeout as i64);
        let boots: Vec<NodeBoot> = launch
            .node_names
            .iter()
            .map(|n| NodeBoot {
                name: n.clone(),
                bootstrap_token: node_credential::secret_with_prefix("berth_boot_"),
            })
            .collect();
        {
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            for b in &boots {
                node_credential::bootstrap_token_insert_for_node(
                    &mut *tx,
                    &node_credential::secret_hash(&b.bootstrap_token),
                    &b.name,
                    expires,
                )
                .await?;
            }
            tx.commit().await?;
        }
        // A launch in this pool is tried again: the reasons of earlier failures stop
        // standing for its jobs (a failure now writes its own).
        self.shared()
            .job_reasons
            .retain(|_, (_, pool)| *pool != launch.pool);
        let mut last_capacity: Option<String> = None;
        for (i, zone, subnet) in candidates(spec, &launch.instance_type, cooled) {
            let itype = &spec.instance_types[i];
            let Ok(shape) = itype.shape() else { continue };
            let req = LaunchRequest {
                client_token: launch.id.to_string(),
                cluster: self.settings.cluster.clone(),
                pool: launch.pool.clone(),
                instance_type: itype.name.clone(),
                shape: shape.clone(),
                zone: zone.clone(),
                subnet: subnet.clone(),
                market: spec.market,
                image: spec.image.clone(),
                nodes: boots.clone(),
                api_url: self.settings.api_url.clone(),
                features: spec.features.clone(),
                tags: spec.tags.clone(),
            };
            let place = zone.clone().or(subnet.clone()).unwrap_or_default();
            match provider.launch(&req).await {
                Ok(instances) => {
                    return self
                        .launched(db, term, launch, spec, &itype.name, &shape, &instances)
                        .await;
                }
                Err(LaunchError::Capacity { code, message }) => {
                    let what = format!(
                        "{} {} {code}",
                        itype.name,
                        if place.is_empty() { "-" } else { &place }
                    );
                    tracing::warn!(pool = %launch.pool, %what, %message, "capacity error; trying the next type or zone");
                    let Some(mut tx) = self.check(db, term).await? else {
                        return Ok(false);
                    };
                    scaling::cooldown_set(
                        &mut *tx,
                        &launch.pool,
                        &itype.name,
                        &place,
                        Utc::now() + chrono::Duration::seconds(spec.capacity_cooldown as i64),
                        &format!("{code}: {message}"),
                    )
                    .await?;
                    scaling::pool_error_note(&mut *tx, &launch.pool, &format!("{what}: {message}"))
                        .await?;
                    cloud_db::cloud_event_insert_in_tx(
                        &mut tx,
                        &launch.pool,
                        "capacity_error",
                        None,
                        None,
                        launch.job_id,
                        &format!("{what}: {message}"),
                    )
                    .await?;
                    tx.commit().await?;
                    last_capacity = Some(what);
                }
                Err(e) => {
                    return self
                        .launch_failed(db, term, launch, failures, &e.to_string(), None)
                        .await;
                }
            }
        }
        let error = match &last_capacity {
            Some(what) => format!("no capacity: {what}"),
            None => "every instance type and zone is set aside after capacity errors".into(),
        };
        let reason = format!(
            "CloudCapacity: {}",
            last_capacity.unwrap_or_else(|| "all instance types set aside".into())
        );
        self.launch_failed(db, term, launch, failures, &error, Some(reason))
            .await
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) async fn launched(
        &self,
        db: &Pool,
        term: i64,
        launch: &scaling::LaunchRow,
        spec: &PoolSpec,
        itype: &str,
        shape: &InstanceShape,
        instances: &[Instance],
    ) -> Result<bool, DbError> {
        let mut rows = Vec::new();
        for inst in instances {
            if let Some(node) = launch.node_names.get(inst.launch_index as usize) {
                rows.push((
                    node.clone(),
                    inst.id.clone(),
                    inst.instance_type.clone(),
                    inst.zone.clone(),
                ));
            }
        }
        let Some(mut tx) = self.check(db, term).await? else {
            return Ok(false);
        };
        scaling::launch_done_in_tx(&mut tx, launch.id, &rows).await?;
        if itype != launch.instance_type {
            for n in &launch.node_names {
                cloud_db::slot_shape_set_in_tx(&mut tx, &launch.pool, n, shape, &spec.features)
                    .await?;
            }
        }
        scaling::pool_success(&mut *tx, &launch.pool).await?;
        for (node, id, t, zone) in &rows {
            let reason = format!(
                "launched {t}{} ({}){}",
                zone.as_deref()
                    .map(|z| format!(" in {z}"))
                    .unwrap_or_default(),
                spec.market.as_str(),
                if launch.job_id.is_some() {
                    " for a planned start"
                } else {
                    ""
                }
            );
            cloud_db::cloud_event_insert_in_tx(
                &mut tx,
                &launch.pool,
                "launch",
                Some(node),
                Some(id),
                launch.job_id,
                &reason,
            )
            .await?;
        }
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
        tx.commit().await?;
        tracing::info!(pool = %launch.pool, launch = %launch.id, instances = rows.len(), "instances launched");
        Ok(true)
    }

    pub(super) async fn launch_failed(
        &self,
        db: &Pool,
        term: i64,
        launch: &scaling::LaunchRow,
        failures: i32,
        error: &str,
        job_reason: Option<String>,
    ) -> Result<bool, DbError> {
        let Some(mut tx) = self.check(db, term).await? else {
            return Ok(false);
        };
        scaling::launch_failed_in_tx(&mut tx, launch.id, error).await?;
        let wait = backoff(failures + 1);
        if let Some(p) = self.shared().pools.get_mut(&launch.pool) {
            p.offerable = false;
        }
        scaling::pool_failure(
            &mut *tx,
            &launch.pool,
            error,
            Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default(),
        )
        .await?;
        cloud_db::cloud_event_insert_in_tx(
            &mut tx,
            &launch.pool,
            "launch_failed",
            None,
            None,
            launch.job_id,
            &format!("{error}; pool backs off {} s", wait.as_secs()),
        )
        .await?;
        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
        tx.commit().await?;
        tracing::warn!(pool = %launch.pool, launch = %launch.id, %error, "launch failed");
        if let Some(job) = launch.job_id {
            let reason = job_reason.unwrap_or_else(|| format!("CloudLaunchFailed: {error}"));
            let reason: String = reason.chars().take(200).collect();
            self.shared()
                .job_reasons
                .insert(job, (reason, launch.pool.clone()));
        }
        Ok(true)
    }
}
