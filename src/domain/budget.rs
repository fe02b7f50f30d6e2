//! A run's budget (`--budget-usd`, `--budget-tokens`, a team file's `[budget]`): what it
//! may spend, what it has spent as its workers' CLIs report it (or as estimated from the
//! sizes of prompts and output where a CLI reports nothing), and the two levels that act
//! on it (README "Budgets"): at [`WARN_AT`] a warning, at the whole budget no new attempt
//! starts, running ones are ended and the run ends `failed` with reason `budget`.

use serde::{Deserialize, Serialize};

/// The share of a budget at which the run warns once (`budget-warning`).
pub const WARN_AT: f64 = 0.8;

/// What a run may spend: US dollars, tokens (input and output together), or both (the
/// first reached counts). A team file's `[budget]`: `usd = 5.0`, `tokens = 2_000_000`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

impl Budget {
    /// Whether either limit is set.
    pub fn is_set(&self) -> bool {
        self.usd.is_some() || self.tokens.is_some()
    }

    /// Why this budget cannot be used (`where_` names its place: `--budget-usd`,
    /// `[budget] usd`); `Ok` when every limit given is a positive, finite amount.
    ///
    /// # Errors
    /// The message names the value and the fix.
    pub fn check(&self, usd_at: &str, tokens_at: &str) -> Result<(), String> {
        if let Some(u) = self.usd {
            if !u.is_finite() || u <= 0.0 {
                return Err(format!(
                    "{usd_at} {u}: a budget is a positive amount of US dollars, e.g. 5 or 0.50"
                ));
            }
        }
        if self.tokens == Some(0) {
            return Err(format!(
                "{tokens_at} 0: a budget is a positive number of tokens, e.g. 2000000"
            ));
        }
        Ok(())
    }
}

/// What the run has spent, summed over every attempt of every worker.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spend {
    /// Input and output tokens.
    pub tokens: u64,
    /// US dollars: reported by the CLI (Claude Code), else from the provider's price table
    /// in providers.toml; attempts with neither count no dollars.
    pub usd: f64,
    /// Part of it is an estimate: an attempt still running, or a CLI that reports no
    /// tokens (its prompt's and output's size in bytes / 4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

/// A run's budget with what it has spent and what it has done about it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BudgetState {
    pub limit: Budget,
    #[serde(default)]
    pub spent: Spend,
    /// The warning at [`WARN_AT`] was given.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warned: bool,
    /// The whole budget is spent: why, as the run's reason says it (`budget: …`). No new
    /// attempt starts from then on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhausted: Option<String>,
}

impl BudgetState {
    /// The larger of the spent shares of the limits given (0.0 with none).
    pub fn share(&self) -> f64 {
        let usd = self.limit.usd.map_or(0.0, |u| self.spent.usd / u);
        let tokens = self
            .limit
            .tokens
            .map_or(0.0, |t| self.spent.tokens as f64 / t as f64);
        usd.max(tokens)
    }

    /// `1.2M of 2.0M tokens · $0.42 of $5.00 (60 %, estimated)`: each limit given.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.limit.tokens {
            parts.push(format!(
                "{} of {} tokens",
                tokens(self.spent.tokens),
                tokens(t)
            ));
        }
        if let Some(u) = self.limit.usd {
            parts.push(format!("${:.2} of ${u:.2}", self.spent.usd));
        }
        format!(
            "{} ({:.0} %{})",
            parts.join(" · "),
            self.share() * 100.0,
            if self.spent.estimated {
                ", estimated"
            } else {
                ""
            }
        )
    }
}

/// `950`, `12.3k`, `4.1M`.
fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_the_larger_of_the_limits_and_bad_limits_name_their_fix() {
        let b = BudgetState {
            limit: Budget {
                usd: Some(5.0),
                tokens: Some(2_000_000),
            },
            spent: Spend {
                tokens: 1_200_000,
                usd: 1.0,
                estimated: true,
            },
            ..BudgetState::default()
        };
        assert!((b.share() - 0.6).abs() < 1e-9);
        assert_eq!(
            b.line(),
            "1.2M of 2.0M tokens · $1.00 of $5.00 (60 %, estimated)"
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = Budget {
                usd: Some(bad),
                tokens: None,
            }
            .check("--budget-usd", "--budget-tokens")
            .unwrap_err();
            assert!(
                e.starts_with("--budget-usd") && e.contains("positive"),
                "{e}"
            );
        }
        let e = Budget {
            usd: None,
            tokens: Some(0),
        }
        .check("--budget-usd", "[budget] tokens")
        .unwrap_err();
        assert!(e.starts_with("[budget] tokens 0"), "{e}");
    }
}
