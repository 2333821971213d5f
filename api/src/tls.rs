//! HTTPS: when the api is given a certificate chain and a private key (PEM files), it
//! serves TLS with rustls (TLS 1.2 and 1.3, the ring provider), HTTP/1.1 and HTTP/2, each
//! connection's peer address recorded for the audit log and the rate limits, and a
//! graceful shutdown that lets requests in flight finish (up to 10 s).

use crate::ServeError;
use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

/// The api's certificate chain and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM: the server certificate first, then its intermediates.
    pub cert: PathBuf,
    /// PEM: the private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Errors reading the certificate or key.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or parsed.
    #[error("reading {path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the certificate and key.
    #[error("the TLS certificate and key do not make a server configuration")]
    Config(#[source] rustls::Error),
}

/// A rustls server configuration from `files`.
///
/// # Errors
/// [`TlsError`] naming the file that cannot be read, or rustls' refusal.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let file_error = |path: &PathBuf, reason: String| TlsError::File {
        path: path.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| file_error(&files.cert, e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(&files.cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(file_error(&files.cert, "no certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| file_error(&files.key, e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(TlsError::Config)?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `app` over TLS on `listener` until `shutdown` resolves.
///
/// # Errors
/// [`ServeError::Io`] when the listener fails for good.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = Builder::new(TokioExecutor::new());
    tokio::pin!(shutdown);
    loop {
        let (tcp, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        // As `serve` does: a streamed answer's last piece is not held back by Nagle.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(peer = %addr, error = %e, "TCP_NODELAY could not be set");
        }
        tokio::spawn(async move {
            let stream = match acceptor.accept(tcp).await {
                Ok(stream) => stream,
                Err(e) => {
                    tracing::debug!(peer = %addr, error = %e, "TLS handshake failed");
                    return;
                }
            };
            let service = app.map_request(move |mut request: axum::extract::Request| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(addr));
                request
            });
            let service = TowerToHyperService::new(service.map_request(
                |request: hyper::Request<hyper::body::Incoming>| request.map(axum::body::Body::new),
            ));
            let connection = builder
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .into_owned();
            if let Err(e) = watcher.watch(connection).await {
                tracing::debug!(peer = %addr, error = %e, "connection ended with an error");
            }
        });
    }
    if tokio::time::timeout(Duration::from_secs(10), graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after 10 s; closing them");
    }
    Ok(())
}
