//! HTTPS: the api serves TLS with a certificate from a private CA; the workers, the CLI
//! and clients verify it with a custom CA file, and refuse it without one.

use crate::cluster::{berth_bin, Options, TestCluster, TEST_API_CONFIG};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_serves_https_that_workers_and_the_cli_verify_with_a_custom_ca() {
    let dir = std::env::temp_dir().join(format!("berth-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A private CA and a server certificate for 127.0.0.1 it signs.
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let (ca_file, cert_file, key_file) =
        (dir.join("ca.pem"), dir.join("api.crt"), dir.join("api.key"));
    std::fs::write(&ca_file, ca.pem()).unwrap();
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();

    let config = format!(
        "{TEST_API_CONFIG}tls_cert = {:?}\ntls_key = {:?}\n",
        cert_file.to_str().unwrap(),
        key_file.to_str().unwrap()
    );
    // The workers reach the api through TLS (TestCluster waits for them to register).
    let c = TestCluster::start_custom(
        Options {
            workers: 1,
            ..Default::default()
        },
        &config,
        Some(&ca_file),
        &[],
    )
    .await;
    assert!(c.url.starts_with("https://"));
    let id = c.submit("#!/bin/bash\necho over tls\n", &[]).await;
    let job = c.wait_ended(id, 30).await;
    assert_eq!(job.exit_code, Some(0));
    assert_eq!(c.output(id).await, "over tls\n");
    // The audit log still knows where calls came from.
    let audit: serde_json::Value = c.get("/v1/audit").await;
    assert!(audit["items"][0]["remote_addr"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));

    // Without the CA, clients refuse the certificate; plain HTTP gets no answer.
    let plain = reqwest::Client::new();
    assert!(plain
        .get(format!("{}/healthz", c.url))
        .send()
        .await
        .is_err());
    let http_url = c.url.replacen("https://", "http://", 1);
    assert!(plain
        .get(format!("{http_url}/healthz"))
        .send()
        .await
        .is_err());

    // The CLI verifies with --ca-file (or BERTH_CA_FILE), and refuses without it.
    let queue = |ca: Option<&std::path::Path>| {
        let mut command = std::process::Command::new(berth_bin());
        command
            .args(["queue", "--all"])
            .env("BERTH_URL", &c.url)
            .env("BERTH_TOKEN", &c.token)
            .env("HOME", &c.dir)
            .env_remove("BERTH_CA_FILE");
        if let Some(ca) = ca {
            command.args(["--ca-file", ca.to_str().unwrap()]);
        }
        command.output().unwrap()
    };
    let out = queue(Some(&ca_file));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&id.to_string()));
    let out = queue(None);
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
