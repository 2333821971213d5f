//! The OpenAPI 3.1 document, derived by utoipa from the handlers and wire types. It is
//! checked in at `openapi/berth.json`; a test fails when the two differ
//! (`BERTH_UPDATE_OPENAPI=1` rewrites the file).

use crate::usage_report;
use crate::{
    accounting, audit, events, fairshare, identity, job_control, job_signal, keepalive,
    node_credentials, nodes, oidc, partitions, pools, requeue, reservations, routes, stats, steps,
    tokens, webhooks,
};
use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT or berth_ API token")
                    .build(),
            ),
        );
    }
}

/// Error answers, made true of every operation in one place: they are RFC 9457 problem
/// documents (`application/problem+json`, whatever the handlers' annotations default to);
/// an operation with parameters answers 400 when one does not parse, one with a body 413
/// when it is too large; and every operation may answer 429 (rate limits) and 503
/// (database unavailable, request timeout).
struct ProblemResponses;

impl Modify for ProblemResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        let problem = |description: &str| {
            RefOr::T(
                ResponseBuilder::new()
                    .description(description)
                    .content(
                        crate::error::PROBLEM_JSON,
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("Problem")))
                            .build(),
                    )
                    .build(),
            )
        };
        for item in openapi.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                for response in op.responses.responses.values_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    let is_problem = response.content.get("application/json").is_some_and(|c| {
                        matches!(&c.schema, Some(RefOr::Ref(r)) if r.ref_location.ends_with("/Problem"))
                    });
                    if is_problem {
                        if let Some(content) = response.content.shift_remove("application/json") {
                            response
                                .content
                                .insert(crate::error::PROBLEM_JSON.to_string(), content);
                        }
                    }
                }
                let responses = &mut op.responses.responses;
                if op.parameters.as_ref().is_some_and(|p| !p.is_empty()) {
                    responses
                        .entry("400".into())
                        .or_insert_with(|| problem("A parameter that does not parse, naming it"));
                }
                if op.request_body.is_some() {
                    responses
                        .entry("413".into())
                        .or_insert_with(|| problem("The body is larger than the api accepts"));
                }
                responses.entry("429".into()).or_insert_with(|| {
                    problem("Too many requests from this user (or, without valid credentials, this address); see Retry-After")
                });
                responses.entry("503".into()).or_insert_with(|| {
                    problem("The database is unavailable, or the request timed out")
                });
            }
        }
    }
}

/// The api's document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Berth",
        description = "REST api of Berth, a Slurm-compatible GPU cluster orchestrator. Errors are RFC 9457 problem documents.",
        license(name = "Apache-2.0")
    ),
    paths(
        routes::healthz,
        routes::readyz,
        routes::cluster_get,
        routes::job_create,
        routes::job_will_run,
        routes::job_list,
        routes::queue_list,
        routes::job_get,
        routes::job_cancel,
        job_control::job_hold,
        job_control::job_release,
        job_control::job_top,
        job_control::job_update,
        job_control::job_task_cancel,
        job_control::job_cancel_batch,
        job_control::job_hold_batch,
        job_control::job_release_batch,
        job_signal::job_signal,
        fairshare::job_priority,
        fairshare::fairshare_list,
        usage_report::usage_get,
        usage_report::usage_cluster_get,
        fairshare::qos_list,
        fairshare::qos_get,
        fairshare::qos_put,
        requeue::job_requeue,
        keepalive::job_keepalive,
        stats::job_stats,
        stats::job_gpu_samples,
        routes::job_script,
        oidc::oidc_issuer_list,
        usage_report::usage_cluster_timeline,
        routes::job_output,
        routes::job_output_upload,
        steps::step_create,
        steps::step_list,
        steps::step_get,
        steps::step_cancel,
        steps::step_input,
        steps::step_output,
        steps::step_output_upload,
        routes::node_list,
        routes::node_register,
        routes::node_sync,
        nodes::node_get,
        nodes::node_update,
        nodes::node_drain,
        nodes::node_resume,
        pools::node_power,
        pools::pool_list,
        pools::pool_get,
        pools::pool_put,
        pools::pool_delete,
        routes::partition_list,
        partitions::partition_get,
        partitions::partition_put,
        partitions::partition_delete,
        reservations::reservation_list,
        reservations::reservation_create,
        reservations::reservation_get,
        reservations::reservation_update,
        reservations::reservation_delete,
        identity::user_create,
        identity::user_list,
        identity::user_get,
        identity::whoami,
        identity::user_delete,
        identity::account_create,
        identity::account_list,
        identity::account_update,
        identity::account_delete,
        identity::membership_set,
        identity::membership_delete,
        tokens::token_create,
        tokens::token_list,
        tokens::token_revoke,
        audit::audit_list,
        accounting::accounting_job_list,
        node_credentials::node_bootstrap_create,
        node_credentials::node_join,
        node_credentials::node_rekey,
        events::event_list,
        webhooks::webhook_create,
        webhooks::webhook_list,
        webhooks::webhook_get,
        webhooks::webhook_update,
        webhooks::webhook_delete,
        webhooks::webhook_test,
        webhooks::webhook_delivery_list,
        webhooks::webhook_redeliver,
    ),
    modifiers(&BearerAuth, &ProblemResponses),
    tags(
        (name = "jobs", description = "Submit, list, show, cancel jobs and read their output"),
        (name = "nodes", description = "Nodes, and the routes their workers use"),
        (name = "pools", description = "Cloud node pools: nodes launched and terminated with the queue"),
        (name = "partitions", description = "Partitions: node sets with time limits, access and priority tiers"),
        (name = "reservations", description = "Advance reservations: nodes or GPUs held for some users' jobs in a window"),
        (name = "fairshare", description = "Fairshare usage and factors (sshare)"),
        (name = "qos", description = "Quality of service: priority, usage factor, limits, preemption"),
        (name = "health", description = "Liveness, readiness and what this cluster is"),
        (name = "users", description = "Users and their roles"),
        (name = "accounts", description = "The account tree and its members"),
        (name = "tokens", description = "API tokens for CI pipelines and scripts"),
        (name = "auth", description = "Logging in: the OIDC issuers the console logs in through"),
        (name = "audit", description = "The audit log of state-changing calls"),
        (name = "accounting", description = "Job accounting records, one per job run (sacct)"),
        (name = "usage", description = "Usage reports (sreport): TRES time by account, user, partition, QOS, GPU model; cluster utilisation"),
        (name = "events", description = "The event stream (CloudEvents; Server-Sent Events or pages)"),
        (name = "webhooks", description = "Webhooks: events POSTed to your endpoint, signed (Standard Webhooks)"),
    )
)]
pub struct ApiDoc;

/// The document as pretty JSON with a trailing newline, as checked in.
pub fn document_json() -> String {
    let mut s = ApiDoc::openapi()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    s.push('\n');
    s
}

/// `GET /openapi.json`.
pub async fn serve_document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in document matches the code. Set `BERTH_UPDATE_OPENAPI=1` to rewrite it.
    #[test]
    fn checked_in_document_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi/berth.json");
        let current = document_json();
        if std::env::var_os("BERTH_UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &current).unwrap();
            return;
        }
        let checked_in = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            checked_in == current,
            "openapi/berth.json is stale: run `BERTH_UPDATE_OPENAPI=1 cargo test -p berth-api openapi`"
        );
    }

    /// No token, key or password appears in the document's examples or descriptions.
    #[test]
    fn document_holds_no_secret() {
        let doc = document_json();
        for needle in ["eyJ", "BEGIN PRIVATE KEY", "password="] {
            assert!(!doc.contains(needle), "the document contains {needle:?}");
        }
        let token_like = doc
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| w.starts_with("berth_") && w.len() > 20);
        assert!(
            !token_like,
            "the document contains an API, bootstrap or node token"
        );
    }

    #[test]
    fn every_operation_has_one_tag_and_a_resource_verb_id() {
        let doc = ApiDoc::openapi();
        for (path, item) in doc.paths.paths.iter() {
            for op in [&item.get, &item.post, &item.put, &item.delete, &item.patch]
                .into_iter()
                .flatten()
            {
                let id = op.operation_id.as_deref().unwrap_or_default();
                assert!(
                    id.contains('_'),
                    "{path}: operation id {id:?} is not <resource>_<verb>"
                );
                assert_eq!(op.tags.as_ref().map(Vec::len), Some(1), "{path}: one tag");
                assert!(op.summary.is_some(), "{path}: a summary");
            }
        }
    }
}
