//! Where workers change code: a git worktree each, or the shared project directory; and
//! what a run recorded about them (`state.json` → `workspace`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How a worker's files are kept apart from the others'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceMode {
    /// A git worktree of its own on branch `crewmux/<run>/<worker>` (default in a git
    /// project).
    #[default]
    Worktree,
    /// The project directory itself, shared with every other shared worker.
    Shared,
}

impl WorkspaceMode {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceMode::Worktree => "worktree",
            WorkspaceMode::Shared => "shared",
        }
    }
}

/// The `[workspace]` table of a team file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSpec {
    /// Default for the team's workers: `worktree` in a git project.
    #[serde(default)]
    pub mode: Option<WorkspaceMode>,
    /// Untracked files or folders (relative to the project) copied into each new worktree,
    /// never committed (e.g. `.env`).
    #[serde(default)]
    pub copy: Vec<String>,
    /// argv run in the worktree before the agent, inside the worker's pane; a non-zero exit
    /// fails the attempt with `setup failed (exit N)`.
    #[serde(default)]
    pub setup: Option<Vec<String>>,
}

/// `+added −removed · N files` of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DiffStat {
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// Files touched.
    pub files: u64,
}

impl std::fmt::Display for DiffStat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "+{} −{} · {} file{}",
            self.added,
            self.removed,
            self.files,
            if self.files == 1 { "" } else { "s" }
        )
    }
}

/// One worker's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerWorkspace {
    /// Top of the worktree.
    pub path: PathBuf,
    /// `crewmux/<run>/<worker>`.
    pub branch: String,
    /// The change so far, `base..worktree` (committed and not).
    #[serde(default)]
    pub diff: Option<DiffStat>,
    /// Commits on the branch since the base.
    #[serde(default)]
    pub commits: u32,
    /// The branch's commit when its last attempt ended (full SHA): what the integration
    /// branch must hold of this worker (`Integration::tips`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The commit its work starts from when that is not the run's base (full SHA): its
    /// worktree's `HEAD` after its upstreams' branches were merged into it (a worker with
    /// `after`; again after a retried upstream's new work came in). Its change — diffstat,
    /// Diff tab, `crewmux diff --worker`, the council's diff rules, the report — is
    /// `start..branch`: what it did on top of what it was given (see [`RunWorkspace::own_base`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// What became of merging its upstreams' branches into it (a worker with `after`).
    #[serde(default, skip_serializing_if = "UpstreamMerges::is_empty")]
    pub upstreams: UpstreamMerges,
    /// The SSH host that also has a worktree of this branch (the worker runs there): its
    /// branch is pushed there before each attempt and fetched back into this worktree
    /// when the attempt ends. `None`: this machine only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// The merges of a downstream worker's upstreams' branches into its worktree, done before
/// it starts. A conflict waits for a merge-fixer working in that worktree; one nobody could
/// resolve is aborted and left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UpstreamMerges {
    /// Upstreams whose branches are merged, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<String>,
    /// The merge that stopped on conflicts and waits for its merge-fixer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<MergeConflict>,
    /// Conflicts a merge-fixer resolved (their upstreams are in `merged` too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<MergeConflict>,
    /// Conflicts left unresolved: the merge was aborted and that upstream's work is not in
    /// the worktree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<MergeConflict>,
    /// git failed other than by a conflict: its message (the worker starts without the
    /// merges that were not done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

impl UpstreamMerges {
    /// Nothing was merged or tried.
    pub fn is_empty(&self) -> bool {
        self == &UpstreamMerges::default()
    }

    /// `id`'s branch was merged or given up on.
    pub fn settled(&self, id: &str) -> bool {
        self.merged.iter().any(|m| m == id) || self.left_out.iter().any(|c| c.theirs == id)
    }
}

/// A merge (into the integration branch, or into a downstream worker's worktree) that
/// stopped on conflicts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeConflict {
    /// Files with conflicts, relative to the repository.
    pub files: Vec<String>,
    /// What was already on the branch: the workers merged before, or `base`.
    pub ours: String,
    /// The worker whose branch was being merged.
    pub theirs: String,
}

/// The integration branch `crewmux/<run>/integration` and its worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Integration {
    pub path: PathBuf,
    pub branch: String,
    /// Workers whose branches are merged, in order.
    #[serde(default)]
    pub merged: Vec<String>,
    /// The merge waiting for a merge-fixer, if any.
    #[serde(default)]
    pub conflict: Option<MergeConflict>,
    /// Conflicts nobody could resolve (no agent to fix, or the merge-fixer left markers):
    /// the merge was aborted, that worker's branch is not in integration, and the workers
    /// after it were merged still.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<MergeConflict>,
    /// The change of the integration branch against the base.
    #[serde(default)]
    pub diff: Option<DiffStat>,
    /// The commit of each worker's branch (full SHA) when a pass last took it in, merged
    /// or left out: a branch that moved since (a later attempt: a retry, a downstream run
    /// again) is merged again, so the integration branch holds every worker's last
    /// attempt.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tips: BTreeMap<String, String>,
}

/// What a run in a git project recorded about its workspaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunWorkspace {
    /// Top of the user's working tree.
    pub repo: PathBuf,
    /// The project directory relative to `repo` (`""` at the top), so a worker's working
    /// directory is `<worktree>/<prefix>`.
    #[serde(default)]
    pub prefix: PathBuf,
    /// The base commit (full SHA) every branch starts from.
    pub base: String,
    /// What the base was asked as (`HEAD`, `--base main`, …).
    pub base_ref: String,
    /// The branch checked out in the user's tree when the run started (`None`: detached
    /// HEAD); `crewmux merge` brings the result into it.
    #[serde(default)]
    pub user_branch: Option<String>,
    /// The base includes the user's uncommitted changes (`--include-uncommitted`).
    #[serde(default)]
    pub uncommitted: bool,
    /// Folder of this run's worktrees: `<project>/.crewmux/worktrees/<run>`.
    pub root: PathBuf,
    /// `[workspace] copy`: copied into each worktree, never committed.
    #[serde(default)]
    pub copy: Vec<String>,
    /// `[workspace] setup`.
    #[serde(default)]
    pub setup: Option<Vec<String>>,
    /// Worktrees by worker id.
    #[serde(default)]
    pub workers: BTreeMap<String, WorkerWorkspace>,
    /// Workers whose worktree is not made yet, in team order: all of them are made when
    /// the first worker of the run launches, so a run halted before (at the clarification
    /// gate) leaves no worktree or branch behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    #[serde(default)]
    pub integration: Option<Integration>,
    /// Fix round whose integration is done (merged without a pending conflict).
    #[serde(default)]
    pub integrated_round: Option<u32>,
}

impl RunWorkspace {
    /// The commit worker `id`'s change is measured from: its `start` (its upstreams' work
    /// merged in), else the run's base.
    pub fn own_base(&self, id: &str) -> &str {
        self.workers
            .get(id)
            .and_then(|w| w.start.as_deref())
            .unwrap_or(&self.base)
    }

    /// The working directory of a worker in a tree whose top is `top`.
    pub fn cwd_in(&self, top: &std::path::Path) -> PathBuf {
        top.join(&self.prefix)
    }
}
