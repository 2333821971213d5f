//! The OpenAPI 3.1 document, derived by utoipa from the handlers and wire types. It is
//! checked in at `openapi/berth.json`; a test fails when the two differ
//! (`BERTH_UPDATE_OPENAPI=1` rewrites the file).

use crate::{fairshare, job_control, routes};
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
                    .bearer_format("JWT")
                    .build(),
            ),
        );
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
        routes::job_create,
        routes::job_list,
        routes::job_get,
        routes::job_cancel,
        job_control::job_hold,
        job_control::job_release,
        job_control::job_update,
        job_control::job_task_cancel,
        fairshare::job_priority,
        fairshare::fairshare_list,
        fairshare::qos_list,
        fairshare::qos_get,
        fairshare::qos_put,
        routes::job_output,
        routes::job_output_upload,
        routes::node_list,
        routes::node_register,
        routes::node_sync,
        routes::partition_list,
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "jobs", description = "Submit, list, show, cancel jobs and read their output"),
        (name = "nodes", description = "Nodes, and the routes their workers use"),
        (name = "partitions", description = "Partitions"),
        (name = "fairshare", description = "Fairshare usage and factors (sshare)"),
        (name = "qos", description = "Quality of service: priority, usage factor, limits, preemption"),
        (name = "health", description = "Liveness and readiness"),
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
