//! `berth user`, `berth account` and `berth token create|list|revoke`: users, the account
//! tree with its members, and API tokens, through the REST api (what `sacctmgr` does for
//! Slurm).

use crate::client::Client;
use anyhow::{anyhow, bail};
use berth_core::identity::{
    Account, AccountList, AccountUpdate, ApiTokenCreated, ApiTokenList, TokenScope, User, UserList,
    UserRole,
};
use berth_core::qos::TresLimits;
use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::json;

/// A user's role on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UserRoleArg {
    /// Everything.
    Admin,
    /// Nodes, partitions, QOS; every job.
    Operator,
    /// Own jobs and those of coordinated accounts.
    User,
}

impl From<UserRoleArg> for UserRole {
    fn from(r: UserRoleArg) -> Self {
        match r {
            UserRoleArg::Admin => UserRole::Admin,
            UserRoleArg::Operator => UserRole::Operator,
            UserRoleArg::User => UserRole::User,
        }
    }
}

/// An API token's scope on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    /// Reads only.
    ReadOnly,
    /// Reads, submitting and cancelling jobs.
    Submit,
    /// All the owner's role allows.
    Admin,
}

impl From<ScopeArg> for TokenScope {
    fn from(s: ScopeArg) -> Self {
        match s {
            ScopeArg::ReadOnly => TokenScope::ReadOnly,
            ScopeArg::Submit => TokenScope::Submit,
            ScopeArg::Admin => TokenScope::Admin,
        }
    }
}

/// `berth user …`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user, optionally to an account (which becomes their default).
    Add {
        /// The user name (a token's `sub`).
        name: String,
        /// The role.
        #[arg(long, value_enum, default_value_t = UserRoleArg::User)]
        role: UserRoleArg,
        /// An account to add the user to.
        #[arg(short = 'A', long)]
        account: Option<String>,
        /// Make the user a coordinator of that account.
        #[arg(long, requires = "account")]
        coordinator: bool,
    },
    /// List users with their accounts.
    List,
    /// Show one user.
    Show {
        /// The user name.
        name: String,
    },
    /// Delete a user.
    Delete {
        /// The user name.
        name: String,
    },
}

/// `berth account …`.
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// Add an account under a parent (default `root`).
    Add {
        /// The account name.
        name: String,
        /// The parent account.
        #[arg(long)]
        parent: Option<String>,
        /// Fairshare shares (default 1).
        #[arg(long)]
        shares: Option<u32>,
    },
    /// Change an account, as `sacctmgr modify account NAME set ...` does:
    /// `GrpTRES=gres/gpu=8,cpu=64,node=2` (what all running jobs of the account and its
    /// sub-accounts may hold together; `GrpTRES=` removes the limits) and `Shares=N`.
    Set {
        /// The account name.
        name: String,
        /// `key=value` assignments (case-insensitive keys).
        #[arg(required = true)]
        assignments: Vec<String>,
    },
    /// List accounts (as a tree).
    List,
    /// Delete an account without sub-accounts.
    Delete {
        /// The account name.
        name: String,
    },
    /// Add a user to an account, or change their membership.
    AddUser {
        /// The account.
        account: String,
        /// The user.
        user: String,
        /// Make them a coordinator of the account.
        #[arg(long)]
        coordinator: bool,
        /// Make it their default account.
        #[arg(long)]
        default: bool,
    },
    /// Remove a user from an account.
    RemoveUser {
        /// The account.
        account: String,
        /// The user.
        user: String,
    },
}

/// `berth token create`.
#[derive(Debug, Args)]
pub struct TokenCreateArgs {
    /// What the token is for (`ci-main`).
    #[arg(long)]
    pub name: String,
    /// What it may do.
    #[arg(long, value_enum, default_value_t = ScopeArg::ReadOnly)]
    pub scope: ScopeArg,
    /// Days until it expires (1 to 365).
    #[arg(long, default_value_t = 90)]
    pub expires_in_days: u32,
}

fn user_line(u: &User) -> String {
    let accounts: Vec<String> = u
        .memberships
        .iter()
        .map(|m| {
            let mut s = m.account.clone();
            if m.coordinator {
                s.push_str("(coord)");
            }
            if u.default_account.as_deref() == Some(m.account.as_str()) {
                s.push('*');
            }
            s
        })
        .collect();
    format!(
        "{:<20} {:<9} {}",
        u.name,
        u.role.as_str(),
        if accounts.is_empty() {
            "-".to_string()
        } else {
            accounts.join(",")
        }
    )
}

const USER_HEADER: &str = "USER                 ROLE      ACCOUNTS (* default)";

/// Runs a `berth user` command; returns the exit status.
pub async fn user(client: &Client, command: UserCommand) -> anyhow::Result<i32> {
    match command {
        UserCommand::Add {
            name,
            role,
            account,
            coordinator,
        } => {
            let role: UserRole = role.into();
            let mut u: User = client
                .call(
                    Method::POST,
                    "/v1/users",
                    Some(&json!({"name": name, "role": role})),
                )
                .await?;
            if let Some(account) = account {
                u = client
                    .call(
                        Method::PUT,
                        &format!("/v1/accounts/{account}/users/{name}"),
                        Some(&json!({"coordinator": coordinator, "default": true})),
                    )
                    .await?;
            }
            println!("{USER_HEADER}\n{}", user_line(&u));
        }
        UserCommand::List => {
            let list: UserList = client.call(Method::GET, "/v1/users", None).await?;
            println!("{USER_HEADER}");
            for u in &list.items {
                println!("{}", user_line(u));
            }
        }
        UserCommand::Show { name } => {
            let u: User = client
                .call(Method::GET, &format!("/v1/users/{name}"), None)
                .await?;
            println!("{USER_HEADER}\n{}", user_line(&u));
        }
        UserCommand::Delete { name } => {
            client
                .call_empty(Method::DELETE, &format!("/v1/users/{name}"), None)
                .await?;
        }
    }
    Ok(0)
}

/// Reads sacctmgr-style `key=value` assignments for `berth account set`: `grptres=`
/// (a TRES list like `gres/gpu=8,cpu=64`; empty for no limit) and `shares=`;
/// case-insensitive keys.
///
/// # Errors
/// A message naming the unknown key or bad value.
pub fn account_assignments(assignments: &[String]) -> anyhow::Result<AccountUpdate> {
    let mut update = AccountUpdate::default();
    for a in assignments {
        let Some((key, value)) = a.split_once('=') else {
            bail!("expected key=value, got {a:?}");
        };
        let bad = |what: &str| anyhow!("{key}={value}: {what}");
        match key.to_ascii_lowercase().as_str() {
            "grptres" => update.grp_tres = Some(TresLimits::parse(value).map_err(|e| bad(&e))?),
            "shares" | "fairshare" => {
                update.shares = Some(value.parse().map_err(|_| bad("not a count"))?)
            }
            other => bail!("unknown setting {other:?} (GrpTRES, Shares)"),
        }
    }
    Ok(update)
}

fn account_line(a: &Account, depth: usize) -> String {
    let limits = a.grp_tres.to_string();
    format!(
        "{:<30} {:<8} {}\n",
        format!("{}{}", "  ".repeat(depth), a.name),
        a.shares,
        if limits.is_empty() { "-" } else { &limits }
    )
}

/// The account tree, indented two spaces a level, with shares and `GrpTRES`.
pub fn account_tree(list: &AccountList) -> String {
    fn walk(list: &AccountList, parent: Option<&str>, depth: usize, out: &mut String) {
        for a in list.items.iter().filter(|a| a.parent.as_deref() == parent) {
            out.push_str(&account_line(a, depth));
            walk(list, Some(&a.name), depth + 1, out);
        }
    }
    let mut out = format!("{:<30} {:<8} GRPTRES\n", "ACCOUNT", "SHARES");
    // Roots of what the caller sees: accounts whose parent is not in the list.
    let names: Vec<&str> = list.items.iter().map(|a| a.name.as_str()).collect();
    for a in list
        .items
        .iter()
        .filter(|a| a.parent.as_deref().is_none_or(|p| !names.contains(&p)))
    {
        out.push_str(&account_line(a, 0));
        walk(list, Some(&a.name), 1, &mut out);
    }
    out
}

/// Runs a `berth account` command; returns the exit status.
pub async fn account(client: &Client, command: AccountCommand) -> anyhow::Result<i32> {
    match command {
        AccountCommand::Add {
            name,
            parent,
            shares,
        } => {
            let _: serde_json::Value = client
                .call(
                    Method::POST,
                    "/v1/accounts",
                    Some(&json!({"name": name, "parent": parent, "shares": shares})),
                )
                .await?;
        }
        AccountCommand::Set { name, assignments } => {
            let update = account_assignments(&assignments)?;
            let a: Account = client
                .call(
                    Method::PATCH,
                    &format!("/v1/accounts/{name}"),
                    Some(&serde_json::to_value(&update)?),
                )
                .await?;
            print!(
                "{}",
                account_tree(&AccountList {
                    items: vec![Account { parent: None, ..a }],
                })
            );
        }
        AccountCommand::List => {
            let list: AccountList = client.call(Method::GET, "/v1/accounts", None).await?;
            print!("{}", account_tree(&list));
        }
        AccountCommand::Delete { name } => {
            client
                .call_empty(Method::DELETE, &format!("/v1/accounts/{name}"), None)
                .await?;
        }
        AccountCommand::AddUser {
            account,
            user,
            coordinator,
            default,
        } => {
            let u: User = client
                .call(
                    Method::PUT,
                    &format!("/v1/accounts/{account}/users/{user}"),
                    Some(&json!({"coordinator": coordinator, "default": default})),
                )
                .await?;
            println!("{USER_HEADER}\n{}", user_line(&u));
        }
        AccountCommand::RemoveUser { account, user } => {
            client
                .call_empty(
                    Method::DELETE,
                    &format!("/v1/accounts/{account}/users/{user}"),
                    None,
                )
                .await?;
        }
    }
    Ok(0)
}

/// `berth token create`: prints the token alone on stdout (it is shown once) and what it
/// is on stderr.
pub async fn token_create(client: &Client, args: &TokenCreateArgs) -> anyhow::Result<i32> {
    let scope: TokenScope = args.scope.into();
    let created: ApiTokenCreated = client
        .call(
            Method::POST,
            "/v1/tokens",
            Some(&json!({
                "name": args.name,
                "scope": scope,
                "expires_in_days": args.expires_in_days,
            })),
        )
        .await?;
    println!("{}", created.token);
    eprintln!(
        "API token {} ({}, scope {}) expires {}; it is shown only this once.",
        created.info.id,
        created.info.name,
        scope.as_str(),
        created.info.expires_at.format("%Y-%m-%dT%H:%M:%SZ")
    );
    Ok(0)
}

/// `berth token list`.
pub async fn token_list(client: &Client) -> anyhow::Result<i32> {
    let list: ApiTokenList = client.call(Method::GET, "/v1/tokens", None).await?;
    println!(
        "{:<6} {:<20} {:<12} {:<10} {:<14} {:<20} {:<20} STATUS",
        "ID", "NAME", "PREFIX", "SCOPE", "USER", "EXPIRES", "LAST_USED"
    );
    let now = chrono::Utc::now();
    for t in &list.items {
        let status = if t.revoked_at.is_some() {
            "revoked"
        } else if t.expires_at <= now {
            "expired"
        } else {
            "active"
        };
        println!(
            "{:<6} {:<20} {:<12} {:<10} {:<14} {:<20} {:<20} {}",
            t.id,
            t.name,
            t.prefix,
            t.scope.as_str(),
            t.user,
            t.expires_at.format("%Y-%m-%dT%H:%M:%S"),
            t.last_used_at
                .map(|d| d.format("%Y-%m-%dT%H:%M:%S").to_string())
                .unwrap_or_else(|| "never".into()),
            status
        );
    }
    Ok(0)
}

/// `berth token revoke <id>…`.
pub async fn token_revoke(client: &Client, ids: &[i64]) -> anyhow::Result<i32> {
    for id in ids {
        client
            .call_empty(Method::DELETE, &format!("/v1/tokens/{id}"), None)
            .await?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_set_reads_sacctmgr_assignments() {
        let u =
            account_assignments(&["GrpTRES=gres/gpu=8,cpu=64".into(), "Shares=3".into()]).unwrap();
        assert_eq!(
            u.grp_tres,
            Some(TresLimits {
                gpu: Some(8),
                cpu: Some(64),
                node: None
            })
        );
        assert_eq!(u.shares, Some(3));
        let cleared = account_assignments(&["grptres=".into()]).unwrap();
        assert_eq!(cleared.grp_tres, Some(TresLimits::default()));
        assert!(cleared.shares.is_none());
        let err = account_assignments(&["GrpTRES=mem=4".into()]).unwrap_err();
        assert!(err.to_string().contains("unknown TRES"), "{err}");
        assert!(account_assignments(&["MaxJobs=3".into()]).is_err());
        assert!(account_assignments(&["Shares=-1".into()]).is_err());
    }
}
