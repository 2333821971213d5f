//! slurmrestd's published document (`tests/data/slurmrestd-v0.0.44.json`, Slurm
//! 25.11.7's `v0.0.44` data parser), read once: which operations it has, and for each the
//! payload an answer must carry even when it failed, so that every answer under
//! `/slurm/` and `/slurmdb/`, served or not, is valid against the operation's documented
//! response schema (generated clients parse error answers against it too).

use axum::http::Method;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// The document, as published (OpenAPI 3.0.3).
const DOCUMENT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/slurmrestd-v0.0.44.json"
));

/// One operation of the document.
struct Operation {
    method: Method,
    /// The path's segments; `None` for a parameter (`{job_id}`).
    segments: Vec<Option<String>>,
    /// The required fields of its `default` response other than `meta`, `errors` and
    /// `warnings`, each with the smallest value its schema allows (empty list, empty
    /// object, 0, "", false, an enum's first value).
    payload: Map<String, Value>,
}

fn operations() -> &'static [Operation] {
    static OPERATIONS: OnceLock<Vec<Operation>> = OnceLock::new();
    OPERATIONS.get_or_init(|| {
        let document: Value = serde_json::from_str(DOCUMENT).unwrap_or_default();
        let schemas = &document["components"]["schemas"];
        let mut operations = Vec::new();
        for (path, item) in document["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                let Ok(method) = method.to_uppercase().parse::<Method>() else {
                    continue;
                };
                let schema =
                    &operation["responses"]["default"]["content"]["application/json"]["schema"];
                let payload = match smallest(schema, schemas, 0) {
                    Value::Object(mut map) => {
                        for envelope in ["meta", "errors", "warnings"] {
                            map.remove(envelope);
                        }
                        map
                    }
                    _ => Map::new(),
                };
                operations.push(Operation {
                    method,
                    segments: segments(path)
                        .map(|s| (!s.starts_with('{')).then(|| s.to_string()))
                        .collect(),
                    payload,
                });
            }
        }
        operations
    })
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// The smallest instance of `schema` (its `$ref`s resolved in `schemas`): an object
/// with only its required properties, each the smallest of its own schema.
fn smallest(schema: &Value, schemas: &Value, depth: usize) -> Value {
    if depth > 32 {
        return Value::Null;
    }
    if let Some(name) = schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
    {
        return smallest(&schemas[name], schemas, depth + 1);
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match schema["type"].as_str() {
        Some("array") => Value::Array(Vec::new()),
        Some("string") => Value::String(String::new()),
        Some("integer" | "number") => Value::from(0),
        Some("boolean") => Value::Bool(false),
        _ => {
            let mut map = Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                if let Some(name) = name.as_str() {
                    map.insert(
                        name.to_string(),
                        smallest(&schema["properties"][name], schemas, depth + 1),
                    );
                }
            }
            Value::Object(map)
        }
    }
}

/// The document's operation for `method path` (with or without a trailing slash): the
/// one whose literal segments match most, so that `job/submit` is not `job/{job_id}`.
fn find(method: &Method, path: &str) -> Option<&'static Operation> {
    let asked: Vec<&str> = segments(path).collect();
    operations()
        .iter()
        .filter(|op| op.method == *method && op.segments.len() == asked.len())
        .filter(|op| {
            op.segments
                .iter()
                .zip(&asked)
                .all(|(s, a)| s.as_deref().is_none_or(|s| s == *a))
        })
        .max_by_key(|op| op.segments.iter().filter(|s| s.is_some()).count())
}

/// Whether the document has an operation `method path`.
pub(crate) fn documented(method: &Method, path: &str) -> bool {
    find(method, path).is_some()
}

/// The fields an answer on `method path` must carry even when it failed: its operation's
/// required payload, empty (slurmrestd does the same); none for a path the document does
/// not have.
pub(crate) fn empty_payload(method: &Method, path: &str) -> Map<String, Value> {
    find(method, path)
        .map(|op| op.payload.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_operation_of_the_document_is_read() {
        // 41 paths, 66 operations in Slurm 25.11.7's v0.0.44 document.
        assert_eq!(operations().len(), 66);
        assert!(documented(&Method::GET, "/slurm/v0.0.44/licenses"));
        assert!(documented(&Method::GET, "/slurm/v0.0.44/licenses/"));
        assert!(!documented(&Method::PUT, "/slurm/v0.0.44/licenses/"));
        assert!(!documented(&Method::GET, "/slurm/v0.0.44/no-such-thing/"));
    }

    #[test]
    fn a_failed_answer_carries_the_operations_required_fields() {
        let licenses = empty_payload(&Method::GET, "/slurm/v0.0.44/licenses/");
        assert_eq!(
            Value::Object(licenses),
            json!({"licenses": [], "last_update": {}})
        );
        // Parameters match any segment; the literal path wins over a parameter.
        let job = empty_payload(&Method::DELETE, "/slurm/v0.0.44/job/12_3");
        assert_eq!(Value::Object(job), json!({"status": []}));
        let submit = empty_payload(&Method::POST, "/slurm/v0.0.44/job/submit");
        assert!(submit.is_empty(), "{submit:?}");
        let jobs = empty_payload(&Method::GET, "/slurm/v0.0.44/jobs/");
        assert_eq!(
            Value::Object(jobs),
            json!({"jobs": [], "last_backfill": {}, "last_update": {}})
        );
    }
}
