//! Graceful shutdown: one signal (SIGTERM or SIGINT) that every part of the process
//! (api, scheduler, workers) waits on through its own future.

use std::future::Future;
use tokio::sync::watch;

/// A shutdown trigger shared by the parts of a process.
#[derive(Debug, Clone)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl Shutdown {
    /// A trigger that has not fired.
    pub fn new() -> Shutdown {
        let (tx, _rx) = watch::channel(false);
        Shutdown { tx }
    }

    /// A trigger that fires on SIGTERM or SIGINT (Ctrl-C), besides [`Shutdown::trigger`].
    /// A second signal ends the process at once (status 130).
    pub fn on_signals() -> Shutdown {
        let shutdown = Shutdown::new();
        let trigger = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutdown signal received");
            trigger.trigger();
            wait_for_signal().await;
            eprintln!("second signal: exiting now");
            std::process::exit(130);
        });
        shutdown
    }

    /// Fires the trigger: every [`Shutdown::wait`] future resolves.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// Whether the trigger has fired.
    pub fn is_triggered(&self) -> bool {
        *self.tx.borrow()
    }

    /// A future that resolves once the trigger fires.
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.tx.subscribe();
        async move {
            let _ = rx.wait_for(|fired| *fired).await;
        }
    }
}

/// Resolves on the first SIGTERM or SIGINT.
pub async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_resolves_after_trigger() {
        let shutdown = Shutdown::new();
        let waiting = tokio::spawn(shutdown.wait());
        assert!(!shutdown.is_triggered());
        shutdown.trigger();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        // A future made after the trigger resolves at once.
        shutdown.wait().await;
    }
}
