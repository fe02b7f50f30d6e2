//! The fence a worker's agent runs in: a team's `[sandbox]` table, a worker's `sandbox = {…}`
//! and `run --sandbox MODE`, resolved to one [`Sandbox`] per worker (README "Sandbox",
//! docs/design.md "Sandbox").

use serde::{Deserialize, Serialize};

/// How a worker's agent is fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// No fence: the agent runs with the user's rights (the default).
    #[default]
    None,
    /// bubblewrap (`bwrap`): mount, PID and (with `network = "none"`) network namespaces.
    Bwrap,
    /// A Podman or Docker container of `image`.
    Container,
}

impl SandboxMode {
    /// Every mode, in the order messages list them.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::None,
        SandboxMode::Bwrap,
        SandboxMode::Container,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::None => "none",
            SandboxMode::Bwrap => "bwrap",
            SandboxMode::Container => "container",
        }
    }

    /// The mode named `s`, or `None`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a fenced agent reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// The host's network (agents need their API; the default).
    #[default]
    Allow,
    /// A network namespace of its own: loopback only, nothing of the host's.
    None,
}

impl SandboxNetwork {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxNetwork::Allow => "allow",
            SandboxNetwork::None => "none",
        }
    }
}

/// A team's `[sandbox]` table or a worker's `sandbox = { … }`, as written: every field
/// optional, a worker's fields win over the team's one by one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SandboxSpec {
    #[serde(default)]
    pub mode: Option<SandboxMode>,
    #[serde(default)]
    pub network: Option<SandboxNetwork>,
    /// The container image (`mode = "container"` only).
    #[serde(default)]
    pub image: Option<String>,
}

/// A worker's fence, resolved (saved in `state.json`; the default is no fence).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Sandbox {
    #[serde(default)]
    pub mode: SandboxMode,
    #[serde(default)]
    pub network: SandboxNetwork,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

impl Sandbox {
    /// The fence of a worker whose own table is `worker` in a team whose table is `team`:
    /// each field the worker's, else the team's, else the default.
    pub fn resolve(team: Option<&SandboxSpec>, worker: Option<&SandboxSpec>) -> Sandbox {
        let pick = |f: &dyn Fn(&SandboxSpec) -> bool| worker.filter(|w| f(w)).or(team);
        Sandbox {
            mode: pick(&|s| s.mode.is_some())
                .and_then(|s| s.mode)
                .unwrap_or_default(),
            network: pick(&|s| s.network.is_some())
                .and_then(|s| s.network)
                .unwrap_or_default(),
            image: pick(&|s| s.image.is_some()).and_then(|s| s.image.clone()),
        }
    }

    /// No fence (`mode = "none"`), for `skip_serializing_if`.
    pub fn is_none(&self) -> bool {
        self.mode == SandboxMode::None
    }

    /// How `dispatch`, the roster and `status` name it: `none`, `bwrap`, `bwrap, no network`,
    /// `container node:22`.
    pub fn label(&self) -> String {
        let mut s = self.mode.as_str().to_string();
        if let (SandboxMode::Container, Some(i)) = (self.mode, &self.image) {
            s.push(' ');
            s.push_str(i);
        }
        if !self.is_none() && self.network == SandboxNetwork::None {
            s.push_str(", no network");
        }
        s
    }
}

/// The fence `w` of `run` runs in: a worker's own (`flow.sandbox`, set from the team file
/// or, for an added worker, the run's), and for the checks, critics and fixers that judge
/// the team's work the run's (`RunState::sandbox`).
pub fn fence_of<'a>(run: &'a super::RunState, w: &'a super::WorkerState) -> &'a Sandbox {
    use super::WorkerKind;
    match w.kind {
        WorkerKind::Check | WorkerKind::Critic | WorkerKind::Fixer => &run.sandbox,
        WorkerKind::Worker | WorkerKind::Synthesizer => &w.flow.sandbox,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_fields_win_one_by_one_over_the_teams() {
        let team = SandboxSpec {
            mode: Some(SandboxMode::Bwrap),
            network: Some(SandboxNetwork::None),
            image: None,
        };
        let worker = SandboxSpec {
            network: Some(SandboxNetwork::Allow),
            ..Default::default()
        };
        let s = Sandbox::resolve(Some(&team), Some(&worker));
        assert_eq!(
            (s.mode, s.network),
            (SandboxMode::Bwrap, SandboxNetwork::Allow)
        );
        assert_eq!(Sandbox::resolve(None, None), Sandbox::default());
        assert_eq!(
            Sandbox::resolve(Some(&team), None).label(),
            "bwrap, no network"
        );
        let off = SandboxSpec {
            mode: Some(SandboxMode::None),
            ..Default::default()
        };
        assert!(Sandbox::resolve(Some(&team), Some(&off)).is_none());
    }
}
