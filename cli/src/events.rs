//! Events and webhooks from the command line: `berth events [--follow] [--type T…]`,
//! `berth webhook add|list|show|enable|disable|delete|test|deliveries|redeliver`, and
//! Slurm's `strigger` (`--set`, `--get`, `--clear`), whose triggers Berth delivers as
//! webhooks: a trigger's `--program` is the https URL the event is POSTed to.

use crate::client::{Client, ClientError};
use anyhow::{bail, Context};
use berth_core::event::{
    CloudEvent, EventList, Webhook, WebhookCreate, WebhookDelivery, WebhookDeliveryList,
    WebhookList, WebhookUpdate,
};
use clap::{Args, Subcommand};
use futures_util::StreamExt;
use reqwest::Method;
use std::fmt::Write as _;
use std::time::Duration;

impl Client {
    /// `GET /v1/events` (one page).
    pub async fn event_list(
        &self,
        after: Option<&str>,
        types: Option<&str>,
        subject: Option<&str>,
        limit: u32,
    ) -> Result<EventList, ClientError> {
        let mut query = vec![("limit", limit.to_string())];
        if let Some(a) = after {
            query.push(("after", a.to_string()));
        }
        if let Some(t) = types {
            query.push(("type", t.to_string()));
        }
        if let Some(s) = subject {
            query.push(("subject", s.to_string()));
        }
        let url = self.url("/v1/events");
        self.json(self.http.get(&url).query(&query), format!("GET {url}"))
            .await
    }

    /// `GET /v1/events` as Server-Sent Events from after `after` (`None`: new events only):
    /// hands each event to `sink` until the stream ends (the api went away; the caller
    /// may resume after the last event it got).
    pub async fn event_follow(
        &self,
        after: Option<&str>,
        types: Option<&str>,
        subject: Option<&str>,
        mut sink: impl FnMut(CloudEvent),
    ) -> Result<(), ClientError> {
        let url = self.url("/v1/events");
        let mut query = Vec::new();
        if let Some(t) = types {
            query.push(("type", t.to_string()));
        }
        if let Some(s) = subject {
            query.push(("subject", s.to_string()));
        }
        let mut request = self
            .http
            .get(&url)
            .query(&query)
            .header("accept", "text/event-stream");
        if let Some(a) = after {
            request = request.header("last-event-id", a);
        }
        let what = format!("GET {url}");
        let response = self.send(request, what.clone()).await?;
        let mut body = response.bytes_stream();
        let mut pending = String::new();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|source| ClientError::Http {
                request: what.clone(),
                source,
            })?;
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let block: String = pending.drain(..end + 2).collect();
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if data.is_empty() {
                    continue;
                }
                let mut value: serde_json::Value = match serde_json::from_str(&data.join("\n")) {
                    Ok(v) => v,
                    Err(_) => continue,
                };
                crate::format::escape_strings(&mut value);
                if let Ok(event) = serde_json::from_value(value) {
                    sink(event);
                }
            }
        }
        Ok(())
    }

    /// `POST /v1/webhooks`.
    pub async fn webhook_create(&self, req: &WebhookCreate) -> Result<Webhook, ClientError> {
        let body = serde_json::to_value(req).unwrap_or_default();
        self.call(Method::POST, "/v1/webhooks", Some(&body)).await
    }

    /// `GET /v1/webhooks`.
    pub async fn webhook_list(&self) -> Result<WebhookList, ClientError> {
        self.call(Method::GET, "/v1/webhooks", None).await
    }

    /// `GET /v1/webhooks/{id}`.
    pub async fn webhook_get(&self, id: i64) -> Result<Webhook, ClientError> {
        self.call(Method::GET, &format!("/v1/webhooks/{id}"), None)
            .await
    }

    /// `PATCH /v1/webhooks/{id}`.
    pub async fn webhook_update(&self, id: i64, enabled: bool) -> Result<Webhook, ClientError> {
        let body = serde_json::to_value(WebhookUpdate {
            enabled: Some(enabled),
        })
        .unwrap_or_default();
        self.call(Method::PATCH, &format!("/v1/webhooks/{id}"), Some(&body))
            .await
    }

    /// `DELETE /v1/webhooks/{id}`.
    pub async fn webhook_delete(&self, id: i64) -> Result<(), ClientError> {
        self.call_empty(Method::DELETE, &format!("/v1/webhooks/{id}"), None)
            .await
    }

    /// `POST /v1/webhooks/{id}/test`.
    pub async fn webhook_test(&self, id: i64) -> Result<WebhookDelivery, ClientError> {
        self.call(Method::POST, &format!("/v1/webhooks/{id}/test"), None)
            .await
    }

    /// `GET /v1/webhooks/{id}/deliveries`.
    pub async fn webhook_deliveries(&self, id: i64) -> Result<WebhookDeliveryList, ClientError> {
        self.call(Method::GET, &format!("/v1/webhooks/{id}/deliveries"), None)
            .await
    }

    /// `POST /v1/webhooks/{id}/deliveries/{delivery}/redeliver`.
    pub async fn webhook_redeliver(
        &self,
        id: i64,
        delivery: i64,
    ) -> Result<WebhookDelivery, ClientError> {
        self.call(
            Method::POST,
            &format!("/v1/webhooks/{id}/deliveries/{delivery}/redeliver"),
            None,
        )
        .await
    }
}

/// `berth events`.
#[derive(Debug, Clone, Args)]
pub struct EventsArgs {
    /// Keep streaming new events (Server-Sent Events), resuming after the last one
    /// received if the connection drops.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only these types (`berth.job.ended`, `berth.node.*`); repeat or separate with commas.
    #[arg(short = 't', long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
    /// Only events about this subject (`jobs/123`, `nodes/gpu-7`).
    #[arg(long)]
    pub subject: Option<String>,
    /// Start after this event id (without it: the whole history, or with --follow only
    /// new events).
    #[arg(long)]
    pub after: Option<String>,
    /// The most events to list (without --follow; default 100).
    #[arg(short = 'n', long, default_value_t = 100)]
    pub limit: u32,
    /// Print each event as its CloudEvent JSON, one per line.
    #[arg(long)]
    pub json: bool,
}

/// One event as a line: id, time, type, subject, and what changed.
fn event_line(e: &CloudEvent) -> String {
    let d = &e.data;
    let mut detail = String::new();
    for key in [
        "state",
        "previous_state",
        "reason",
        "exit_code",
        "user",
        "account",
        "holder",
        "term",
        "kind",
    ] {
        match d.get(key) {
            Some(serde_json::Value::Null) | None => {}
            Some(serde_json::Value::String(s)) => {
                let _ = write!(detail, " {key}={s}");
            }
            Some(v) => {
                let _ = write!(detail, " {key}={v}");
            }
        }
    }
    format!(
        "{:>8} {} {:<30} {:<20}{}",
        e.id,
        e.time.format("%Y-%m-%dT%H:%M:%S"),
        e.event_type,
        e.subject,
        detail
    )
}

fn print_event(e: &CloudEvent, json: bool) {
    if json {
        println!("{}", serde_json::to_string(e).unwrap_or_default());
    } else {
        println!("{}", event_line(e));
    }
}

/// `berth events`.
///
/// # Errors
/// When the api refuses or cannot be reached (a followed stream is resumed instead).
pub async fn events(client: &Client, args: &EventsArgs) -> anyhow::Result<i32> {
    let types = (!args.types.is_empty()).then(|| args.types.join(","));
    if !args.follow {
        let page = client
            .event_list(
                args.after.as_deref(),
                types.as_deref(),
                args.subject.as_deref(),
                args.limit.clamp(1, 1000),
            )
            .await?;
        for e in &page.items {
            print_event(e, args.json);
        }
        return Ok(0);
    }
    let mut last = args.after.clone();
    loop {
        let resume = last.clone();
        let result = client
            .event_follow(
                resume.as_deref(),
                types.as_deref(),
                args.subject.as_deref(),
                |e| {
                    print_event(&e, args.json);
                    last = Some(e.id.clone());
                },
            )
            .await;
        match result {
            // A problem answer (bad filter, no rights) will not get better.
            Err(e) if e.status().is_some() => return Err(e.into()),
            Err(e) => eprintln!("berth events: {e}; reconnecting"),
            Ok(()) => {}
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `berth webhook …`.
#[derive(Debug, Clone, Subcommand)]
pub enum WebhookCommand {
    /// Create a webhook: `berth webhook add URL --event berth.job.ended`. Prints its
    /// secret, once.
    Add {
        /// The endpoint (`https://…`). (Its own argument id: the global `--url` is the api's.)
        #[arg(id = "endpoint", value_name = "URL")]
        url: String,
        /// Event types or patterns (`berth.job.*`, `*`); repeat or separate with commas.
        #[arg(short = 'e', long = "event", required = true, value_name = "TYPE")]
        events: Vec<String>,
        /// Only jobs of this account (repeatable).
        #[arg(short = 'A', long = "account")]
        accounts: Vec<String>,
        /// Only jobs in this partition (repeatable).
        #[arg(short = 'p', long = "partition")]
        partitions: Vec<String>,
        /// Only this job (repeatable).
        #[arg(short = 'j', long = "job")]
        jobs: Vec<i64>,
        /// Only this node (repeatable).
        #[arg(short = 'N', long = "node")]
        nodes: Vec<String>,
        /// The signing secret (`whsec_…`); generated when absent.
        #[arg(long)]
        secret: Option<String>,
        /// A note.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List your webhooks (every one for admins).
    List,
    /// Show a webhook.
    Show {
        /// Its id.
        id: i64,
    },
    /// Re-enable a webhook disabled after failing.
    Enable {
        /// Its id.
        id: i64,
    },
    /// Pause a webhook.
    Disable {
        /// Its id.
        id: i64,
    },
    /// Delete a webhook.
    Delete {
        /// Its id.
        id: i64,
    },
    /// Send a test event (`berth.webhook.test`).
    Test {
        /// Its id.
        id: i64,
    },
    /// A webhook's deliveries and their attempts.
    Deliveries {
        /// Its id.
        id: i64,
    },
    /// Send a delivery again (same `webhook-id`).
    Redeliver {
        /// The webhook's id.
        id: i64,
        /// The delivery's id.
        delivery: i64,
    },
}

fn split_list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

fn webhook_text(w: &Webhook) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "(any)".to_string()
        } else {
            v.join(",")
        }
    };
    let jobs: Vec<String> = w.jobs.iter().map(i64::to_string).collect();
    let mut out = String::new();
    let _ = writeln!(out, "Id={} Owner={} Url={}", w.id, w.owner, w.url);
    let _ = writeln!(
        out,
        "   Events={} Accounts={} Partitions={} Jobs={} Nodes={}",
        w.events.join(","),
        list(&w.accounts),
        list(&w.partitions),
        list(&jobs),
        list(&w.nodes)
    );
    let _ = writeln!(
        out,
        "   Enabled={} ConsecutiveFailures={}{} Created={}",
        if w.enabled { "yes" } else { "no" },
        w.consecutive_failures,
        w.disabled_reason
            .as_ref()
            .map(|r| format!(" DisabledReason=\"{r}\""))
            .unwrap_or_default(),
        w.created_at.format("%Y-%m-%dT%H:%M:%S")
    );
    if !w.description.is_empty() {
        let _ = writeln!(out, "   Description={}", w.description);
    }
    out
}

fn delivery_line(d: &WebhookDelivery) -> String {
    format!(
        "{:>6} {:>8} {:<30} {:<9} {:>8} {:>6} {}",
        d.id,
        d.event_id
            .map_or_else(|| "test".to_string(), |e| e.to_string()),
        d.event_type,
        d.state,
        d.attempts,
        d.last_status
            .map_or_else(|| "-".to_string(), |s| s.to_string()),
        d.last_error.as_deref().unwrap_or("")
    )
}

/// `berth webhook …`.
///
/// # Errors
/// When the api refuses or cannot be reached.
pub async fn webhook(client: &Client, what: WebhookCommand) -> anyhow::Result<i32> {
    match what {
        WebhookCommand::Add {
            url,
            events,
            accounts,
            partitions,
            jobs,
            nodes,
            secret,
            description,
        } => {
            let w = client
                .webhook_create(&WebhookCreate {
                    url,
                    events: split_list(&events),
                    accounts: split_list(&accounts),
                    partitions: split_list(&partitions),
                    jobs,
                    nodes: split_list(&nodes),
                    secret,
                    description,
                })
                .await?;
            print!("{}", webhook_text(&w));
            if let Some(secret) = &w.secret {
                println!("Secret (shown once; verify signatures with it): {secret}");
            }
        }
        WebhookCommand::List => {
            let list = client.webhook_list().await?;
            println!(
                "{:>5} {:<8} {:<7} {:>8} {:<40} URL",
                "ID", "OWNER", "ENABLED", "FAILURES", "EVENTS"
            );
            for w in &list.items {
                println!(
                    "{:>5} {:<8} {:<7} {:>8} {:<40} {}",
                    w.id,
                    w.owner,
                    if w.enabled { "yes" } else { "no" },
                    w.consecutive_failures,
                    w.events.join(","),
                    w.url
                );
            }
        }
        WebhookCommand::Show { id } => print!("{}", webhook_text(&client.webhook_get(id).await?)),
        WebhookCommand::Enable { id } => {
            print!("{}", webhook_text(&client.webhook_update(id, true).await?));
        }
        WebhookCommand::Disable { id } => {
            print!("{}", webhook_text(&client.webhook_update(id, false).await?));
        }
        WebhookCommand::Delete { id } => {
            client.webhook_delete(id).await?;
            println!("webhook {id} deleted");
        }
        WebhookCommand::Test { id } => {
            let d = client.webhook_test(id).await?;
            println!(
                "test delivery {} queued (webhook-id {}); see `berth webhook deliveries {id}`",
                d.id, d.message_id
            );
        }
        WebhookCommand::Deliveries { id } => {
            let list = client.webhook_deliveries(id).await?;
            println!(
                "{:>6} {:>8} {:<30} {:<9} {:>8} {:>6} ERROR",
                "ID", "EVENT", "TYPE", "STATE", "ATTEMPTS", "STATUS"
            );
            for d in &list.items {
                println!("{}", delivery_line(d));
            }
        }
        WebhookCommand::Redeliver { id, delivery } => {
            let d = client.webhook_redeliver(id, delivery).await?;
            println!(
                "delivery {} queued again (webhook-id {})",
                d.id, d.message_id
            );
        }
    }
    Ok(0)
}

/// Slurm's `strigger`: `--set` a trigger (`--node[=NAME] --down|--up|--drained|--idle`,
/// or `--jobid=ID --fini|--time`) with `--program=<https URL>`, `--get` the triggers,
/// `--clear --id=N`. Berth delivers triggers as webhooks: the program is the URL the
/// event is POSTed to, signed as Standard Webhooks says.
#[derive(Debug, Clone, Args)]
pub struct StriggerArgs {
    /// Create a trigger.
    #[arg(long, conflicts_with_all = ["get", "clear"])]
    pub set: bool,
    /// List the triggers (your webhooks).
    #[arg(long, conflicts_with = "clear")]
    pub get: bool,
    /// Delete the trigger --id.
    #[arg(long)]
    pub clear: bool,
    /// The trigger's id (with --clear or --get).
    #[arg(short = 'i', long)]
    pub id: Option<i64>,
    /// A node event (of NAME, or of any node).
    #[arg(short = 'n', long, num_args = 0..=1, default_missing_value = "")]
    pub node: Option<String>,
    /// A job event, of this job.
    #[arg(short = 'j', long)]
    pub jobid: Option<i64>,
    /// The node goes DOWN.
    #[arg(short = 'd', long)]
    pub down: bool,
    /// The node returns to service (UP).
    #[arg(short = 'u', long)]
    pub up: bool,
    /// The node is drained.
    #[arg(short = 'D', long)]
    pub drained: bool,
    /// The node becomes available (UP or resumed).
    #[arg(short = 'I', long)]
    pub idle: bool,
    /// The job ends.
    #[arg(short = 'f', long)]
    pub fini: bool,
    /// The job reaches its time limit.
    #[arg(short = 'T', long)]
    pub time: bool,
    /// Where to deliver: an https:// URL (Berth delivers triggers as webhooks).
    #[arg(short = 'p', long)]
    pub program: Option<String>,
}

/// The event types and filters of `strigger --set` options.
fn trigger_events(args: &StriggerArgs) -> anyhow::Result<(Vec<String>, Vec<String>, Vec<i64>)> {
    let mut events = Vec::new();
    for (on, t) in [
        (args.down, "berth.node.down"),
        (args.up, "berth.node.up"),
        (args.drained, "berth.node.drained"),
        (args.idle, "berth.node.up"),
        (args.idle, "berth.node.resumed"),
        (args.fini, "berth.job.ended"),
        (args.time, "berth.job.time_limit_warning"),
    ] {
        if on && !events.contains(&t.to_string()) {
            events.push(t.to_string());
        }
    }
    if events.is_empty() {
        bail!("strigger: --set needs an event: --down, --up, --drained, --idle (with --node) or --fini, --time (with --jobid)");
    }
    let node_events = args.down || args.up || args.drained || args.idle;
    let job_events = args.fini || args.time;
    if job_events && args.jobid.is_none() {
        bail!("strigger: --fini and --time need --jobid=ID");
    }
    if node_events && job_events {
        bail!(
            "strigger: one trigger is for nodes (--down …) or for a job (--fini, --time), not both"
        );
    }
    let nodes = match &args.node {
        Some(n) if !n.is_empty() => split_list(std::slice::from_ref(n)),
        _ => Vec::new(),
    };
    Ok((events, nodes, args.jobid.into_iter().collect()))
}

/// `strigger`.
///
/// # Errors
/// A `--program` that is not an https URL, missing options, or the api's refusal.
pub async fn strigger(client: &Client, args: &StriggerArgs) -> anyhow::Result<i32> {
    if args.set {
        let Some(program) = &args.program else {
            bail!("strigger: --set needs --program=<https URL>");
        };
        let is_url = reqwest::Url::parse(program)
            .map(|u| matches!(u.scheme(), "https" | "http"))
            .unwrap_or(false);
        if !is_url {
            bail!(
                "strigger: --program must be an https:// URL: Berth delivers triggers as webhooks \
                 (a signed HTTP POST of the event to that URL), it does not run programs"
            );
        }
        let (events, nodes, jobs) = trigger_events(args)?;
        let w = client
            .webhook_create(&WebhookCreate {
                url: program.clone(),
                events,
                nodes,
                jobs,
                description: "strigger".into(),
                ..Default::default()
            })
            .await
            .context("strigger --set")?;
        println!("trigger {} set", w.id);
        if let Some(secret) = &w.secret {
            println!("webhook secret (shown once): {secret}");
        }
        return Ok(0);
    }
    if args.clear {
        let Some(id) = args.id else {
            bail!("strigger: --clear needs --id=N");
        };
        client.webhook_delete(id).await?;
        return Ok(0);
    }
    if args.get {
        let list = client.webhook_list().await?;
        println!(
            "{:>7} {:<8} {:<8} {:<12} {:>6} {:<8} PROGRAM",
            "TRIG_ID", "RES_TYPE", "RES_ID", "TYPE", "OFFSET", "USER"
        );
        for w in list
            .items
            .iter()
            .filter(|w| args.id.is_none_or(|i| i == w.id))
        {
            let (res_type, res_id) = if !w.jobs.is_empty() {
                (
                    "job",
                    w.jobs
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                )
            } else if w.events.iter().all(|e| e.starts_with("berth.node.")) {
                (
                    "node",
                    if w.nodes.is_empty() {
                        "*".to_string()
                    } else {
                        w.nodes.join(",")
                    },
                )
            } else {
                ("event", "*".to_string())
            };
            let kinds: Vec<&str> = w
                .events
                .iter()
                .map(|e| match e.as_str() {
                    "berth.node.down" => "down",
                    "berth.node.up" => "up",
                    "berth.node.drained" => "drained",
                    "berth.node.resumed" => "idle",
                    "berth.job.ended" => "fini",
                    "berth.job.time_limit_warning" => "time",
                    other => other,
                })
                .collect();
            println!(
                "{:>7} {:<8} {:<8} {:<12} {:>6} {:<8} {}",
                w.id,
                res_type,
                res_id,
                kinds.join(","),
                0,
                w.owner,
                w.url
            );
        }
        return Ok(0);
    }
    bail!("strigger: give --set, --get or --clear");
}
