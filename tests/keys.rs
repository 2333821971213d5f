//! Berth's own tokens signed with a key pair: the api verifies EdDSA tokens with the public
//! key, `berth token mint` signs with the private key, and the key picks the algorithm.

use crate::cluster::{berth_bin, Options, TestCluster, TEST_API_CONFIG};
use berth_core::auth::Role;
use reqwest::Method;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eddsa_tokens_verify_with_the_configured_public_key() {
    let dir = std::env::temp_dir().join(format!("berth-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let (private, public) = (dir.join("jwt.key"), dir.join("jwt.pub"));
    std::fs::write(&private, key.serialize_pem()).unwrap();
    std::fs::write(&public, key.public_key_pem()).unwrap();
    let c = TestCluster::start_with_api_config(
        Options {
            workers: 1,
            ..Default::default()
        },
        &format!(
            "{TEST_API_CONFIG}jwt_public_key = {:?}\n",
            public.to_str().unwrap()
        ),
    )
    .await;

    let mint = |key_file: &std::path::Path| {
        let out = std::process::Command::new(berth_bin())
            .args(["token", "mint", "--user", "erika", "--role", "admin"])
            .env("BERTH_JWT_PRIVATE_KEY", key_file)
            .env_remove("BERTH_JWT_SECRET")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let token = mint(&private);
    let header = jsonwebtoken::decode_header(&token).unwrap();
    assert_eq!(header.alg, jsonwebtoken::Algorithm::EdDSA);
    let (s, _) = c.call(Method::GET, "/v1/users", Some(&token), None).await;
    assert_eq!(s, 200, "an admin's EdDSA token");

    // Another key pair's token: refused.
    let other = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
    let other_file = dir.join("other.key");
    std::fs::write(&other_file, other.serialize_pem()).unwrap();
    let (s, p) = c
        .call(Method::GET, "/v1/users", Some(&mint(&other_file)), None)
        .await;
    assert_eq!(s, 401, "{p}");
    // The public key used as an HMAC secret (algorithm confusion): refused.
    let confused = berth_api::mint_token(&key.public_key_pem(), "erika", Role::Admin, 600);
    let (s, _) = c
        .call(Method::GET, "/v1/users", Some(&confused), None)
        .await;
    assert_eq!(s, 401);
    // With the secret configured too, HS256 tokens still work.
    let (s, _) = c.call(Method::GET, "/v1/users", Some(&c.token), None).await;
    assert_eq!(s, 200);
    let _ = std::fs::remove_dir_all(&dir);
}
