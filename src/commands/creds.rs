//! `crewmux creds add/list/remove/rotate`: the command-line face of [`crate::creds::Store`].

use std::io::{IsTerminal, Read};

use chrono::NaiveDate;
use zeroize::Zeroizing;

use crate::cli::CredsCommand;
use crate::creds::{require_key_var, ApiKey, Expiry, KeyView, Store, Strategy, MAX_KEY_BYTES};
use crate::error::{Error, Result};

/// Run one `creds` subcommand; returns the exit code (0) or a one-line error.
///
/// # Errors
/// [`Error::Usage`] for bad input (an unknown provider or label, a bad date or key, the
/// messages name the fix) and the credential store's errors (see [`Store`]).
pub fn run(cmd: CredsCommand) -> Result<i32> {
    match cmd {
        CredsCommand::Add {
            provider,
            label,
            expires,
        } => add(&provider, label.as_deref(), expires.as_deref()),
        CredsCommand::List { provider } => list(provider.as_deref()),
        CredsCommand::Remove { provider, label } => remove(&provider, &label),
        CredsCommand::Rotate { provider, strategy } => {
            rotate(provider.as_deref(), strategy.as_deref())
        }
    }
}

fn parse_expiry(text: &str) -> Result<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        Error::Usage(format!(
            "--expires `{text}` is not a date; give the key's last valid day as YYYY-MM-DD"
        ))
    })
}

/// The key from a no-echo prompt when stdin is a terminal, else all of stdin (surrounding
/// whitespace trimmed: keys contain none).
fn read_key(provider: &str) -> Result<ApiKey> {
    let stdin = std::io::stdin();
    let raw = if stdin.is_terminal() {
        Zeroizing::new(
            rpassword::prompt_password(format!("{provider} API key (not echoed): "))
                .map_err(|e| Error::Other(format!("cannot read the key at the prompt: {e}")))?,
        )
    } else {
        // Reserved up front and bounded, so the buffer never reallocates (which would leave
        // an unzeroed copy of the key behind); longer input is refused by `ApiKey::new`.
        let limit = 2 * MAX_KEY_BYTES;
        let mut text = Zeroizing::new(String::with_capacity(limit + 1));
        stdin
            .lock()
            .take(limit as u64)
            .read_to_string(&mut text)
            .map_err(|e| Error::Usage(format!("cannot read the key from stdin: {e}")))?;
        text
    };
    ApiKey::new(raw.trim()).map_err(Error::Usage)
}

fn add(provider: &str, label: Option<&str>, expires: Option<&str>) -> Result<i32> {
    let env_var = require_key_var(provider)?;
    let expires = expires.map(parse_expiry).transpose()?;
    let key = read_key(provider)?;
    let mut store = Store::open_or_create_default()?;
    let label = store.add(provider, label, key, expires)?;
    let count = store.keys(Some(provider)).len();
    crate::outln!(
        "added {provider} key `{label}` (reaches workers as {env_var}); {provider} has {count} \
         key{}",
        if count == 1 { "" } else { "s" }
    );
    Ok(0)
}

fn open_existing() -> Result<Store> {
    match Store::open_default()? {
        Some(store) => Ok(store),
        None => Err(Error::Usage(format!(
            "no credential store at {}; add a key with `crewmux creds add --provider P`",
            Store::default_path()?.display()
        ))),
    }
}

fn expiry_text(view: &KeyView) -> String {
    match (view.expires, view.expiry) {
        (Some(day), Expiry::Expired(ago)) => format!("{day} EXPIRED {ago} day(s) ago"),
        (Some(day), Expiry::Soon(0)) => format!("{day} expires today"),
        (Some(day), Expiry::Soon(left)) => format!("{day} expires in {left} day(s)"),
        (Some(day), _) => day.to_string(),
        (None, _) => "-".into(),
    }
}

fn list(provider: Option<&str>) -> Result<i32> {
    let Some(store) = Store::open_default()? else {
        crate::outln!(
            "no credential store at {}; add a key with `crewmux creds add --provider P`",
            Store::default_path()?.display()
        );
        return Ok(0);
    };
    let views = store.keys(provider);
    if views.is_empty() {
        crate::outln!(
            "no keys stored{}",
            provider.map(|p| format!(" for {p}")).unwrap_or_default()
        );
        return Ok(0);
    }
    let label_w = views
        .iter()
        .map(|v| v.label.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut current: Option<&str> = None;
    for v in &views {
        if current != Some(v.provider.as_str()) {
            current = Some(&v.provider);
            crate::outln!(
                "{} ({}, {})",
                v.provider,
                v.env_var.as_deref().unwrap_or("no variable"),
                v.strategy
            );
            crate::outln!(
                "  {:<6} {:<label_w$} {:<5} {:>6}  {:<17}  EXPIRES",
                "ACTIVE",
                "LABEL",
                "KEY",
                "USES",
                "LAST USED"
            );
        }
        let last = v
            .last_used
            .map(|t| t.format("%Y-%m-%d %H:%MZ").to_string())
            .unwrap_or_else(|| "never".into());
        crate::outln!(
            "  {:<6} {:<label_w$} {:<5} {:>6}  {:<17}  {}",
            if v.active { "*" } else { "" },
            v.label,
            format!("{}…", v.hint),
            v.usage_count,
            last,
            expiry_text(v)
        );
    }
    for v in &views {
        if matches!(v.expiry, Expiry::Soon(_) | Expiry::Expired(_)) {
            crate::errln!(
                "warning: {} key `{}`: {}; add a replacement with `crewmux creds add`",
                v.provider,
                v.label,
                expiry_text(v)
            );
        }
    }
    Ok(0)
}

fn remove(provider: &str, label: &str) -> Result<i32> {
    let mut store = open_existing()?;
    store.remove(provider, label)?;
    crate::outln!(
        "removed {provider} key `{label}`; {} left",
        store.keys(Some(provider)).len()
    );
    Ok(0)
}

fn rotate(provider: Option<&str>, strategy: Option<&str>) -> Result<i32> {
    let strategy = strategy
        .map(|s| s.parse::<Strategy>().map_err(Error::Usage))
        .transpose()?;
    let mut store = open_existing()?;
    let providers: Vec<String> = match provider {
        Some(p) => vec![p.to_string()],
        None => {
            let mut names: Vec<String> = store.keys(None).into_iter().map(|v| v.provider).collect();
            names.dedup();
            if names.is_empty() {
                return Err(Error::Usage(
                    "no keys stored; add one with `crewmux creds add --provider P`".into(),
                ));
            }
            names
        }
    };
    for name in &providers {
        match strategy {
            Some(s) => {
                store.set_strategy(name, s)?;
                crate::outln!("{name}: strategy {s}");
            }
            None => match store.rotate(name)? {
                Some(label) => crate::outln!("{name}: active key is now `{label}`"),
                None => {
                    crate::outln!("{name}: every key has expired; add one with `crewmux creds add`")
                }
            },
        }
    }
    Ok(0)
}
