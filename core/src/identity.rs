//! Wire types of identity and access: users, accounts, memberships, API tokens, the audit
//! log; and the rule that names environment variables holding secrets.

use crate::auth::Role;
use crate::qos::TresLimits;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A role a user row may hold (`node` is for workers' tokens only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum UserRole {
    /// Everything.
    Admin,
    /// Drain nodes, manage partitions and QOS, see every job.
    Operator,
    /// Own jobs and the jobs of accounts they coordinate.
    User,
}

impl UserRole {
    /// The name stored and sent (`admin`, `operator`, `user`).
    pub fn as_str(self) -> &'static str {
        match self {
            UserRole::Admin => "admin",
            UserRole::Operator => "operator",
            UserRole::User => "user",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<UserRole> {
        match s {
            "admin" => Some(UserRole::Admin),
            "operator" => Some(UserRole::Operator),
            "user" => Some(UserRole::User),
            _ => None,
        }
    }
}

impl From<UserRole> for Role {
    fn from(r: UserRole) -> Role {
        match r {
            UserRole::Admin => Role::Admin,
            UserRole::Operator => Role::Operator,
            UserRole::User => Role::User,
        }
    }
}

/// `POST /v1/users`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserCreate {
    /// The user name, as tokens name it in `sub` (letters, digits, `_.@-`).
    pub name: String,
    /// The role (default `user`). Only admins create admins and operators.
    #[serde(default = "default_user_role")]
    pub role: UserRole,
}

fn default_user_role() -> UserRole {
    UserRole::User
}

/// One account a user belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Membership {
    /// The account.
    pub account: String,
    /// The user.
    pub user: String,
    /// Whether the user coordinates the account (sees and manages its jobs and those of
    /// its sub-accounts).
    pub coordinator: bool,
}

/// `GET /v1/whoami`: who the api takes the caller to be, and what the credentials allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Whoami {
    /// The user (a worker's token: `node:NAME`).
    pub user: String,
    /// `admin`, `operator`, `user` or `node`: the role the credentials carry.
    pub role: String,
    /// The API token used, when the caller used one.
    pub token_id: Option<i64>,
    /// That token's scope.
    pub scope: Option<TokenScope>,
    /// For a job's own token (`BERTH_TOKEN` inside a job): its job.
    pub job_id: Option<i64>,
    /// The user's default account, when recorded.
    pub default_account: Option<String>,
    /// The accounts the user belongs to (with whether they coordinate each).
    pub accounts: Vec<Membership>,
}

/// A user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The role.
    pub role: UserRole,
    /// The account jobs are charged to when a submission names none.
    pub default_account: Option<String>,
    /// The accounts the user belongs to.
    pub memberships: Vec<Membership>,
}

/// `GET /v1/users`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct UserList {
    /// Every user, by name.
    pub items: Vec<User>,
}

/// `POST /v1/accounts`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountCreate {
    /// The account name (letters, digits, `_.-`).
    pub name: String,
    /// The parent account (default `root`): organisation → team → project.
    #[serde(default)]
    pub parent: Option<String>,
    /// Fairshare shares relative to its siblings (default 1).
    #[serde(default)]
    pub shares: Option<u32>,
    /// `GrpTRES`: what all running jobs of the account and its sub-accounts may hold
    /// together (default: no limit).
    #[serde(default)]
    pub grp_tres: Option<TresLimits>,
}

/// `PATCH /v1/accounts/{name}` (`sacctmgr modify account NAME set ...`): the fields to
/// change; an absent field stays as it is.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountUpdate {
    /// Fairshare shares relative to its siblings.
    #[serde(default)]
    pub shares: Option<u32>,
    /// `GrpTRES`: replaces the account's whole limit set (`{}` removes every limit).
    #[serde(default)]
    pub grp_tres: Option<TresLimits>,
}

/// An account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Account {
    /// The account name.
    pub name: String,
    /// The parent account; absent only for `root`.
    pub parent: Option<String>,
    /// Fairshare shares.
    pub shares: u32,
    /// `GrpTRES`: what all running jobs of the account and its sub-accounts may hold
    /// together; jobs past it wait with `AssocGrpGRES`, `AssocGrpCpuLimit` or
    /// `AssocGrpNodeLimit`.
    #[serde(default)]
    pub grp_tres: TresLimits,
}

/// `GET /v1/accounts`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AccountList {
    /// The accounts the caller may see, by name.
    pub items: Vec<Account>,
}

/// `PUT /v1/accounts/{name}/users/{user}`: adds the user to the account or changes the
/// membership.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MembershipSet {
    /// Make the user a coordinator of the account.
    #[serde(default)]
    pub coordinator: bool,
    /// Make this the user's default account (a user's first membership becomes the
    /// default anyway).
    #[serde(default)]
    pub default: bool,
}

/// What an API token may do, on top of its owner's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TokenScope {
    /// Reads (`GET`) only.
    ReadOnly,
    /// Reads, and submitting and cancelling jobs.
    Submit,
    /// Everything the owner's role allows.
    Admin,
}

impl TokenScope {
    /// The name stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::ReadOnly => "read-only",
            TokenScope::Submit => "submit",
            TokenScope::Admin => "admin",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<TokenScope> {
        match s {
            "read-only" => Some(TokenScope::ReadOnly),
            "submit" => Some(TokenScope::Submit),
            "admin" => Some(TokenScope::Admin),
            _ => None,
        }
    }
}

/// `POST /v1/tokens`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiTokenCreate {
    /// What the token is for (`ci-main`), 1 to 200 characters.
    pub name: String,
    /// What it may do (default `read-only`). `admin` needs the admin or operator role.
    #[serde(default = "default_scope")]
    pub scope: TokenScope,
    /// Days until it expires, 1 to 365 (default 90).
    #[serde(default)]
    pub expires_in_days: Option<u32>,
}

fn default_scope() -> TokenScope {
    TokenScope::ReadOnly
}

/// An API token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ApiToken {
    /// Id (for `DELETE /v1/tokens/{id}`).
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The first characters of the token, to recognise it (`berth_AbCd…`).
    pub prefix: String,
    /// The owner.
    pub user: String,
    /// The scope.
    pub scope: TokenScope,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Not accepted after this.
    pub expires_at: DateTime<Utc>,
    /// Last accepted.
    pub last_used_at: Option<DateTime<Utc>>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// `POST /v1/tokens` answer: the token, shown this once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApiTokenCreated {
    /// The bearer token (`berth_…`). It cannot be shown again.
    pub token: String,
    /// The stored token.
    #[serde(flatten)]
    pub info: ApiToken,
}

/// `GET /v1/tokens`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ApiTokenList {
    /// The caller's tokens (every token, for admins), by id.
    pub items: Vec<ApiToken>,
}

/// One audited call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    /// Id (increasing).
    pub id: i64,
    /// When it was answered.
    pub at: DateTime<Utc>,
    /// The caller; absent when the credentials did not verify.
    pub actor: Option<String>,
    /// The caller's role.
    pub role: Option<String>,
    /// The API token used, when one was.
    pub token_id: Option<i64>,
    /// HTTP method.
    pub method: String,
    /// Path, without the query.
    pub path: String,
    /// HTTP status of the answer.
    pub status: u16,
    /// The peer's address.
    pub remote_addr: Option<String>,
    /// The request id.
    pub request_id: Option<String>,
}

/// `GET /v1/audit` filters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only this caller's calls.
    pub actor: Option<String>,
    /// Page size, 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// `GET /v1/audit`: newest first.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditList {
    /// The entries.
    pub items: Vec<AuditEntry>,
    /// The cursor of the next (older) page, when there is one.
    pub next_cursor: Option<String>,
}

/// `POST /v1/nodes/bootstrap-tokens`: a token a new worker joins with.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeBootstrapCreate {
    /// Minutes until it expires, 1 to 43200 (30 days; default 60).
    #[serde(default)]
    pub ttl_minutes: Option<u32>,
    /// One join only (default); `false` lets any number of workers join until it expires
    /// (an autoscaled pool's instance template).
    #[serde(default = "default_true")]
    pub one_time: bool,
}

fn default_true() -> bool {
    true
}

/// `POST /v1/nodes/bootstrap-tokens` answer: the token, shown this once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NodeBootstrapCreated {
    /// Id.
    pub id: i64,
    /// The bootstrap token (`berth_boot_…`), for `berth worker --bootstrap-token`.
    pub token: String,
    /// Whether it joins one worker only.
    pub one_time: bool,
    /// Refused after this.
    pub expires_at: DateTime<Utc>,
}

/// `POST /v1/nodes/join` (with a bootstrap token as the bearer).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeJoin {
    /// The node's name (letters, digits, `_.-`).
    pub name: String,
}

/// `POST /v1/nodes/join` answer.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NodeJoined {
    /// The node's name.
    pub node: String,
    /// The node credential (`berth_node_…`): a bearer token for this node's routes only.
    /// Earlier credentials of the node are revoked.
    pub credential: String,
}

/// The value shown instead of a secret.
pub const MASK: &str = "********";

/// Whether an environment variable's name says it holds a secret (`AWS_SECRET_ACCESS_KEY`,
/// `GITHUB_TOKEN`, `DB_PASSWORD`, `API_KEY`, `BERTH_TOKEN` …): its value is masked in api
/// views.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "PRIVATE",
        "API_KEY",
        "APIKEY",
        "ACCESS_KEY",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|word| upper.contains(word))
        || upper.ends_with("_KEY")
        || upper == "KEY"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "db_password",
            "OPENAI_API_KEY",
            "HF_TOKEN",
            "SSH_PRIVATE_KEY",
            "WANDB_KEY",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "CUDA_VISIBLE_DEVICES", "KEYBOARD", "MONKEY"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn scope_and_role_names_round_trip() {
        for s in [TokenScope::ReadOnly, TokenScope::Submit, TokenScope::Admin] {
            assert_eq!(TokenScope::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.as_str())
            );
        }
        for r in [UserRole::Admin, UserRole::Operator, UserRole::User] {
            assert_eq!(UserRole::parse(r.as_str()), Some(r));
        }
    }
}
