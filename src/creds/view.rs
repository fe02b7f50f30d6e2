//! Read-only views of the credential store for `creds list` and `doctor`: keys without their
//! text, and expiry warnings.

use chrono::{DateTime, NaiveDate, Utc};

use super::env_vars::key_var;
use super::model::Strategy;
use super::store::Store;

/// Where a key stands against its expiry date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No date recorded.
    Never,
    /// More than the warning window away; days until the last valid day.
    Later(i64),
    /// Within the warning window; days left (0 = last valid day is today).
    Soon(i64),
    /// Past its last day, by this many days (≥ 1).
    Expired(i64),
}

/// Days ahead `creds list` and `doctor` warn about an expiry (issue 7).
pub const EXPIRY_WARNING_DAYS: i64 = 14;

/// One key as `creds list` shows it: no key text, at most a 4-character hint.
#[derive(Debug, Clone)]
pub struct KeyView {
    pub provider: String,
    pub env_var: Option<String>,
    pub strategy: Strategy,
    pub label: String,
    /// At most 4 leading characters (see [`ApiKey::hint`]).
    pub hint: String,
    /// The key the next launch without a session id gets.
    pub active: bool,
    pub usage_count: u64,
    pub last_used: Option<DateTime<Utc>>,
    pub expires: Option<NaiveDate>,
    pub expiry: Expiry,
}

/// A key that expires within the asked window, or has expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiryNotice {
    pub provider: String,
    pub label: String,
    pub expires: NaiveDate,
    /// Days until the last valid day; negative once expired.
    pub days_left: i64,
}

impl Store {
    /// The keys as last read, in provider then insertion order, filtered to `provider`.
    pub fn keys(&self, provider: Option<&str>) -> Vec<KeyView> {
        let today = Utc::now().date_naive();
        let mut out = Vec::new();
        for (name, p) in &self.data.providers {
            if provider.is_some_and(|want| want != name) {
                continue;
            }
            let active = p.active(today);
            for (i, k) in p.keys.iter().enumerate() {
                out.push(KeyView {
                    provider: name.clone(),
                    env_var: key_var(name),
                    strategy: p.strategy,
                    label: k.label.clone(),
                    hint: k.key.hint(),
                    active: active == Some(i),
                    usage_count: k.usage_count,
                    last_used: k.last_used,
                    expires: k.expires,
                    expiry: expiry_of(k.expires, today),
                });
            }
        }
        out
    }

    /// Keys whose last valid day is at most `within_days` days away, expired ones included
    /// (negative `days_left`), soonest first. `doctor` calls it with
    /// [`EXPIRY_WARNING_DAYS`].
    pub fn expiring_soon(&self, within_days: i64) -> Vec<ExpiryNotice> {
        let today = Utc::now().date_naive();
        let mut out: Vec<ExpiryNotice> = self
            .data
            .providers
            .iter()
            .flat_map(|(name, p)| p.keys.iter().map(move |k| (name, k)))
            .filter_map(|(name, k)| {
                let day = k.expires?;
                let days_left = (day - today).num_days();
                (days_left <= within_days).then(|| ExpiryNotice {
                    provider: name.clone(),
                    label: k.label.clone(),
                    expires: day,
                    days_left,
                })
            })
            .collect();
        out.sort_by_key(|n| n.days_left);
        out
    }
}

fn expiry_of(expires: Option<NaiveDate>, today: NaiveDate) -> Expiry {
    match expires {
        None => Expiry::Never,
        Some(day) => {
            let left = (day - today).num_days();
            if left < 0 {
                Expiry::Expired(-left)
            } else if left <= EXPIRY_WARNING_DAYS {
                Expiry::Soon(left)
            } else {
                Expiry::Later(left)
            }
        }
    }
}
