//! [`Store`]: the credential store as the rest of crewmux uses it. Every mutation is one
//! locked read-modify-write of the sealed file, so several crewmux processes can share it.
#![allow(
    clippy::expect_used,
    reason = "lookups of ids the surrounding code has just checked"
)]

use std::fmt;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use secrecy::SecretString;
use zeroize::Zeroizing;

use super::env_vars::require_key_var;
use super::file;
use super::model::{KeyRecord, StoreData, Strategy};
use super::passphrase::passphrase_from_env_or_prompt;
use super::seal::{self, SealError, SealKey};
use super::secret::{tmux_quote, ApiKey};
use crate::error::{Error, Result};

/// A key chosen for one launch. Its `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct SelectedKey {
    pub provider: String,
    /// The label to write in the event log (never the key).
    pub label: String,
    /// The variable the worker reads the key from, e.g. `OPENAI_API_KEY`.
    pub env_var: String,
    pub key: ApiKey,
}

impl SelectedKey {
    /// `(variable, key)` for `std::process::Command::env` of a child worker.
    pub fn env_pair(&self) -> (&str, &str) {
        (&self.env_var, self.key.expose())
    }

    /// `'VAR=key'`, quoted by [`tmux_quote`], to follow `-e` in a `new-window` or
    /// `split-window` line sent on the stdin of `tmux source-file -` (never on argv).
    /// Zeroed on drop.
    ///
    /// # Errors
    /// A key stored by hand that [`tmux_quote`] cannot quote.
    pub fn tmux_env_arg(&self) -> Result<Zeroizing<String>> {
        let assignment = Zeroizing::new(format!("{}={}", self.env_var, self.key.expose()));
        tmux_quote(&assignment)
            .map(Zeroizing::new)
            .map_err(|e| Error::Other(format!("key `{}` of {}: {e}", self.label, self.provider)))
    }
}

/// The credential store: path, passphrase, the key derived from it and the last contents read.
///
/// Calls block (Argon2id on the first read, fsync on writes): from async code, call them in
/// `spawn_blocking`. Share one `Store` between tasks behind a `Mutex`.
pub struct Store {
    path: PathBuf,
    passphrase: SecretString,
    key: Option<SealKey>,
    pub(super) data: StoreData,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("providers", &self.data.providers.len())
            .finish_non_exhaustive()
    }
}

/// Environment variable naming the config directory (tests point it at a temp dir).
pub const CONFIG_DIR_ENV: &str = "CREWMUX_CONFIG_DIR";
/// File name of the store inside the config directory.
pub const STORE_FILE: &str = "credentials.enc";

/// The store [`Store::check_default`] opened, until [`Store::open_default`] takes it.
static CHECKED: std::sync::Mutex<Option<Store>> = std::sync::Mutex::new(None);

/// The checked store, when it is the one at `path`.
fn take_checked(path: &Path) -> Option<Store> {
    let mut slot = CHECKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if slot.as_ref().is_some_and(|s| s.path == path) {
        slot.take()
    } else {
        None
    }
}

fn validate_label(label: &str) -> Result<()> {
    let ok = !label.is_empty()
        && label.len() <= 64
        && label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "label `{label}` is not accepted; use 1-64 letters, digits, `-`, `_` or `.`"
        )))
    }
}

impl Store {
    /// `$CREWMUX_CONFIG_DIR/credentials.enc`, else `<config dir>/crewmux/credentials.enc`
    /// (`$XDG_CONFIG_HOME` or `~/.config` on Linux, via the `dirs` crate).
    ///
    /// # Errors
    /// No config directory can be found (no `$HOME`).
    pub fn default_path() -> Result<PathBuf> {
        if let Some(dir) = std::env::var_os(CONFIG_DIR_ENV).filter(|d| !d.is_empty()) {
            return Ok(PathBuf::from(dir).join(STORE_FILE));
        }
        dirs::config_dir()
            .map(|d| d.join("crewmux").join(STORE_FILE))
            .ok_or_else(|| {
                Error::Other(format!(
                    "no config directory (HOME unset); set {CONFIG_DIR_ENV} to a directory"
                ))
            })
    }

    /// Open the store at [`Store::default_path`] with the passphrase from
    /// [`passphrase_from_env_or_prompt`]. `Ok(None)` when there is no store file: nothing
    /// to select, and no passphrase is asked for.
    ///
    /// # Errors
    /// As [`Store::default_path`], [`passphrase_from_env_or_prompt`] and reading the store: a
    /// wrong passphrase, a corrupt file or one with loose permissions (the file is never touched).
    pub fn open_default() -> Result<Option<Store>> {
        let path = Self::default_path()?;
        if let Some(store) = take_checked(&path) {
            return Ok(Some(store));
        }
        if !path.exists() {
            return Ok(None);
        }
        let passphrase = passphrase_from_env_or_prompt(false)?;
        Self::open(path, passphrase).map(Some)
    }

    /// Open the store at [`Store::default_path`] as [`Store::open_default`] does, before a
    /// run is created: a missing passphrase, a wrong one or a store that cannot be read is
    /// refused while nothing of the run exists yet. The store opened is kept for this
    /// process, and the next [`Store::open_default`] (the driver's) takes it: the
    /// passphrase is asked once and derived once (Argon2id, 0.2–0.4 s).
    ///
    /// # Errors
    /// As [`Store::open_default`].
    pub fn check_default() -> Result<()> {
        if let Some(store) = Self::open_default()? {
            let mut slot = CHECKED
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *slot = Some(store);
        }
        Ok(())
    }

    /// Like [`Store::open_default`], but a missing store is fine: it is created by the first
    /// write (a new passphrase is asked twice at a prompt).
    ///
    /// # Errors
    /// As [`Store::open_default`].
    pub fn open_or_create_default() -> Result<Store> {
        let path = Self::default_path()?;
        let passphrase = passphrase_from_env_or_prompt(!path.exists())?;
        Self::open(path, passphrase)
    }

    /// Open the store at `path`. A missing file is an empty store (nothing is written until
    /// a change). An existing file is read and decrypted now, so a wrong passphrase fails
    /// here.
    ///
    /// # Errors
    /// Each one line naming the file; the file is never touched: wrong passphrase,
    /// modified, truncated, newer format, not a store, open to other users, unreadable.
    pub fn open(path: impl Into<PathBuf>, passphrase: SecretString) -> Result<Store> {
        let mut store = Store {
            path: path.into(),
            passphrase,
            key: None,
            data: StoreData::default(),
        };
        if !store.path.exists() {
            return Ok(store); // nothing to read; the directory is made by the first write
        }
        let _lock = file::lock(&store.path, false)?;
        store.load()?;
        Ok(store)
    }

    /// The store file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Read and decrypt the file into `self.data`; returns whether it exists. Hold the lock.
    fn load(&mut self) -> Result<bool> {
        let Some(bytes) = file::read(&self.path)? else {
            self.data = StoreData::default();
            return Ok(false);
        };
        let (plain, key) = seal::open(&bytes, &self.passphrase, self.key.take())
            .map_err(|e| self.seal_error(e))?;
        self.key = Some(key);
        self.data = serde_json::from_slice(&plain).map_err(|e| Error::CorruptState {
            path: self.path.clone(),
            // Only the position: serde's message can quote a value, and values are keys.
            reason: format!(
                "decrypted, but the contents are unreadable at line {} column {}; restore it \
                 from a backup",
                e.line(),
                e.column()
            ),
        })?;
        super::index::refresh(&self.path, &self.data);
        Ok(true)
    }

    fn seal_error(&self, e: SealError) -> Error {
        match e {
            SealError::WrongPassphrase => Error::Other(format!("{}: {e}", self.path.display())),
            other => Error::CorruptState {
                path: self.path.clone(),
                reason: other.to_string(),
            },
        }
    }

    /// One locked read-modify-write. `change` returns its result and whether to write;
    /// on an error nothing is written.
    fn update<T>(
        &mut self,
        change: impl FnOnce(&mut StoreData, DateTime<Utc>) -> Result<(T, bool)>,
    ) -> Result<T> {
        let _lock = file::lock(&self.path, true)?;
        self.load()?;
        let mut data = self.data.clone();
        let (out, write) = change(&mut data, Utc::now())?;
        if write {
            let mut json = Zeroizing::new(Vec::with_capacity(self.size_hint()));
            serde_json::to_writer(&mut *json, &data)
                .map_err(|e| Error::Other(format!("cannot encode the store: {e}")))?;
            let key = self
                .key
                .get_or_insert_with(|| SealKey::fresh(&self.passphrase));
            file::write_atomic(&self.path, &seal::seal(&json, key))?;
            self.data = data;
            super::index::refresh(&self.path, &self.data);
        }
        Ok(out)
    }

    /// Bytes to reserve for the JSON so it is not reallocated (a reallocation would leave
    /// an unzeroed copy of the keys behind).
    fn size_hint(&self) -> usize {
        let keys: usize = self
            .data
            .providers
            .values()
            .flat_map(|p| &p.keys)
            .map(|k| k.key.expose().len() + k.label.len() + 256)
            .sum();
        keys * 2 + 8192
    }

    /// Store `key` for `provider` under `label` (default `key-N`, the first free N ≥ 1),
    /// optionally with its last valid day. Returns the label.
    ///
    /// # Errors
    /// Usage errors, nothing written: unknown provider, bad or taken label, the same key
    /// already stored for the provider, an expiry date in the past.
    pub fn add(
        &mut self,
        provider: &str,
        label: Option<&str>,
        key: ApiKey,
        expires: Option<NaiveDate>,
    ) -> Result<String> {
        require_key_var(provider)?;
        if let Some(label) = label {
            validate_label(label)?;
        }
        self.update(|data, now| {
            if let Some(day) = expires.filter(|d| *d < now.date_naive()) {
                return Err(Error::Usage(format!(
                    "expiry date {day} is in the past; give the key's last valid day"
                )));
            }
            let entry = data.providers.entry(provider.to_string()).or_default();
            if let Some(same) = entry.keys.iter().find(|k| k.key.same_as(&key)) {
                return Err(Error::Usage(format!(
                    "this key is already stored for {provider} as `{}`",
                    same.label
                )));
            }
            let taken = |l: &str| entry.keys.iter().any(|k| k.label == l);
            let label = match label {
                Some(l) if taken(l) => {
                    return Err(Error::Usage(format!(
                        "{provider} already has a key labelled `{l}`; pick another --label \
                         or remove it first"
                    )))
                }
                Some(l) => l.to_string(),
                None => (1..)
                    .map(|n| format!("key-{n}"))
                    .find(|l| !taken(l))
                    .expect("a free label"),
            };
            entry.keys.push(KeyRecord {
                label: label.clone(),
                key,
                added: now,
                expires,
                usage_count: 0,
                last_used: None,
            });
            Ok((label, true))
        })
    }

    /// Remove `provider`'s key `label`.
    ///
    /// # Errors
    /// Usage errors: no such provider or label; the message lists the labels there are.
    pub fn remove(&mut self, provider: &str, label: &str) -> Result<()> {
        self.update(|data, _| {
            let Some(p) = data.providers.get_mut(provider) else {
                return Err(Error::Usage(format!(
                    "no keys stored for `{provider}`; see `crewmux creds list`"
                )));
            };
            if !p.remove(label) {
                let labels: Vec<&str> = p.keys.iter().map(|k| k.label.as_str()).collect();
                return Err(Error::Usage(format!(
                    "{provider} has no key labelled `{label}`; its labels: {}",
                    labels.join(", ")
                )));
            }
            if p.keys.is_empty() {
                data.providers.remove(provider);
            }
            Ok(((), true))
        })
    }

    /// Move `provider` to its next key, whatever its strategy. Returns the new active label,
    /// `None` when it has no usable key.
    ///
    /// # Errors
    /// Usage errors: no keys stored for `provider`.
    pub fn rotate(&mut self, provider: &str) -> Result<Option<String>> {
        self.update(|data, now| {
            let p = data.providers.get_mut(provider).ok_or_else(|| {
                Error::Usage(format!("no keys stored for `{provider}`; add one first"))
            })?;
            let next = p.advance(None, now.date_naive());
            Ok((next.map(|i| p.keys[i].label.clone()), true))
        })
    }

    /// Set how `provider`'s keys are handed out.
    ///
    /// # Errors
    /// Usage errors: no keys stored for `provider`.
    pub fn set_strategy(&mut self, provider: &str, strategy: Strategy) -> Result<()> {
        self.update(|data, _| {
            let p = data.providers.get_mut(provider).ok_or_else(|| {
                Error::Usage(format!("no keys stored for `{provider}`; add one first"))
            })?;
            p.strategy = strategy;
            Ok(((), true))
        })
    }

    /// Choose the key for one launch of a `provider` worker and record its use.
    ///
    /// `session_id` pins the launch under round-robin: FNV-1a 32-bit of the id, plus the
    /// provider's rate-limit shifts, modulo the number of unexpired keys. Without it,
    /// round-robin hands out the keys in turn; failover and manual give the active key.
    ///
    /// `Ok(None)`: the provider takes no key from the store, or none is stored for it (the
    /// worker then runs with its own login). Expired keys are skipped.
    ///
    /// # Errors
    /// Every stored key of the provider has expired (the message says how to add
    /// one); the store cannot be read or written.
    pub fn select_for_launch(
        &mut self,
        provider: &str,
        session_id: Option<&str>,
    ) -> Result<Option<SelectedKey>> {
        self.select_for_launch_in(&super::env_vars::registry(), provider, session_id)
    }

    /// As [`select_for_launch`](Self::select_for_launch), with the provider's variable
    /// (`api_key_env`) as `registry` says: a run passes its own, which has its project's
    /// providers.toml (the current directory need not be the project).
    ///
    /// # Errors
    /// As [`select_for_launch`](Self::select_for_launch).
    pub fn select_for_launch_in(
        &mut self,
        registry: &crate::providers::Registry,
        provider: &str,
        session_id: Option<&str>,
    ) -> Result<Option<SelectedKey>> {
        let Some(env_var) = super::env_vars::key_var_in(registry, provider) else {
            return Ok(None);
        };
        if !self.path.exists() {
            return Ok(None); // no store: the worker runs with its own login
        }
        self.update(|data, now| {
            let Some(p) = data
                .providers
                .get_mut(provider)
                .filter(|p| !p.keys.is_empty())
            else {
                return Ok((None, false));
            };
            let index = p.launch(session_id, now).ok_or_else(|| {
                Error::Other(format!(
                    "every stored {provider} key has expired; add a new one with \
                     `crewmux creds add --provider {provider}`"
                ))
            })?;
            let record = &p.keys[index];
            let selected = SelectedKey {
                provider: provider.to_string(),
                label: record.label.clone(),
                env_var,
                key: record.key.clone(),
            };
            Ok((Some(selected), true))
        })
    }

    /// A worker of `provider` hit a rate limit while using the key `limited_label`: move the
    /// provider to the key after it (pinned sessions move by one too). Returns the label the
    /// next [`Store::select_for_launch`] with the same `session_id` will get, for the event
    /// log.
    ///
    /// `Ok(None)` with nothing changed: the strategy is `manual`, or no keys are stored.
    /// `limited_label` may be `None` (or a label since removed): the active key is moved from.
    ///
    /// # Errors
    /// As reading and writing the store under its lock (see [`Store::open_default`]).
    pub fn on_rate_limit(
        &mut self,
        provider: &str,
        limited_label: Option<&str>,
        session_id: Option<&str>,
    ) -> Result<Option<String>> {
        if !self.path.exists() {
            return Ok(None);
        }
        self.update(|data, now| {
            let Some(p) = data
                .providers
                .get_mut(provider)
                .filter(|p| !p.keys.is_empty())
            else {
                return Ok((None, false));
            };
            if p.strategy == Strategy::Manual {
                return Ok((None, false));
            }
            let today = now.date_naive();
            p.advance(limited_label, today);
            let next = p.pick(session_id, today).map(|i| p.keys[i].label.clone());
            Ok((next, true))
        })
    }
}
