//! Where the store's passphrase comes from: the environment, else a no-echo prompt.

use secrecy::SecretString;
use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// Environment variable holding the store's passphrase.
pub const PASSPHRASE_ENV: &str = "CREWMUX_CREDENTIAL_PASSPHRASE";

/// The passphrase: `$CREWMUX_CREDENTIAL_PASSPHRASE`, else a no-echo prompt on the terminal
/// (`rpassword`, reading `/dev/tty`), asked twice when `creating` a store.
///
/// # Errors
/// Usage errors: the variable is set but empty; no terminal to prompt on; an empty or
/// mismatched passphrase at the prompt.
pub fn passphrase_from_env_or_prompt(creating: bool) -> Result<SecretString> {
    if let Some(value) = std::env::var_os(PASSPHRASE_ENV) {
        let value = Zeroizing::new(
            value
                .into_string()
                .map_err(|_| Error::Usage(format!("{PASSPHRASE_ENV} is not valid UTF-8")))?,
        );
        if value.is_empty() {
            return Err(Error::Usage(format!(
                "{PASSPHRASE_ENV} is set but empty; set the passphrase or unset it to be asked"
            )));
        }
        return Ok(SecretString::from(value.as_str().to_owned()));
    }
    let no_tty = |e: std::io::Error| {
        Error::Usage(format!(
            "no passphrase: set {PASSPHRASE_ENV} or run on a terminal to be asked ({e})"
        ))
    };
    let first = Zeroizing::new(
        rpassword::prompt_password("crewmux credential store passphrase: ").map_err(no_tty)?,
    );
    if first.is_empty() {
        return Err(Error::Usage("the passphrase is empty".into()));
    }
    if creating {
        let again = Zeroizing::new(
            rpassword::prompt_password("new store; the same passphrase again: ").map_err(no_tty)?,
        );
        if *again != *first {
            return Err(Error::Usage(
                "the two passphrases differ; nothing was written".into(),
            ));
        }
    }
    Ok(SecretString::from(first.as_str().to_owned()))
}
