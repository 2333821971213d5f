//! External OpenID Connect issuers: tokens signed with the keys of a JWKS that this test
//! serves itself (Ed25519 keys), mapped to Berth users by a claim, with a key rotation.

use crate::cluster::{Options, TestCluster, TEST_API_CONFIG};
use berth_core::auth::Role;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Two Ed25519 test keys: PKCS#8 DER (hex) and the public key (base64url), made with
/// `openssl genpkey -algorithm ed25519`.
const K1_DER: &str = "302e020100300506032b6570042204204b0bd5c7819f145eb65c50a1a8c7ef70aaccc1bce0f8602b1bb0487cbead4a1b";
const K1_X: &str = "5Ceq1rhSr08C459FAeeuq7oBhsgN-DhMTwXCTDVV8FU";
const K2_DER: &str = "302e020100300506032b657004220420348ffd2181597b3c65ff33e41cdd8467d1812655b86063779c891daac872c8b1";
const K2_X: &str = "QpQPE4rFh83fjNEidgF69J9mKHKP0E9Jjb50K9gzzFM";
const ISSUER: &str = "https://idp.test/realms/ml";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn jwk(kid: &str, x: &str) -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA", "use": "sig"})
}

fn sign(der: &str, kid: &str, claims: Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&unhex(der))).unwrap()
}

fn claims(user: &str, aud: &str, exp_offset: i64) -> Value {
    let now = chrono::Utc::now().timestamp();
    json!({"iss": ISSUER, "aud": aud, "sub": format!("id-{user}"),
           "preferred_username": user, "iat": now, "exp": now + exp_offset})
}

/// A JWKS endpoint: answers every request with the current key set, counting fetches.
async fn serve_jwks(keys: Arc<Mutex<Value>>, fetches: Arc<AtomicUsize>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let body = keys.lock().unwrap().to_string();
            fetches.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_tokens_verify_against_the_issuers_jwks_through_a_key_rotation() {
    let keys = Arc::new(Mutex::new(json!({"keys": [jwk("k1", K1_X)]})));
    let fetches = Arc::new(AtomicUsize::new(0));
    let jwks = serve_jwks(keys.clone(), fetches.clone()).await;
    let config = format!(
        "{TEST_API_CONFIG}[[api.oidc]]\nissuer = \"{ISSUER}\"\njwks_uri = \"{jwks}\"\naudience = \"berth\"\nusername_claim = \"preferred_username\"\nmin_refetch_seconds = 0\n"
    );
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            ..Default::default()
        },
        &config,
    )
    .await;
    // oscar is an operator in Berth's users; ivy has no row (a plain user).
    let (s, _) = c
        .call(
            Method::POST,
            "/v1/users",
            Some(&c.token),
            Some(json!({"name": "oscar", "role": "operator"})),
        )
        .await;
    assert_eq!(s, 201);
    let get = |path: &'static str, token: String| {
        let c = &c;
        async move { c.call(Method::GET, path, Some(&token), None).await }
    };

    let oscar = sign(K1_DER, "k1", claims("oscar", "berth", 300));
    assert_eq!(
        get("/v1/users", oscar.clone()).await.0,
        200,
        "operator role from users"
    );
    let ivy = sign(K1_DER, "k1", claims("ivy", "berth", 300));
    assert_eq!(get("/v1/jobs", ivy.clone()).await.0, 200);
    assert_eq!(get("/v1/users", ivy.clone()).await.0, 403, "a plain user");
    // Jobs submitted with the external token belong to the mapped user.
    let (s, job) = c
        .call(
            Method::POST,
            "/v1/jobs",
            Some(&ivy),
            Some(json!({"script": "#!/bin/bash\n#SBATCH --hold\ntrue\n"})),
        )
        .await;
    assert_eq!(s, 201);
    let (_, view) = c
        .call(
            Method::GET,
            &format!("/v1/jobs/{}", job["id"]),
            Some(&c.token),
            None,
        )
        .await;
    assert_eq!(view["user"], "ivy");
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "the JWKS is cached");

    // Refused: wrong audience, expired, a key that is not the kid's, no user claim, a
    // symmetric algorithm.
    for (why, token) in [
        ("audience", sign(K1_DER, "k1", claims("ivy", "other", 300))),
        ("expired", sign(K1_DER, "k1", claims("ivy", "berth", -300))),
        ("signature", sign(K2_DER, "k1", claims("ivy", "berth", 300))),
        ("claim", {
            let mut cl = claims("ivy", "berth", 300);
            cl.as_object_mut().unwrap().remove("preferred_username");
            sign(K1_DER, "k1", cl)
        }),
        ("algorithm", {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".into());
            jsonwebtoken::encode(
                &header,
                &claims("ivy", "berth", 300),
                &EncodingKey::from_secret(K1_X.as_bytes()),
            )
            .unwrap()
        }),
    ] {
        let (s, p) = get("/v1/jobs", token).await;
        assert_eq!(s, 401, "{why}: {p}");
    }

    // Rotation: the issuer now signs with k2 and serves only k2. The unknown kid makes
    // the api fetch the JWKS again; k1 is no longer accepted.
    *keys.lock().unwrap() = json!({"keys": [jwk("k2", K2_X)]});
    let rotated = sign(K2_DER, "k2", claims("ivy", "berth", 300));
    assert_eq!(get("/v1/jobs", rotated).await.0, 200);
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    let (s, _) = get("/v1/jobs", sign(K1_DER, "k1", claims("ivy", "berth", 300))).await;
    assert_eq!(s, 401, "the rotated-out key");
    // Berth's own tokens keep working beside the issuer's.
    assert_eq!(get("/v1/jobs", c.token_for("ivy", Role::User)).await.0, 200);
}
