//! The decrypted contents of the credential store and the pure rules over them: which key a
//! launch gets, how a rate limit moves a provider on, and what expires soon.
//!
//! Behaviour mirrors the OMG seed (`get_active_credential`, `on_rate_limit`,
//! `_fnv1a_hash`), with two fixes: a rate limit moves a pinned session too (the seed hashed
//! it back onto the same key), and an expired key is skipped.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::secret::ApiKey;

/// FNV-1a, 32 bits: offset basis 2166136261, prime 16777619, over the UTF-8 bytes
/// (the seed's `_fnv1a_hash`; parameters from the FNV reference by Fowler, Noll and Vo).
pub fn fnv1a_32(data: &str) -> u32 {
    data.bytes().fold(2_166_136_261u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(16_777_619)
    })
}

/// How a provider's keys are handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Each launch takes the next key; a launch with a session id is pinned to
    /// `fnv1a_32(session) + rate-limit shifts` modulo the key count.
    #[default]
    RoundRobin,
    /// Every launch takes the active key; a rate limit moves the provider to the next one.
    Failover,
    /// Every launch takes the active key; only `creds rotate` moves it.
    Manual,
}

impl Strategy {
    pub const NAMES: &'static str = "round-robin, failover, manual";
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::RoundRobin => "round-robin",
            Strategy::Failover => "failover",
            Strategy::Manual => "manual",
        })
    }
}

impl FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "round-robin" => Ok(Strategy::RoundRobin),
            "failover" => Ok(Strategy::Failover),
            "manual" => Ok(Strategy::Manual),
            other => Err(format!(
                "unknown strategy `{other}`; use one of {}",
                Strategy::NAMES
            )),
        }
    }
}

/// One stored key and its bookkeeping.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyRecord {
    pub label: String,
    pub key: ApiKey,
    pub added: DateTime<Utc>,
    /// Last day the key may be used (inclusive).
    #[serde(default)]
    pub expires: Option<NaiveDate>,
    #[serde(default)]
    pub usage_count: u64,
    #[serde(default)]
    pub last_used: Option<DateTime<Utc>>,
}

impl KeyRecord {
    /// Expired on `today` when its last day is before it.
    pub fn expired(&self, today: NaiveDate) -> bool {
        self.expires.is_some_and(|day| day < today)
    }
}

/// The keys of one provider and where its rotation stands.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProviderKeys {
    #[serde(default)]
    pub strategy: Strategy,
    /// Index of the active key (the next one for a launch without a session).
    #[serde(default)]
    pub cursor: usize,
    /// Rate limits seen so far; added to a session's hash so its pinned key moves too.
    #[serde(default)]
    pub pin_shift: u32,
    #[serde(default)]
    pub keys: Vec<KeyRecord>,
}

impl ProviderKeys {
    /// Index of the first key usable on `today` at or after `from`, wrapping around.
    fn usable_from(&self, from: usize, today: NaiveDate) -> Option<usize> {
        let n = self.keys.len();
        (0..n)
            .map(|step| (from + step) % n)
            .find(|&i| !self.keys[i].expired(today))
    }

    /// The key the next launch without a session gets (the "active" key of `creds list`).
    pub fn active(&self, today: NaiveDate) -> Option<usize> {
        if self.keys.is_empty() {
            return None;
        }
        self.usable_from(self.cursor % self.keys.len(), today)
    }

    /// The key a launch gets, without recording it. `None` when no key is usable.
    pub fn pick(&self, session: Option<&str>, today: NaiveDate) -> Option<usize> {
        match (self.strategy, session) {
            (Strategy::RoundRobin, Some(session)) => {
                let usable: Vec<usize> = (0..self.keys.len())
                    .filter(|&i| !self.keys[i].expired(today))
                    .collect();
                if usable.is_empty() {
                    return None;
                }
                let slot = (u64::from(fnv1a_32(session)) + u64::from(self.pin_shift))
                    % usable.len() as u64;
                Some(usable[slot as usize])
            }
            _ => self.active(today),
        }
    }

    /// Pick a key for a launch and record it: usage count, last use, and for round-robin
    /// without a session, the cursor moves past it.
    pub fn launch(&mut self, session: Option<&str>, now: DateTime<Utc>) -> Option<usize> {
        let index = self.pick(session, now.date_naive())?;
        let record = &mut self.keys[index];
        record.usage_count += 1;
        record.last_used = Some(now);
        if self.strategy == Strategy::RoundRobin && session.is_none() {
            self.cursor = (index + 1) % self.keys.len();
        }
        Some(index)
    }

    /// Move to the key after `from` (by label; the active key when `None` or unknown).
    /// Pinned sessions move by one as well. Returns the new active index.
    pub fn advance(&mut self, from: Option<&str>, today: NaiveDate) -> Option<usize> {
        if self.keys.is_empty() {
            return None;
        }
        let base = from
            .and_then(|label| self.keys.iter().position(|k| k.label == label))
            .or_else(|| self.active(today))
            .unwrap_or(self.cursor % self.keys.len());
        self.cursor = (base + 1) % self.keys.len();
        self.pin_shift = self.pin_shift.wrapping_add(1);
        self.active(today)
    }

    /// Remove the key labelled `label`, keeping the cursor on the same next key.
    /// Returns false when there is no such label.
    pub fn remove(&mut self, label: &str) -> bool {
        let Some(index) = self.keys.iter().position(|k| k.label == label) else {
            return false;
        };
        self.keys.remove(index);
        if index < self.cursor {
            self.cursor -= 1;
        }
        if self.cursor >= self.keys.len() {
            self.cursor = 0;
        }
        true
    }
}

/// Everything inside the sealed file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StoreData {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderKeys>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn record(label: &str, expires: Option<NaiveDate>) -> KeyRecord {
        KeyRecord {
            label: label.into(),
            key: ApiKey::new(&format!("sk-{label}-0123456789")).unwrap(),
            added: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            expires,
            usage_count: 0,
            last_used: None,
        }
    }

    fn provider(labels: &[&str]) -> ProviderKeys {
        ProviderKeys {
            keys: labels.iter().map(|l| record(l, None)).collect(),
            ..Default::default()
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
    }

    fn labels_of(p: &mut ProviderKeys, session: Option<&str>, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                let i = p.launch(session, now()).unwrap();
                p.keys[i].label.clone()
            })
            .collect()
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Vectors from the FNV reference test suite (fnv-1a, 32 bit).
        assert_eq!(fnv1a_32(""), 0x811c_9dc5);
        assert_eq!(fnv1a_32("a"), 0xe40c_292c);
        assert_eq!(fnv1a_32("foobar"), 0xbf9c_f968);
        assert_eq!(fnv1a_32("b"), 0xe70c_2de5);
    }

    #[test]
    fn round_robin_cycles_and_counts_usage() {
        let mut p = provider(&["a", "b", "c"]);
        assert_eq!(labels_of(&mut p, None, 4), ["a", "b", "c", "a"]);
        assert_eq!(p.keys[0].usage_count, 2);
        assert_eq!(p.keys[1].last_used, Some(now()));
    }

    #[test]
    fn session_is_pinned_by_fnv1a_modulo_key_count() {
        let mut p = provider(&["a", "b", "c"]);
        // fnv1a_32("foobar") = 0xbf9cf968 = 3214735720; 3214735720 % 3 = 1 → "b".
        assert_eq!(labels_of(&mut p, Some("foobar"), 3), ["b", "b", "b"]);
        // fnv1a_32("") = 0x811c9dc5 = 2166136261; 2166136261 % 3 = 1 → "b".
        assert_eq!(labels_of(&mut p, Some(""), 1), ["b"]);
        let mut two = provider(&["x", "y"]);
        // 0xe40c292c is even → "x"; 0xe70c2de5 is odd → "y".
        assert_eq!(labels_of(&mut two, Some("a"), 1), ["x"]);
        assert_eq!(labels_of(&mut two, Some("b"), 1), ["y"]);
        assert_eq!(two.cursor, 0, "pinned launches leave the rotation alone");
    }

    #[test]
    fn rate_limit_moves_off_the_limited_key_for_every_strategy_but_manual_callers() {
        let today = now().date_naive();
        let mut p = provider(&["a", "b"]);
        let first = p.launch(None, now()).unwrap();
        assert_eq!(p.keys[first].label, "a");
        // Round-robin already moved the cursor to "b"; advancing from "a" lands on "b",
        // not back on "a" (which a blind cursor + 1 would do with two keys).
        let next = p.advance(Some("a"), today).unwrap();
        assert_eq!(p.keys[next].label, "b");
        assert_eq!(labels_of(&mut p, None, 1), ["b"]);

        let mut pinned = provider(&["a", "b"]);
        assert_eq!(labels_of(&mut pinned, Some("a"), 1), ["a"]);
        pinned.advance(Some("a"), today);
        assert_eq!(
            labels_of(&mut pinned, Some("a"), 1),
            ["b"],
            "the session moves too"
        );

        let mut failover = provider(&["a", "b", "c"]);
        failover.strategy = Strategy::Failover;
        assert_eq!(labels_of(&mut failover, Some("s"), 2), ["a", "a"]);
        failover.advance(Some("a"), today);
        failover.advance(Some("a"), today); // a second worker reporting the same key
        assert_eq!(labels_of(&mut failover, None, 1), ["b"]);
    }

    #[test]
    fn expired_keys_are_skipped_and_none_when_all_expired() {
        let today = now().date_naive();
        let yesterday = today.pred_opt().unwrap();
        let mut p = provider(&["a", "b", "c"]);
        p.keys[1].expires = Some(yesterday);
        p.keys[2].expires = Some(today); // still valid on its last day
        assert_eq!(labels_of(&mut p, None, 3), ["a", "c", "a"]);
        for k in &mut p.keys {
            k.expires = Some(yesterday);
        }
        assert_eq!(p.launch(None, now()), None);
        assert_eq!(p.launch(Some("s"), now()), None);
    }

    #[test]
    fn remove_keeps_the_cursor_on_the_same_next_key() {
        let mut p = provider(&["a", "b", "c"]);
        p.cursor = 2;
        assert!(p.remove("a"));
        assert_eq!(p.keys[p.cursor].label, "c");
        assert!(p.remove("c"));
        assert_eq!(p.cursor, 0);
        assert!(!p.remove("zzz"));
    }

    #[test]
    fn strategy_names_parse_and_print() {
        for s in [Strategy::RoundRobin, Strategy::Failover, Strategy::Manual] {
            assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
        let err = "random".parse::<Strategy>().unwrap_err();
        assert!(
            err.contains("`random`") && err.contains("failover"),
            "{err}"
        );
    }
}
