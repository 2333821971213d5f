//! Advance reservations from the command line: `berth reservation
//! create|update|list|show|delete` and Slurm's `scontrol create reservation
//! ReservationName=… StartTime=… Duration=… Nodes=… Users=… Flags=…`, `scontrol update
//! ReservationName=… …`, `scontrol delete ReservationName=…` and `scontrol show
//! reservation [NAME]`, printed as Slurm prints them.
//!
//! Keys (any case, Slurm's names): `ReservationName`, `StartTime`, `EndTime`, `Duration`,
//! `Nodes` (a host list or `ALL`), `NodeCnt`, `TRES=gres/gpu:N` (or `gres/gpu=N`),
//! `PartitionName`, `Users`, `Accounts`, `Flags`.

use crate::client::{Client, ClientError};
use crate::format;
use anyhow::{bail, Context};
use berth_core::reservation::parse_flags;
use berth_core::wire::{Reservation, ReservationCreate, ReservationList, ReservationUpdate};
use reqwest::Method;

impl Client {
    /// `GET /v1/reservations`.
    pub async fn reservation_list(&self) -> Result<ReservationList, ClientError> {
        self.call(Method::GET, "/v1/reservations", None).await
    }

    /// `GET /v1/reservations/{name}`.
    pub async fn reservation_get(&self, name: &str) -> Result<Reservation, ClientError> {
        self.call(Method::GET, &format!("/v1/reservations/{name}"), None)
            .await
    }

    /// `POST /v1/reservations`.
    pub async fn reservation_create(
        &self,
        req: &ReservationCreate,
    ) -> Result<Reservation, ClientError> {
        let body = serde_json::to_value(req).unwrap_or_default();
        self.call(Method::POST, "/v1/reservations", Some(&body))
            .await
    }

    /// `PATCH /v1/reservations/{name}`.
    pub async fn reservation_update(
        &self,
        name: &str,
        req: &ReservationUpdate,
    ) -> Result<Reservation, ClientError> {
        let body = serde_json::to_value(req).unwrap_or_default();
        self.call(
            Method::PATCH,
            &format!("/v1/reservations/{name}"),
            Some(&body),
        )
        .await
    }

    /// `DELETE /v1/reservations/{name}`.
    pub async fn reservation_delete(&self, name: &str) -> Result<(), ClientError> {
        self.call_empty(Method::DELETE, &format!("/v1/reservations/{name}"), None)
            .await
    }
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Reads `TRES=gres/gpu:N` (or `gres/gpu=N`, `gpu:N`): the GPU count.
fn tres_gpus(v: &str) -> anyhow::Result<u32> {
    let lower = v.trim().to_ascii_lowercase();
    let count = ["gres/gpu:", "gres/gpu=", "gpu:", "gpu="]
        .iter()
        .find_map(|p| lower.strip_prefix(p));
    match count {
        Some(n) => n
            .parse()
            .with_context(|| format!("TRES={v}: not a GPU count")),
        None => bail!("TRES={v}: Berth reserves GPUs by count only (TRES=gres/gpu:N)"),
    }
}

/// `scontrol create|update reservation`'s `Key=Value` words, read into the update shape
/// (every field `Some` that a word names) with the reservation's name.
///
/// # Errors
/// A word without `=`, an empty value, an unknown key, a bad number or flag list.
pub fn parse_words(words: &[String]) -> anyhow::Result<(Option<String>, ReservationUpdate)> {
    let mut name = None;
    let mut u = ReservationUpdate::default();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            bail!("{word:?}: expected Key=Value (ReservationName=, StartTime=, Duration=, Nodes=, Users=, Flags=, …)");
        };
        let value = value.trim();
        if value.is_empty() && !key.eq_ignore_ascii_case("flags") {
            bail!("{key}= needs a value");
        }
        let number = |what: &str| -> anyhow::Result<u32> {
            value
                .parse()
                .with_context(|| format!("{what}={value}: not a count"))
        };
        match key.to_ascii_lowercase().as_str() {
            "reservationname" | "reservation" => name = Some(value.to_string()),
            "starttime" => u.start_time = Some(value.to_string()),
            "endtime" => u.end_time = Some(value.to_string()),
            "duration" => u.duration = Some(value.to_string()),
            "nodes" | "nodelist" => u.nodes = Some(value.to_string()),
            "nodecnt" | "nodecount" => u.node_cnt = Some(number(key)?),
            "tres" => u.gpus = Some(tres_gpus(value)?),
            "gpus" | "gpucnt" => u.gpus = Some(number(key)?),
            "partitionname" | "partition" => u.partition = Some(value.to_string()),
            "users" | "user" => u.users = Some(list(value)),
            "accounts" | "account" => u.accounts = Some(list(value)),
            "flags" | "flag" => {
                u.flags =
                    Some(parse_flags(value).map_err(|e| anyhow::anyhow!("Flags={value}: {e}"))?)
            }
            _ => bail!(
                "unknown reservation setting {key:?} (ReservationName, StartTime, EndTime, \
                 Duration, Nodes, NodeCnt, TRES, PartitionName, Users, Accounts, Flags)"
            ),
        }
    }
    Ok((name, u))
}

/// The create request from `Key=Value` words.
///
/// # Errors
/// As [`parse_words`], or no `ReservationName=`.
pub fn create_request(words: &[String]) -> anyhow::Result<ReservationCreate> {
    let (name, u) = parse_words(words)?;
    let Some(name) = name else {
        bail!("a reservation needs a name (ReservationName=NAME)");
    };
    Ok(ReservationCreate {
        name,
        start_time: u.start_time,
        end_time: u.end_time,
        duration: u.duration,
        nodes: u.nodes,
        node_cnt: u.node_cnt,
        gpus: u.gpus,
        partition: u.partition,
        users: u.users.unwrap_or_default(),
        accounts: u.accounts.unwrap_or_default(),
        flags: u.flags.unwrap_or_default(),
    })
}

/// `scontrol show reservation`'s lines for one reservation (local times, Slurm's
/// `Duration` format, `(null)` for what is unset).
pub fn format_reservation(r: &Reservation) -> String {
    fn or_null(v: &[String]) -> String {
        if v.is_empty() {
            "(null)".to_string()
        } else {
            v.join(",")
        }
    }
    let flags: Vec<&str> = r.flags.iter().map(|f| f.as_str()).collect();
    format!(
        "ReservationName={} StartTime={} EndTime={} Duration={}\n   \
         Nodes={} NodeCnt={} CoreCnt={} Features=(null) PartitionName={} Flags={}\n   \
         TRES={}\n   \
         Users={} Groups=(null) Accounts={} Licenses=(null) State={} BurstBuffer=(null)\n   \
         MaxStartDelay=(null)\n",
        r.name,
        format::scontrol_time(Some(r.start_time)),
        format::scontrol_time(Some(r.end_time)),
        format::scontrol_duration(r.duration),
        if r.node_list.is_empty() {
            "(null)"
        } else {
            &r.node_list
        },
        r.node_cnt,
        r.cpus,
        r.partition.as_deref().unwrap_or("(null)"),
        flags.join(","),
        r.tres,
        or_null(&r.users),
        or_null(&r.accounts),
        r.state,
    )
}

/// `berth reservation list` / `scontrol show reservation`.
pub async fn reservation_list(client: &Client, json: bool) -> anyhow::Result<i32> {
    let list = client.reservation_list().await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list.items)?);
    } else if list.items.is_empty() {
        println!("No reservations in the system");
    } else {
        let shown: Vec<String> = list.items.iter().map(format_reservation).collect();
        print!("{}", shown.join("\n"));
    }
    Ok(0)
}

/// `berth reservation show NAME` / `scontrol show reservation NAME`.
pub async fn reservation_show(client: &Client, name: &str, json: bool) -> anyhow::Result<i32> {
    let r = client.reservation_get(name).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", format_reservation(&r));
    }
    Ok(0)
}

/// `berth reservation create Key=Value…` / `scontrol create reservation …`: prints
/// `Reservation created: NAME` as scontrol does.
pub async fn reservation_create(client: &Client, words: &[String]) -> anyhow::Result<i32> {
    let req = create_request(words)?;
    let r = client.reservation_create(&req).await?;
    println!("Reservation created: {}", r.name);
    Ok(0)
}

/// `berth reservation update NAME Key=Value…` / `scontrol update ReservationName=NAME …`
/// (`name`: the positional name, if any).
pub async fn reservation_update(
    client: &Client,
    name: Option<&str>,
    words: &[String],
) -> anyhow::Result<i32> {
    let (named, update) = parse_words(words)?;
    let Some(name) = name.map(str::to_string).or(named) else {
        bail!("which reservation? (ReservationName=NAME)");
    };
    if update == ReservationUpdate::default() {
        bail!("reservation {name}: nothing to change");
    }
    client.reservation_update(&name, &update).await?;
    println!("Reservation updated.");
    Ok(0)
}

/// `berth reservation delete NAME` / `scontrol delete ReservationName=NAME`.
pub async fn reservation_delete(client: &Client, name: &str) -> anyhow::Result<i32> {
    client.reservation_delete(name).await?;
    Ok(0)
}

/// `scontrol create|update|delete` with a `ReservationName=` word (or `create
/// reservation …`): `verb` is `create`, `update` or `delete`; `words` follow it.
///
/// # Errors
/// Bad words, or the api's refusal.
pub async fn scontrol(client: &Client, verb: &str, words: &[String]) -> anyhow::Result<i32> {
    let words: Vec<String> = match words.first() {
        Some(w) if w.eq_ignore_ascii_case("reservation") => words[1..].to_vec(),
        _ => words.to_vec(),
    };
    match verb {
        "create" => reservation_create(client, &words).await,
        "update" => reservation_update(client, None, &words).await,
        _ => {
            let (name, rest) = parse_words(&words)?;
            let Some(name) = name else {
                bail!("scontrol delete: which reservation? (ReservationName=NAME)");
            };
            if rest != ReservationUpdate::default() {
                bail!("scontrol delete ReservationName={name}: takes no other setting");
            }
            reservation_delete(client, &name).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::reservation::ReservationFlag;
    use berth_core::wire::ReservationNode;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn slurm_create_words_become_the_request() {
        let req = create_request(&words(
            "ReservationName=maint StartTime=now Duration=10 Nodes=node-1 Users=root Flags=MAINT",
        ))
        .unwrap();
        assert_eq!(
            req,
            ReservationCreate {
                name: "maint".into(),
                start_time: Some("now".into()),
                duration: Some("10".into()),
                nodes: Some("node-1".into()),
                users: vec!["root".into()],
                flags: vec![ReservationFlag::Maint],
                ..ReservationCreate::default()
            }
        );
        let req = create_request(&words(
            "reservationname=gpus starttime=now+1hour endtime=2030-01-01T00:00 TRES=gres/gpu:2 accounts=a,b flags=ignore_jobs,daily",
        ))
        .unwrap();
        assert_eq!(req.gpus, Some(2));
        assert_eq!(req.accounts, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(
            req.flags,
            vec![ReservationFlag::IgnoreJobs, ReservationFlag::Daily]
        );
        assert_eq!(
            create_request(&words("NodeCnt=2 Users=x Duration=5"))
                .unwrap_err()
                .to_string(),
            "a reservation needs a name (ReservationName=NAME)"
        );
        assert!(create_request(&words("ReservationName=r Colour=blue")).is_err());
        assert!(create_request(&words("ReservationName=r Flags=OVERLAP")).is_err());
        assert!(create_request(&words("ReservationName=r TRES=cpu=4")).is_err());
        assert!(create_request(&words("ReservationName=r NodeCnt=two")).is_err());
    }

    #[test]
    fn show_prints_slurms_lines() {
        let at = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s)
                .unwrap()
                .with_timezone(&chrono::Utc)
        };
        let r = Reservation {
            name: "maint".into(),
            start_time: at("2026-12-01T10:00:00Z"),
            end_time: at("2026-12-01T10:10:00Z"),
            duration: 600,
            nodes: vec![ReservationNode {
                name: "node-1".into(),
                gpus: None,
            }],
            node_list: "node-1".into(),
            node_cnt: 1,
            cpus: 4,
            gpus: 8,
            tres: "cpu=4,gres/gpu=8".into(),
            partition: None,
            users: vec!["root".into()],
            accounts: vec![],
            flags: vec![ReservationFlag::Maint],
            state: "ACTIVE".into(),
            created_by: "root".into(),
        };
        let out = format_reservation(&r);
        let first = out.lines().next().unwrap();
        assert!(first.starts_with("ReservationName=maint StartTime="));
        assert!(first.ends_with(" Duration=00:10:00"));
        assert!(out.contains(
            "   Nodes=node-1 NodeCnt=1 CoreCnt=4 Features=(null) PartitionName=(null) Flags=MAINT\n"
        ));
        assert!(out.contains("   TRES=cpu=4,gres/gpu=8\n"));
        assert!(out
            .contains("   Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE"));
    }
}
