//! The credential store's plain index, `credentials.index.json` beside the sealed file: for
//! each provider, how many keys are stored and until when one of them is valid. It holds no
//! key and no label, only what doctor and routing need to tell that a launch will get a key
//! without asking for the passphrase. Rewritten (atomically, mode 0600) after every read
//! and write of the store, so it follows the store; a missing or unreadable index only means
//! "unknown", never an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::model::StoreData;

/// File name of the index, in the store's directory.
pub const INDEX_FILE: &str = "credentials.index.json";

/// What the index says about one provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Keys stored for the provider.
    pub keys: usize,
    /// The last day some key is valid; `None` when a key never expires.
    pub valid_until: Option<NaiveDate>,
}

impl IndexEntry {
    /// Some key can be handed to a launch on `today`.
    pub fn usable_on(&self, today: NaiveDate) -> bool {
        self.keys > 0 && self.valid_until.is_none_or(|d| d >= today)
    }
}

/// The whole index: provider → entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialIndex {
    pub providers: BTreeMap<String, IndexEntry>,
}

impl CredentialIndex {
    /// The index of decrypted store contents.
    pub fn of(data: &StoreData) -> Self {
        let providers = data
            .providers
            .iter()
            .filter(|(_, p)| !p.keys.is_empty())
            .map(|(name, p)| {
                let valid_until = if p.keys.iter().any(|k| k.expires.is_none()) {
                    None
                } else {
                    p.keys.iter().filter_map(|k| k.expires).max()
                };
                let entry = IndexEntry {
                    keys: p.keys.len(),
                    valid_until,
                };
                (name.clone(), entry)
            })
            .collect();
        CredentialIndex { providers }
    }

    /// Read the index in `dir` (a config directory). `None` when there is none or it cannot
    /// be read: callers then know nothing about the store.
    pub fn read(dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(dir.join(INDEX_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The entry of `provider`, if it has keys.
    pub fn get(&self, provider: &str) -> Option<&IndexEntry> {
        self.providers.get(provider)
    }
}

/// The index path beside the store file `store`.
pub fn index_path(store: &Path) -> PathBuf {
    store.with_file_name(INDEX_FILE)
}

/// Write the index of `data` beside `store` when it differs from what is there. Failures are
/// logged and ignored: the index is a convenience, the sealed file is the truth.
pub fn refresh(store: &Path, data: &StoreData) {
    let index = CredentialIndex::of(data);
    let path = index_path(store);
    let dir = path.parent().unwrap_or(Path::new("."));
    if CredentialIndex::read(dir).as_ref() == Some(&index) {
        return;
    }
    let json = match serde_json::to_vec_pretty(&index) {
        Ok(j) => j,
        Err(e) => return tracing::warn!("credential index: {e}"),
    };
    if let Err(e) = super::file::write_atomic(&path, &json) {
        tracing::warn!("credential index: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::creds::model::{KeyRecord, ProviderKeys};
    use crate::creds::ApiKey;

    fn keys(expiries: &[Option<NaiveDate>]) -> ProviderKeys {
        ProviderKeys {
            keys: expiries
                .iter()
                .enumerate()
                .map(|(i, e)| KeyRecord {
                    label: format!("key-{i}"),
                    key: ApiKey::new(&format!("sk-test-{i}-0123456789")).unwrap(),
                    added: chrono::Utc::now(),
                    expires: *e,
                    usage_count: 0,
                    last_used: None,
                })
                .collect(),
            ..ProviderKeys::default()
        }
    }

    #[test]
    fn index_counts_keys_and_their_last_valid_day_without_the_keys() {
        let day = |d| NaiveDate::from_ymd_opt(2030, 1, d).unwrap();
        let mut data = StoreData::default();
        data.providers
            .insert("codex".into(), keys(&[Some(day(3)), Some(day(9))]));
        data.providers.insert("gemini".into(), keys(&[None]));
        data.providers.insert("claude".into(), keys(&[]));
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("credentials.enc");
        refresh(&store, &data);
        let text = std::fs::read_to_string(index_path(&store)).unwrap();
        assert!(!text.contains("sk-test"), "{text}");
        assert!(!text.contains("key-0"), "{text}");
        let index = CredentialIndex::read(dir.path()).unwrap();
        let codex = index.get("codex").unwrap();
        assert_eq!((codex.keys, codex.valid_until), (2, Some(day(9))));
        assert!(codex.usable_on(day(9)) && !codex.usable_on(day(10)));
        assert!(index.get("gemini").unwrap().usable_on(day(31)));
        assert!(index.get("claude").is_none());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(index_path(&store))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_missing_or_broken_index_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(CredentialIndex::read(dir.path()).is_none());
        std::fs::write(dir.path().join(INDEX_FILE), "{not json").unwrap();
        assert!(CredentialIndex::read(dir.path()).is_none());
    }
}
