//! Secret values of the credential store: the API key type that never prints itself, the
//! rule for which key texts are accepted, and quoting a key for tmux's command language.

use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use zeroize::Zeroizing;

/// Longest key accepted, in bytes. Real provider keys are 40–200 bytes; the cap keeps a
/// `new-window -e` line far below tmux's 16 KiB command limit (docs/tmux.md).
pub const MAX_KEY_BYTES: usize = 4096;

/// An API key held in memory. Its `Debug` prints `ApiKey(<redacted>)`; it has no `Display`.
/// The bytes are zeroed when it is dropped (`secrecy`).
///
/// The only way to the text is [`ApiKey::expose`], which the launch code calls to put the
/// key into a worker's environment.
#[derive(Clone)]
pub struct ApiKey(SecretString);

impl ApiKey {
    /// Wrap a key after checking it with [`check_key_text`].
    ///
    /// # Errors
    /// The reason the text is not accepted (see [`check_key_text`]).
    pub fn new(text: &str) -> Result<Self, String> {
        check_key_text(text)?;
        Ok(Self(SecretString::from(text.to_owned())))
    }

    /// The key text. Call it only to hand the key to a child's environment.
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }

    /// At most the first 4 characters, shown by `creds list` so a user can tell keys
    /// apart: 4 for keys of 20 characters or more, fewer for shorter ones (a fifth of the
    /// length), so a short key never shows most of itself.
    pub fn hint(&self) -> String {
        let text = self.expose();
        let shown = (text.len() / 5).min(4);
        text.chars().take(shown).collect()
    }

    /// Constant-time comparison of two keys (used to refuse storing one key twice).
    pub fn same_as(&self, other: &ApiKey) -> bool {
        use subtle::ConstantTimeEq;
        self.expose()
            .as_bytes()
            .ct_eq(other.expose().as_bytes())
            .into()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl Serialize for ApiKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.expose())
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // The intermediate String is zeroed on drop; the copy has exact capacity so
        // `SecretString::from` does not reallocate and leave a stray copy behind.
        let text = Zeroizing::new(String::deserialize(deserializer)?);
        Ok(Self(SecretString::from(text.as_str().to_owned())))
    }
}

/// Decide whether `text` may be stored as a key.
///
/// Accepted: 1..=[`MAX_KEY_BYTES`] printable ASCII characters other than space, `'`, `"`,
/// `` ` `` and `\`. Every provider key format seen (OpenAI `sk-…`, Anthropic `sk-ant-…`,
/// Google `AIza…`, Moonshot, DashScope) fits. The rule makes [`tmux_quote`] always
/// possible and keeps a key from ending a quoted string in any shell or tmux command.
///
/// # Errors
/// One line saying which character (by position, never the key itself) is refused.
pub fn check_key_text(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("the key is empty; paste the key on stdin or at the prompt".into());
    }
    if text.len() > MAX_KEY_BYTES {
        return Err(format!(
            "the key is {} bytes long; at most {MAX_KEY_BYTES} are accepted",
            text.len()
        ));
    }
    for (pos, ch) in text.chars().enumerate() {
        let what = match ch {
            '\'' | '"' | '`' => "a quote",
            '\\' => "a backslash",
            ' ' | '\t' => "whitespace",
            c if c.is_ascii_control() => "a control character",
            c if !c.is_ascii() => "a non-ASCII character",
            _ => continue,
        };
        return Err(format!(
            "the key has {what} at character {}; API keys are printable ASCII without \
             spaces, quotes or backslashes: check what was pasted",
            pos + 1
        ));
    }
    Ok(())
}

/// Quote `value` as one argument of tmux's command language (the text `source-file`
/// reads, e.g. from `tmux source-file -` on stdin).
///
/// Returns `'value'`. tmux's parser (cmd-parse.y, tmux ≥ 3.0) takes everything between
/// single quotes literally: no `$VAR` or `~` expansion, no escapes, and `;`, `#`, `{`, `}`
/// lose their meaning. The value therefore must not contain `'` or a newline; this
/// function refuses those, control characters and non-ASCII text.
///
/// Use it to send a worker's key without putting it on any process's argv:
/// write `new-window -e <tmux_quote("VAR=key")> …` to the stdin of
/// `tmux -L <socket> source-file -` (argv of a tmux client is visible in `/proc`).
///
/// # Errors
/// A one-line reason naming the position of the refused character.
pub fn tmux_quote(value: &str) -> Result<String, String> {
    for (pos, ch) in value.chars().enumerate() {
        if ch == '\'' || ch.is_ascii_control() || !ch.is_ascii() {
            return Err(format!(
                "character {} cannot be quoted for tmux (a single quote, control or \
                 non-ASCII character)",
                pos + 1
            ));
        }
    }
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('\'');
    quoted.push_str(value);
    quoted.push('\'');
    Ok(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let key = ApiKey::new("sk-test-0123456789abcdef").unwrap();
        let shown = format!("{key:?} {:?}", vec![key.clone()]);
        assert!(!shown.contains("0123456789"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn hint_is_at_most_four_characters_and_less_for_short_keys() {
        assert_eq!(
            ApiKey::new("sk-proj-abcdefghijklmnop").unwrap().hint(),
            "sk-p"
        );
        assert_eq!(ApiKey::new("abcdefghij").unwrap().hint(), "ab");
        assert_eq!(ApiKey::new("abc").unwrap().hint(), "");
    }

    #[test]
    fn refused_key_texts_name_the_reason_not_the_key() {
        for (text, reason) in [
            ("", "empty"),
            ("sk-a'b", "a quote"),
            ("sk-a\"b", "a quote"),
            ("sk-a\\b", "a backslash"),
            ("sk a", "whitespace"),
            ("sk-\x1b[0m", "control"),
            ("sk-\n", "control"),
            ("sk-é", "non-ASCII"),
        ] {
            let err = check_key_text(text).unwrap_err();
            assert!(err.contains(reason), "{text:?}: {err}");
            assert!(!err.contains("sk-"), "{err}");
        }
        assert!(check_key_text(&"a".repeat(MAX_KEY_BYTES + 1)).is_err());
        assert!(check_key_text("sk-ant-api03_AZaz09-._~+/=:;#${}%").is_ok());
    }

    #[test]
    fn tmux_quote_wraps_in_single_quotes_and_refuses_what_it_cannot_quote() {
        assert_eq!(tmux_quote("A=b;c #d").unwrap(), "'A=b;c #d'");
        assert!(tmux_quote("a'b").is_err());
        assert!(tmux_quote("a\nb").is_err());
        assert!(tmux_quote("é").is_err());
    }

    #[test]
    fn serde_round_trip_keeps_the_key() {
        let key = ApiKey::new("sk-round-trip-123").unwrap();
        let json = serde_json::to_string(&key).unwrap();
        let back: ApiKey = serde_json::from_str(&json).unwrap();
        assert!(back.same_as(&key));
        assert!(!back.same_as(&ApiKey::new("sk-round-trip-124").unwrap()));
    }
}
