//! Critic verdicts and the council status rule (docs/design.md "Words").

use serde::{Deserialize, Serialize};

/// A critic's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// One critic's judgement: `confidence` is in `0.0..=1.0`; `findings` are one-line texts,
/// most important first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriticVerdict {
    pub critic: String,
    pub verdict: Verdict,
    pub confidence: f64,
    pub findings: Vec<String>,
}

/// The council's overall status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CouncilStatus {
    Ok,
    Attention,
    Blocked,
    #[default]
    Pending,
}

impl CouncilStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CouncilStatus::Ok => "ok",
            CouncilStatus::Attention => "attention",
            CouncilStatus::Blocked => "blocked",
            CouncilStatus::Pending => "pending",
        }
    }
}

/// The council of a run as saved in `state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Council {
    pub status: CouncilStatus,
    pub verdicts: Vec<CriticVerdict>,
    /// The fix round these verdicts judged (0 = first verify); `None` before any.
    #[serde(default)]
    pub round: Option<u32>,
}

impl Council {
    /// Build a council from verdicts, computing its status with [`council_status`].
    pub fn from_verdicts(verdicts: Vec<CriticVerdict>) -> Self {
        Council {
            status: council_status(&verdicts),
            verdicts,
            round: None,
        }
    }
}

/// The council status rule (docs/design.md "Words"): any fail → `blocked`, else any warn →
/// `attention`, else any pass → `ok`, none → `pending`. (The OMG seed's `_council_status` named
/// `attention` "running".)
pub fn council_status(verdicts: &[CriticVerdict]) -> CouncilStatus {
    if verdicts.iter().any(|v| v.verdict == Verdict::Fail) {
        CouncilStatus::Blocked
    } else if verdicts.iter().any(|v| v.verdict == Verdict::Warn) {
        CouncilStatus::Attention
    } else if verdicts.is_empty() {
        CouncilStatus::Pending
    } else {
        CouncilStatus::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(verdict: Verdict) -> CriticVerdict {
        CriticVerdict {
            critic: "c".into(),
            verdict,
            confidence: 0.5,
            findings: vec![],
        }
    }

    #[test]
    fn council_status_follows_the_spec_order() {
        assert_eq!(council_status(&[]), CouncilStatus::Pending);
        assert_eq!(council_status(&[v(Verdict::Pass)]), CouncilStatus::Ok);
        assert_eq!(
            council_status(&[v(Verdict::Pass), v(Verdict::Warn)]),
            CouncilStatus::Attention
        );
        assert_eq!(
            council_status(&[v(Verdict::Warn), v(Verdict::Fail), v(Verdict::Pass)]),
            CouncilStatus::Blocked
        );
    }
}
