//! The reconciler: its loop, the providers it talks to and one pass over the pools.

use super::*;

impl Cloud {
    /// The reconciler: runs passes under `term` until the task is dropped (the leader
    /// steps down) or a pass finds the term stale.
    pub async fn run(self: Arc<Self>, db: Pool, term: i64) {
        let mut last_describe: Option<Instant> = None;
        let mut down_since: HashMap<i64, Instant> = HashMap::new();
        loop {
            let describe =
                last_describe.is_none_or(|t| t.elapsed() >= self.settings.describe_interval);
            if describe {
                last_describe = Some(Instant::now());
            }
            match self.pass(&db, term, describe, &mut down_since).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(term, "cloud reconciler: term is stale; stopping");
                    return;
                }
                Err(e) => tracing::warn!(term, error = %e, "cloud reconcile failed; retrying"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.settings.interval) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    pub(super) async fn provider(
        &self,
        name: &str,
        spec: &PoolSpec,
        raw: &serde_json::Value,
    ) -> Result<Arc<dyn Provider>, String> {
        let mut providers = self.providers.lock().await;
        if let Some((s, p)) = providers.get(name) {
            if s == raw {
                return Ok(p.clone());
            }
        }
        let p = make_provider(name, spec, &self.settings).await?;
        providers.insert(name.to_string(), (raw.clone(), p.clone()));
        Ok(p)
    }

    pub(super) async fn check(
        &self,
        db: &Pool,
        term: i64,
    ) -> Result<Option<sqlx::Transaction<'static, sqlx::Postgres>>, DbError> {
        let mut tx = berth_db::begin(db).await?;
        if !lease::lease_check_in_tx(&mut tx, LEASE_ROLE, term).await? {
            return Ok(None);
        }
        Ok(Some(tx))
    }

    /// One pass; false when the term is stale.
    pub(super) async fn pass(
        &self,
        db: &Pool,
        term: i64,
        describe: bool,
        down_since: &mut HashMap<i64, Instant>,
    ) -> Result<bool, DbError> {
        let now = Utc::now();
        let pools = scaling::scaling_pool_list(db).await?;
        let specs: HashMap<String, PoolEntry> = pools
            .into_iter()
            .filter_map(
                |p| match serde_json::from_value::<PoolSpec>(p.spec.clone()) {
                    Ok(s) => Some((p.name, (s, p.spec, p.backoff_until, p.consecutive_failures))),
                    Err(e) => {
                        tracing::warn!(pool = %p.name, error = %e, "pool spec unreadable; skipped");
                        None
                    }
                },
            )
            .collect();
        let cooldowns = scaling::cooldown_list(db, now).await?;
        let mut cooled: HashMap<&str, HashSet<(String, String)>> = HashMap::new();
        for c in &cooldowns {
            cooled
                .entry(c.pool.as_str())
                .or_default()
                .insert((c.instance_type.clone(), c.zone.clone()));
        }
        let empty = HashSet::new();
        // 1. What the planner may offer.
        let mut planning = HashMap::new();
        for (name, (spec, raw, backoff_until, _)) in &specs {
            let cooled = cooled.get(name.as_str()).unwrap_or(&empty);
            let preferred = preferred_type(spec, cooled);
            let recent =
                scaling::launch_recent_count(db, name, now - chrono::Duration::seconds(60)).await?;
            let budget = (i64::from(spec.launch_rate_per_minute) - recent).max(0) as u32;
            planning.insert(
                name.clone(),
                PoolPlanning {
                    offerable: preferred.is_some() && backoff_until.is_none_or(|b| b <= now),
                    expected_boot: spec.expected_boot_seconds() as i64,
                    instance_type: preferred.clone().unwrap_or_default(),
                    market: Some(spec.market),
                    launch_budget: budget,
                    max_nodes: spec.max_nodes,
                },
            );
            // Powered-down slots take the preferred type's shape.
            if let Some(t) = &preferred {
                let mut shaped = self.shaped.lock().await;
                if shaped.get(name) != Some(&(raw.clone(), t.clone())) {
                    if let Some(shape) = spec
                        .instance_types
                        .iter()
                        .find(|x| &x.name == t)
                        .and_then(|x| x.shape().ok())
                    {
                        let Some(mut tx) = self.check(db, term).await? else {
                            return Ok(false);
                        };
                        for n in 1..=spec.max_nodes {
                            let slot = berth_core::pool::slot_name(name, n);
                            let _ = cloud_db::slot_shape_set_in_tx(
                                &mut tx,
                                name,
                                &slot,
                                &shape,
                                &spec.features,
                            )
                            .await?;
                        }
                        notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
                        tx.commit().await?;
                        shaped.insert(name.clone(), (raw.clone(), t.clone()));
                    }
                }
            }
        }
        self.shared().pools = planning.clone();

        let nodes = scaling::scaling_node_list(db).await?;
        // 2. Operators' requests and min_nodes.
        let mut intents = Vec::new();
        for (name, (spec, ..)) in &specs {
            let Some(p) = planning.get(name) else {
                continue;
            };
            let mine: Vec<&ScalingNodeRow> = nodes.iter().filter(|n| &n.pool == name).collect();
            let active = mine.iter().filter(|n| n.state != "POWERED_DOWN").count() as u32;
            let mut up: Vec<String> = mine
                .iter()
                .filter(|n| {
                    n.state == "POWERED_DOWN"
                        && n.power_request.as_deref() == Some("up")
                        && cloud_db::slot_index(name, &n.name).is_some_and(|i| i <= spec.max_nodes)
                })
                .map(|n| n.name.clone())
                .collect();
            let missing = spec.min_nodes.saturating_sub(active + up.len() as u32);
            up.extend(
                mine.iter()
                    .filter(|n| {
                        n.state == "POWERED_DOWN"
                            && n.power_request.is_none()
                            && cloud_db::slot_index(name, &n.name)
                                .is_some_and(|i| i <= spec.max_nodes)
                    })
                    .take(missing as usize)
                    .map(|n| n.name.clone()),
            );
            if !up.is_empty() && p.offerable {
                intents.push(LaunchIntent {
                    pool: name.clone(),
                    nodes: up,
                    instance_type: p.instance_type.clone(),
                    market: spec.market,
                    job_id: None,
                });
            }
        }
        if !self.write_launches(db, term, &intents).await? {
            return Ok(false);
        }

        // 3. Launches to send.
        for launch in scaling::launch_open_list(db).await? {
            let Some((spec, raw, backoff_until, failures)) = specs.get(&launch.pool) else {
                continue;
            };
            if backoff_until.is_some_and(|b| b > now) {
                // Written by a cycle that had not yet seen the pool back off: not sent;
                // its slots return to POWERED_DOWN (no further failure is counted).
                let Some(mut tx) = self.check(db, term).await? else {
                    return Ok(false);
                };
                scaling::launch_failed_in_tx(&mut tx, launch.id, "the pool is backing off").await?;
                notify::notify(&mut *tx, notify::JOBS_CHANNEL, "pool").await?;
                tx.commit().await?;
                continue;
            }
            if !self
                .send_launch(
                    db,
                    term,
                    &launch,
                    spec,
                    raw,
                    *failures,
                    cooled.get(launch.pool.as_str()).unwrap_or(&empty),
                )
                .await?
            {
                return Ok(false);
            }
        }

        // 4. Boot timeouts, power-downs, idle nodes, gone instances.
        let nodes = scaling::scaling_node_list(db).await?;
        let planned: HashSet<i64> = {
            let shared = self.shared();
            shared
                .planned_nodes
                .union(&shared.reserved_nodes)
                .copied()
                .collect()
        };
        let mut active: HashMap<&str, u32> = HashMap::new();
        for n in &nodes {
            if n.state != "POWERED_DOWN" {
                *active.entry(n.pool.as_str()).or_default() += 1;
            }
        }
        for n in &nodes {
            let Some((spec, raw, ..)) = specs.get(&n.pool) else {
                continue;
            };
            let timeout = chrono::Duration::seconds(spec.boot_timeout as i64);
            let above_max =
                cloud_db::slot_index(&n.pool, &n.name).is_none_or(|i| i > spec.max_nodes);
            let action: Option<(&str, String, bool)> = match n.state.as_str() {
                "UP" | "DRAINING" | "DRAINED" | "DOWN" if above_max && !n.busy => Some((
                    "terminate",
                    format!("above max_nodes ({})", spec.max_nodes),
                    false,
                )),
                "POWERING_UP" if n.launched_at.is_some_and(|t| t + timeout < now) => Some((
                    "boot_timeout",
                    format!("did not join within boot_timeout ({} s)", spec.boot_timeout),
                    true,
                )),
                "POWERING_DOWN" => Some((
                    "terminate",
                    n.reason.clone().unwrap_or_else(|| "powering down".into()),
                    true,
                )),
                "UP" | "DRAINING" | "DRAINED"
                    if n.power_request.as_deref() == Some("down_force") =>
                {
                    Some(("power_down", "POWER_DOWN_FORCE requested".into(), true))
                }
                "UP" | "DRAINING" | "DRAINED" | "DOWN"
                    if n.power_request.as_deref() == Some("down") && !n.busy =>
                {
                    Some(("power_down", "POWER_DOWN requested".into(), false))
                }
                "DRAINING" | "DRAINED"
                    if !n.busy
                        && n.reason
                            .as_deref()
                            .is_some_and(|r| r.starts_with("reclaimed")) =>
                {
                    Some(("terminate", n.reason.clone().unwrap_or_default(), false))
                }
                "UP" if !n.busy && n.power_request.is_none() && !planned.contains(&n.id) => {
                    let since = n
                        .power_changed_at
                        .into_iter()
                        .chain(n.last_release)
                        .max()
                        .unwrap_or(now);
                    let pool_active = active.get(n.pool.as_str()).copied().unwrap_or(0);
                    (since + chrono::Duration::seconds(spec.idle_timeout as i64) < now
                        && pool_active > spec.min_nodes)
                        .then(|| {
                            (
                                "terminate",
                                format!("idle for {} s (idle_timeout)", spec.idle_timeout),
                                false,
                            )
                        })
                }
                "DOWN" if n.instance_id.is_none() => {
                    let since = down_since.entry(n.id).or_insert_with(Instant::now);
                    (since.elapsed() >= Duration::from_secs(10))
                        .then(|| ("powered_down", "instance gone".to_string(), false))
                }
                _ => None,
            };
            if n.state != "DOWN" {
                down_since.remove(&n.id);
            }
            let Some((kind, reason, force)) = action else {
                continue;
            };
            if kind == "terminate" && n.state == "UP" {
                if let Some(c) = active.get_mut(n.pool.as_str()) {
                    *c = c.saturating_sub(1);
                }
            }
            if n.state == "UP" && n.power_request.as_deref() == Some("down") {
                let Some(mut tx) = self.check(db, term).await? else {
                    return Ok(false);
                };
                berth_db::node::node_admin_drain_in_tx(&mut tx, &n.name, "POWER_DOWN requested")
                    .await?;
                tx.commit().await?;
            }
            if !self
                .power_down(db, term, n, spec, raw, kind, &reason, force)
                .await?
            {
                return Ok(false);
            }
        }
        // Operators' POWER_DOWN of a busy node, and busy nodes left above a lowered
        // max_nodes: drain them so they take no new work.
        for n in nodes.iter().filter(|n| n.state == "UP" && n.busy) {
            let above_max = specs.get(&n.pool).is_some_and(|(spec, ..)| {
                cloud_db::slot_index(&n.pool, &n.name).is_none_or(|i| i > spec.max_nodes)
            });
            let reason = if n.power_request.as_deref() == Some("down") {
                "POWER_DOWN requested".to_string()
            } else if above_max {
                "above max_nodes: terminated once its jobs end".to_string()
            } else {
                continue;
            };
            let Some(mut tx) = self.check(db, term).await? else {
                return Ok(false);
            };
            berth_db::node::node_admin_drain_in_tx(&mut tx, &n.name, &reason).await?;
            tx.commit().await?;
        }

        // 5. Compare with the provider (what this pass changed included).
        let nodes = scaling::scaling_node_list(db).await?;
        if describe {
            for (name, (spec, raw, ..)) in &specs {
                if !self.compare(db, term, name, spec, raw, &nodes).await? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
