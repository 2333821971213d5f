//! The api's contract beyond the main job: authentication, idempotency, pagination.

use crate::cluster::{Options, TestCluster, SECRET};
use berth_core::auth::Role;
use berth_core::wire::{JobCreate, JobList};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_idempotency_and_pagination() {
    let c = TestCluster::start(Options {
        workers: 1,
        ..Default::default()
    })
    .await;
    let url = |p: &str| format!("{}{p}", c.url);

    // No token, a bad token, an expired token: 401 problems. Health needs none.
    let r = c.http.get(url("/v1/jobs")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["content-type"], "application/problem+json");
    // Each refusal says what is wrong and what to do, in words, never the JWT library's
    // names (`InvalidToken`, `Base64 error: …`).
    let wrong_key = berth_api::mint_token("another-secret", "alice", Role::Admin, 3600);
    let expired = berth_api::mint_token(SECRET, "alice", Role::Admin, -3600);
    for (token, says) in [
        ("not.a.jwt".to_string(), "not a token Berth issued"),
        (
            "eyJhbGciOiJIUzI1NiJ9.e30.0".to_string(),
            "not a token Berth issued",
        ),
        (wrong_key, "signature does not verify"),
        (expired, "has expired: mint a new one"),
    ] {
        let r = c
            .http
            .get(url("/v1/jobs"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        let p: serde_json::Value = r.json().await.unwrap();
        let detail = p["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(says), "{token}: {p}");
        for library in [
            "InvalidToken",
            "Base64",
            "ExpiredSignature",
            "InvalidSignature",
        ] {
            assert!(!detail.contains(library), "{token}: {p}");
        }
    }
    assert_eq!(
        c.http.get(url("/healthz")).send().await.unwrap().status(),
        200
    );
    let doc: serde_json::Value = c
        .http
        .get(url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["info"]["title"], "Berth");
    // A node token cannot submit jobs.
    let node = berth_api::mint_token(SECRET, "node:*", Role::Node, 3600);
    let r = c
        .http
        .post(url("/v1/jobs"))
        .bearer_auth(node)
        .json(&serde_json::json!({"script": "#!/bin/sh\n"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // Idempotency: same key and body → same job; same key, other body → 409.
    let body = JobCreate {
        script: Some("#!/bin/bash\n#SBATCH --hold\ntrue\n".into()),
        ..Default::default()
    };
    let post = |key: &'static str, body: &JobCreate| {
        c.http
            .post(url("/v1/jobs"))
            .bearer_auth(&c.token)
            .header("Idempotency-Key", key)
            .json(body)
            .send()
    };
    let r1 = post("k1", &body).await.unwrap();
    assert_eq!(r1.status(), 201);
    let id1: serde_json::Value = r1.json().await.unwrap();
    let r2 = post("k1", &body).await.unwrap();
    assert_eq!(r2.status(), 200);
    let id2: serde_json::Value = r2.json().await.unwrap();
    assert_eq!(id1, id2);
    let other = JobCreate {
        script: Some("#!/bin/bash\n#SBATCH --hold\nfalse\n".into()),
        ..Default::default()
    };
    let r3 = post("k1", &other).await.unwrap();
    assert_eq!(r3.status(), 409);
    let held: berth_core::wire::Job = c.get(&format!("/v1/jobs/{}", id1["id"])).await;
    assert_eq!(held.reason.as_deref(), Some("JobHeldUser"));

    // Bad JSON is a 400 problem, not a crash.
    let r = c
        .http
        .post(url("/v1/jobs"))
        .bearer_auth(&c.token)
        .header("content-type", "application/json")
        .body("{\"script\": 3}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    // --time: absent takes the partition's default (1 hour for `gpu`); UNLIMITED its
    // maximum, which `gpu` leaves unlimited.
    let default = c.submit("#!/bin/bash\ntrue\n", &["--hold"]).await;
    let unlimited = c
        .submit("#!/bin/bash\ntrue\n", &["--hold", "--time=UNLIMITED"])
        .await;
    assert_eq!(c.job(default).await.time_limit, Some(3600));
    assert_eq!(c.job(unlimited).await.time_limit, None);
    for id in [default, unlimited] {
        c.http
            .post(url(&format!("/v1/jobs/{id}/cancel")))
            .bearer_auth(&c.token)
            .send()
            .await
            .unwrap();
    }

    // Pagination walks every job once.
    for _ in 0..4 {
        c.submit("#!/bin/bash\ntrue\n", &["--hold"]).await;
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page: JobList = c.get(&format!("/v1/jobs?limit=2{cursor}")).await;
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|j| j.id));
        match page.next_cursor {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7);
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    let pending: JobList = c.get("/v1/jobs?state=PD&limit=100").await;
    assert_eq!(pending.items.len(), 5);
    let r = c
        .http
        .get(url("/v1/jobs?state=BOGUS"))
        .bearer_auth(&c.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let p: berth_core::wire::Problem = r.json().await.unwrap();
    assert_eq!(p.field.as_deref(), Some("state"));
}
