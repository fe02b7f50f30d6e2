//! Credentials and rate limits: which key an attempt used, and moving a provider past a
//! key whose attempt failed after a rate-limit line (docs/design.md).

use chrono::Utc;

use crate::domain::RunEvent;
use crate::lead::{Driver, Update};

impl Driver {
    /// True when one of `lines` is a rate-limit line of `provider` (its own patterns). Only
    /// a credential store can rotate keys: without one, lines are not scanned here (the
    /// `rate-limited` mark reads them in `lines`).
    pub(in crate::lead) fn saw_rate_limit(&self, provider: &str, lines: &[String]) -> bool {
        let patterns = self.rate_limits.get(provider);
        self.creds.is_some()
            && lines
                .iter()
                .any(|l| crate::creds::rate_limit_matches(&crate::launch::strip_ansi(l), patterns))
    }

    /// `worker`'s attempt failed after a rate-limit line or on a usage limit: move its
    /// provider past the key it used, and say so in the event log by label. True when the
    /// provider's next attempt takes another key.
    pub(in crate::lead) fn rotate_credential(
        &mut self,
        worker: &str,
        attempt: u32,
        emit: &mut impl FnMut(Update),
    ) -> bool {
        let Some(provider) = self.state.worker(worker).map(|w| w.provider.clone()) else {
            return false;
        };
        let Some(store) = self.creds.as_mut() else {
            return false;
        };
        let used = self.credential_labels.get(worker).cloned();
        let (message, moved) = match store.on_rate_limit(&provider, used.as_deref(), None) {
            Ok(Some(next)) if used.as_deref() != Some(next.as_str()) => (
                format!(
                    "rate limited on credential `{}`; {provider} moves to `{next}`",
                    used.as_deref().unwrap_or("?")
                ),
                true,
            ),
            Ok(_) => return false,
            Err(e) => (
                format!("rate limited, but the credential store could not rotate: {e}"),
                false,
            ),
        };
        let event = RunEvent {
            ts: Utc::now(),
            kind: crate::domain::EventKind::CredentialRotated,
            worker: Some(worker.to_string()),
            attempt: Some(attempt),
            source: "engine".into(),
            message,
        };
        self.record_event(event, emit);
        moved
    }
}
