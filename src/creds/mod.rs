//! The credential store: several API keys per provider in one sealed file, handed to
//! workers round-robin, pinned per session or by failover, and rotated on rate limits
//! (docs/design.md).
//!
//! # Security model
//! * One file, `$CREWMUX_CONFIG_DIR/credentials.enc` or `~/.config/crewmux/credentials.enc`,
//!   mode 0600 in a 0700 directory, sealed with XChaCha20-Poly1305 under a key derived by
//!   Argon2id (64 MiB, 3 passes) from the passphrase ([`seal`] has the byte layout).
//! * Passphrase from `$CREWMUX_CREDENTIAL_PASSPHRASE` or a no-echo prompt; keys from a
//!   no-echo prompt or stdin, never from argv.
//! * A wrong passphrase, a modified, truncated or newer-format file each stop with one line
//!   naming the file; the file is never rewritten then. Writes are atomic under a lock.
//! * Keys live in [`ApiKey`] (zeroed on drop, redacted `Debug`); `creds list` shows at most
//!   4 leading characters.
//! * A key reaches a worker only through its environment: [`SelectedKey::env_pair`] for a
//!   child process, [`SelectedKey::tmux_env_arg`] for a tmux `new-window -e` line sent on the
//!   stdin of `tmux source-file -` (a client's argv is readable in `/proc`).
//!
//! # How a run uses it
//! ```no_run
//! # fn main() -> crewmux::error::Result<()> {
//! use crewmux::creds::{rate_limit_matches, RateLimitPatterns, Store};
//! let mut store = Store::open_default()?; // None: no store file, launch without keys
//! if let Some(store) = store.as_mut() {
//!     if let Some(key) = store.select_for_launch("codex", Some("run-42/backend"))? {
//!         // log key.label; pass key.env_pair() to the child's environment
//!         let patterns = RateLimitPatterns::default();
//!         if rate_limit_matches("Error: 429 Too Many Requests", &patterns) {
//!             let next = store.on_rate_limit("codex", Some(&key.label), Some("run-42/backend"))?;
//!             // log "rate limited on <key.label>; retry uses <next>"
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

mod env_vars;
mod file;
mod index;
mod model;
mod passphrase;
mod rate_limit;
pub mod seal;
mod secret;
mod store;
mod view;

/// The passphrase type [`Store::open`] takes (re-exported from `secrecy`).
pub use secrecy::SecretString;

pub use env_vars::{key_var, key_var_in, known_providers, require_key_var};
pub use index::{CredentialIndex, IndexEntry, INDEX_FILE};
pub use model::{fnv1a_32, Strategy};
pub use passphrase::{passphrase_from_env_or_prompt, PASSPHRASE_ENV};
pub use rate_limit::{rate_limit_matches, RateLimitPatterns, DEFAULT_RATE_LIMIT_PATTERNS};
pub use secret::{check_key_text, tmux_quote, ApiKey, MAX_KEY_BYTES};
pub use store::{SelectedKey, Store, CONFIG_DIR_ENV, STORE_FILE};
pub use view::{Expiry, ExpiryNotice, KeyView, EXPIRY_WARNING_DAYS};
