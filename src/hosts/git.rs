//! Code travels by git for workers on SSH hosts.
//!
//! A remote worker has two worktrees of its branch `crewmux/<run>/<worker>`: the one of
//! this machine (`crate::workspace`, made from the run's base like any worker's), which
//! stays the run's record of its work, and one on the host, where it works:
//! - The project's branches go to one bare repository per project on the host,
//!   `<workdir>/repos/<project folder>.git`, over the host's shared SSH connection (git's
//!   own ssh transport with `GIT_SSH_COMMAND` set to crewmux's ssh options, so the push
//!   rides on the same `ControlMaster` as every other call).
//! - Before each attempt the local branch is pushed to `refs/crewmux-push/<run>/<worker>`
//!   there (a ref no worktree has checked out, so git accepts it), and the host's worktree
//!   `<workdir>/worktrees/<run>/<worker>` is made from it (`git worktree add -B`, with the
//!   `[workspace] copy` files) or fast-forwarded to it. The base is thus the run's base
//!   (with `--include-uncommitted`, its snapshot), plus what upstream merges brought in.
//! - When the attempt ends, what the worker left is committed on the host by the same
//!   rules as here (`workspace::commit::commit_with` through `Git::over_ssh`), and the
//!   branch is fetched back and fast-forwarded into the local worktree. From then on
//!   integration, checks, council, diff and `merge` read the local branch as for a local
//!   worker. An attempt that ended while the host did not answer is fetched when the host
//!   answers again (its exit is settled then), also after a reattach.
//! - `clean` removes the host's worktree, branch and pushed ref with the local ones.
//! - A remote worker needs a worktree: a project that is not a git repository, or a remote
//!   worker set to the shared project directory, is refused when the run is planned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::config::HostSpec;
use super::ssh::{remote_line, SshLink, CALL_LIMIT};
use crate::domain::{RunState, RunWorkspace, WorkerState};
use crate::error::{Error, Result};
use crate::workspace::git::Git;

/// The repository on `host` that receives the branches of the project whose top is
/// `repo` here: `<workdir>/repos/<folder name>.git`.
pub fn remote_repo(host: &HostSpec, repo: &Path) -> PathBuf {
    let name = repo
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "project".into());
    host.workdir.join("repos").join(format!("{name}.git"))
}

/// A worker's worktree on `host`: `<workdir>/worktrees/<run>/<worker>`.
pub fn remote_worktree(host: &HostSpec, run_id: &str, worker: &str) -> PathBuf {
    host.workdir.join("worktrees").join(run_id).join(worker)
}

/// The ref of the host's repository the local branch is pushed to before an attempt
/// (`refs/crewmux-push/<run>/<worker>`: not `refs/<branch>`, which git would find
/// ambiguous with the branch itself).
fn pushed_ref(branch: &str) -> String {
    let tail = branch.strip_prefix("crewmux/").unwrap_or(branch);
    format!("refs/crewmux-push/{tail}")
}

/// The working directory on `host` of `w`, a worker with a worktree: its worktree there,
/// the project's place in it, and its `cwd` (an absolute `cwd` is a path of the host).
/// `None` for a worker without a worktree.
pub fn remote_cwd(state: &RunState, w: &WorkerState, host: &HostSpec) -> Option<PathBuf> {
    let ws = state.workspace.as_ref()?;
    ws.workers.get(&w.id)?;
    if let Some(c) = w.cwd.as_ref().filter(|c| c.is_absolute()) {
        return Some(c.clone());
    }
    let dir = ws.cwd_in(&remote_worktree(host, &state.run_id, &w.id));
    Some(match &w.cwd {
        Some(rel) => dir.join(rel),
        None => dir,
    })
}

/// `GIT_SSH_COMMAND` for `link`: ssh with the options of every call (connection sharing,
/// no questions, bounded waits); git appends the destination and its own command.
fn git_ssh_command(link: &SshLink) -> Result<String> {
    let mut words = vec!["ssh".to_string()];
    words.extend(link.options());
    remote_line(&words)
}

/// The git URL of `path` on the host of `link` (`ssh://<dest><path>`).
fn git_url(link: &SshLink, path: &Path) -> String {
    let dest = link.dest();
    if dest.starts_with("ssh://") {
        format!("{}{}", dest.trim_end_matches('/'), path.display())
    } else {
        format!("ssh://{dest}{}", path.display())
    }
}

/// Git in the local folder `dir`, reaching the host of `link` over its shared connection.
fn local_git(dir: &Path, link: &SshLink) -> Result<Git> {
    Ok(Git::new(dir).with_env("GIT_SSH_COMMAND", &git_ssh_command(link)?))
}

/// Before attempts of `workers` start: every one of them that runs on an SSH host and
/// has a worktree gets its branch pushed to that host and its worktree there made or
/// brought up to date (see the module docs). Returns why each worker whose worktree on
/// its host could not be made cannot start, by worker id; the others go on.
pub fn send_branches(state: &mut RunState, workers: &[String]) -> BTreeMap<String, String> {
    let mut failed = BTreeMap::new();
    let Some(ws) = state.workspace.as_ref() else {
        return failed;
    };
    let mut by_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in workers {
        let host = state.worker(id).and_then(|w| w.host.clone());
        if let Some(host) = host.filter(|_| ws.workers.contains_key(id)) {
            by_host.entry(host).or_default().push(id.clone());
        }
    }
    if by_host.is_empty() {
        return failed;
    }
    let hosts = match super::run_hosts(&state.run_dir) {
        Ok(h) => h,
        Err(e) => {
            for id in by_host.into_values().flatten() {
                failed.insert(id, format!("cannot reach its host: {e}"));
            }
            return failed;
        }
    };
    let (project, run_id) = (state.project_dir.clone(), state.run_id.clone());
    let mut sent = vec![];
    for (host, ids) in by_host {
        let Some(spec) = hosts.get(&host) else {
            for id in ids {
                failed.insert(id, format!("host `{host}` is not one of this run's hosts"));
            }
            continue;
        };
        for (id, r) in send_to_host(spec, ws, &project, &run_id, &ids) {
            match r {
                Ok(()) => sent.push((id, host.clone())),
                Err(e) => {
                    tracing::warn!("{id}: cannot make its worktree on host {host}: {e}");
                    failed.insert(id, format!("cannot make its worktree on host {host}: {e}"));
                }
            }
        }
    }
    if let Some(ws) = state.workspace.as_mut() {
        for (id, host) in sent {
            if let Some(w) = ws.workers.get_mut(&id) {
                w.host = Some(host);
            }
        }
    }
    failed
}

/// The repository on the host, one push of every branch of `ids`, then each worktree;
/// one result per id (on the host's own thread, `launch_remote`).
pub(super) fn send_to_host(
    spec: &HostSpec,
    ws: &RunWorkspace,
    project: &Path,
    run_id: &str,
    ids: &[String],
) -> Vec<(String, Result<()>)> {
    let all_fail = |e: Error| {
        let text = e.to_string();
        ids.iter()
            .map(|id| (id.clone(), Err(Error::Other(text.clone()))))
            .collect()
    };
    let link = match SshLink::new(spec) {
        Ok(l) => l,
        Err(e) => return all_fail(e),
    };
    let repo = remote_repo(spec, &ws.repo);
    if let Err(e) = push(&link, ws, &repo, ids) {
        return all_fail(e);
    }
    let made = seeds_tar(project, ws).and_then(|seeds| {
        let script = worktrees_script(spec, ws, &repo, run_id, ids, seeds.is_some())?;
        link.run(&script, seeds.as_deref(), CALL_LIMIT)
    });
    match made {
        Ok(out) => worktree_results(&String::from_utf8_lossy(&out.stdout), ids),
        Err(e) => all_fail(e),
    }
}

/// Read what [`worktrees_script`] printed: one result per id (an id it said nothing of
/// failed).
fn worktree_results(out: &str, ids: &[String]) -> Vec<(String, Result<()>)> {
    ids.iter()
        .map(|id| {
            let said = out.lines().find_map(|l| {
                let (verdict, rest) = l.split_once(' ')?;
                let (who, why) = rest.split_once(' ').unwrap_or((rest, ""));
                (who == id).then(|| (verdict == "ok", why.trim().to_string()))
            });
            let r = match said {
                Some((true, _)) => Ok(()),
                Some((false, why)) => Err(Error::Other(why)),
                None => Err(Error::Other(format!(
                    "the host said nothing of its worktree: {}",
                    out.trim()
                ))),
            };
            (id.clone(), r)
        })
        .collect()
}

/// Make the bare repository on the host when it is missing (`git init` is idempotent)
/// and push the branches of `ids` to their refs there, in one push.
fn push(link: &SshLink, ws: &RunWorkspace, repo: &Path, ids: &[String]) -> Result<()> {
    let q = |p: &Path| remote_line(&[p.display().to_string()]);
    let parent = repo.parent().unwrap_or(repo);
    link.run(
        &format!("mkdir -p {} && git init --bare -q {}", q(parent)?, q(repo)?),
        None,
        CALL_LIMIT,
    )?;
    let mut args = vec![
        "push".to_string(),
        "--quiet".into(),
        // The user's pre-push hooks guard their own remotes, not crewmux's transport.
        "--no-verify".into(),
        git_url(link, repo),
    ];
    for id in ids {
        if let Some(w) = ws.workers.get(id) {
            args.push(format!(
                "+refs/heads/{}:{}",
                w.branch,
                pushed_ref(&w.branch)
            ));
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    local_git(&ws.repo, link)?.run(&args)?;
    Ok(())
}

/// One shell script for the host: for each worker of `ids`, make its worktree from the
/// pushed ref (with the `copy` files from the tar stream on stdin when `seeds`), or
/// fast-forward it when it is there already; it prints `ok <id>` or `fail <id> <why>`
/// for each.
fn worktrees_script(
    spec: &HostSpec,
    ws: &RunWorkspace,
    repo: &Path,
    run_id: &str,
    ids: &[String],
    seeds: bool,
) -> Result<String> {
    let q = |p: &Path| remote_line(&[p.display().to_string()]);
    let mut script = String::new();
    if seeds {
        script.push_str("seeds=$(mktemp) && cat > \"$seeds\" || exit 1\n");
    }
    for id in ids {
        let Some(w) = ws.workers.get(id) else {
            continue;
        };
        let wt = remote_worktree(spec, run_id, id);
        let seed_step = if seeds {
            format!(
                " && mkdir -p {dir} && tar -xf \"$seeds\" -C {dir}",
                dir = q(&ws.cwd_in(&wt))?
            )
        } else {
            String::new()
        };
        let step = format!(
            "if [ -e {wt}/.git ]; then git -C {wt} merge --ff-only -q {rf}; \
             else git -C {repo} worktree prune && mkdir -p {parent} && \
             git -C {repo} worktree add -q -B {br} {wt} {rf}{seed_step}; fi",
            wt = q(&wt)?,
            repo = q(repo)?,
            parent = q(wt.parent().unwrap_or(&wt))?,
            rf = remote_line(&[pushed_ref(&w.branch)])?,
            br = remote_line(&[&w.branch])?,
        );
        let id = remote_line(&[id])?;
        script.push_str(&format!(
            "if out=$( {{ {step}; }} 2>&1 ); then echo ok {id}; \
             else printf 'fail %s %s\\n' {id} \"$(printf '%s' \"$out\" | tr '\\n' ' ')\"; fi\n"
        ));
    }
    if seeds {
        script.push_str("rm -f \"$seeds\"\n");
    }
    Ok(script)
}

/// The `[workspace] copy` entries of the project as one tar stream (`None`: none to
/// copy). A missing entry is skipped with a warning, as for a local worktree.
fn seeds_tar(project: &Path, ws: &RunWorkspace) -> Result<Option<Vec<u8>>> {
    if ws.copy.is_empty() {
        return Ok(None);
    }
    let mut tar = tar::Builder::new(Vec::new());
    tar.follow_symlinks(true);
    for entry in &ws.copy {
        let from = project.join(entry);
        let added = if from.is_dir() {
            tar.append_dir_all(entry, &from)
        } else if from.exists() {
            tar.append_path_with_name(&from, entry)
        } else {
            tracing::warn!(
                "[workspace] copy: {} does not exist; skipped",
                from.display()
            );
            continue;
        };
        added.map_err(|e| Error::io(&from, e))?;
    }
    tar.into_inner()
        .map(Some)
        .map_err(|e| Error::io(project, e))
}

/// The SSH host that holds the work of `worker`'s current attempt: the attempt runs there
/// and its worktree there was made. `None`: it has nothing to bring back.
pub fn worktree_host<'a>(state: &'a RunState, worker: &str) -> Option<&'a str> {
    let w = state.workspace.as_ref()?.workers.get(worker)?;
    let ran_there = state.worker(worker).and_then(|s| s.host.as_deref());
    w.host.as_deref().filter(|h| Some(*h) == ran_there)
}

/// When an attempt of `worker` ends on its host: commit what it left in its worktree
/// there (subject `crewmux: <worker> attempt <n>`, the rules of a local commit), fetch
/// its branch and fast-forward the local worktree to it. Nothing for a worker that did
/// not run on a host of its worktree.
///
/// # Errors
/// The host cannot be reached, a git call fails there or here (the work stays on the
/// host, and a later attempt end or integration tries again).
pub fn fetch_back(state: &RunState, worker: &str, attempt: u32) -> Result<()> {
    let (Some(ws), Some(host)) = (state.workspace.as_ref(), worktree_host(state, worker)) else {
        return Ok(());
    };
    let Some(w) = ws.workers.get(worker) else {
        return Ok(());
    };
    let spec = super::run_hosts(&state.run_dir)?
        .remove(host)
        .ok_or_else(|| Error::Other(format!("host {host} is not one of this run's hosts")))?;
    let link = SshLink::new(&spec)?;
    let wt = remote_worktree(&spec, &state.run_id, worker);
    crate::workspace::commit::commit_with(
        &Git::over_ssh(link.prefix(), &wt),
        ws,
        &state.run_id,
        worker,
        &format!("crewmux: {worker} attempt {attempt}"),
    )?;
    let git = local_git(&w.path, &link)?;
    let repo = remote_repo(&spec, &ws.repo);
    git.run(&[
        "fetch",
        "--quiet",
        "--no-tags",
        &git_url(&link, &repo),
        &format!("refs/heads/{}", w.branch),
    ])?;
    git.run(&["merge", "--ff-only", "--quiet", "FETCH_HEAD"])?;
    Ok(())
}

/// After `clean` removed the local worktrees of `removed` (worker ids): remove their
/// worktrees, branches and pushed refs on the hosts the run made something on
/// (`super::purge::made_on`). One line per worker removed, and what could not be removed,
/// per host (a host that fails is not asked again for its other workers; the caller says
/// it, `super::purge::left_lines`).
pub fn clean_remote(state: &RunState, removed: &[String]) -> (Vec<String>, super::purge::Left) {
    let mut left = super::purge::Left::new();
    let Some(ws) = state.workspace.as_ref() else {
        return (vec![], left);
    };
    let mut lines = vec![];
    let hosts = match super::run_hosts(&state.run_dir) {
        Ok(h) => h,
        Err(e) => return (vec![format!("cannot reach the run's hosts: {e}")], left),
    };
    let made = super::purge::made_on(state);
    for id in removed {
        let Some((w, host)) = ws
            .workers
            .get(id)
            .and_then(|w| Some((w, w.host.as_deref()?)))
        else {
            continue;
        };
        if !made.contains(host) {
            continue;
        }
        let Some(spec) = hosts.get(host) else {
            lines.push(format!(
                "host {host} of {id} is not in this run's hosts.json: its worktree there stays"
            ));
            continue;
        };
        let wt = remote_worktree(spec, &state.run_id, id);
        let what = format!("{} (branch {})", wt.display(), w.branch);
        if let Some(l) = left.get_mut(host) {
            l.items.push(what);
            continue;
        }
        match remove_there(spec, ws, &wt, &w.branch) {
            Ok(true) => lines.push(format!(
                "removed {} and branch {} on host {host}",
                wt.display(),
                w.branch
            )),
            // Already gone there (an earlier clean).
            Ok(false) => {}
            Err(e) => super::purge::leave(&mut left, host, &e, what),
        }
    }
    (lines, left)
}

/// One ssh call: the worktree, the branch and the pushed ref go from the host's repository;
/// true when any of them was there to remove.
fn remove_there(spec: &HostSpec, ws: &RunWorkspace, wt: &Path, branch: &str) -> Result<bool> {
    let link = SshLink::new(spec)?;
    let repo = remote_line(&[remote_repo(spec, &ws.repo).display().to_string()])?;
    // Prints `there` when the worktree, the branch or the pushed ref was there to remove.
    let script = format!(
        "if [ -e {wt} ] || git -C {repo} rev-parse --verify -q refs/heads/{br} >/dev/null 2>&1 \
         || git -C {repo} rev-parse --verify -q {rf} >/dev/null 2>&1; then echo there; fi; \
         git -C {repo} worktree remove --force {wt} 2>/dev/null; rm -rf {wt}; \
         git -C {repo} worktree prune; \
         git -C {repo} branch -D -q {br} 2>/dev/null; git -C {repo} update-ref -d {rf} 2>/dev/null; true",
        wt = remote_line(&[wt.display().to_string()])?,
        br = remote_line(&[branch])?,
        rf = remote_line(&[pushed_ref(branch)])?,
    );
    let out = link.run(&script, None, CALL_LIMIT)?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l == "there"))
}

/// Refuse, before anything is made, a run whose workers on SSH hosts would have no
/// worktree: `remote` are `(worker, host)` of the workers that run on a host, `worktrees`
/// the workers the workspace plan gives a worktree (`None`: no plan, because the project is
/// not a git repository or no worker wants a worktree).
///
/// # Errors
/// [`Error::Usage`] (exit 2), one line naming the first such worker and the fix.
pub fn refuse_without_worktree(
    project: &Path,
    remote: &[(&str, &str)],
    worktrees: Option<&[String]>,
) -> Result<()> {
    let Some(&(worker, host)) = remote.first() else {
        return Ok(());
    };
    let in_git = || {
        Git::new(project)
            .output(&["rev-parse", "--is-inside-work-tree"])
            .is_ok_and(|o| o.ok())
    };
    let Some(worktrees) = worktrees.or_else(|| in_git().then_some(&[][..])) else {
        return Err(Error::Usage(format!(
            "worker `{worker}` runs on host `{host}`, but {} is not a git repository: code reaches a host by git; run `git init` and commit, or run the worker on local",
            project.display()
        )));
    };
    match remote.iter().find(|(w, _)| !worktrees.iter().any(|t| t == w)) {
        Some((worker, host)) => Err(Error::Usage(format!(
            "worker `{worker}` runs on host `{host}` but in the shared project directory, which only this machine has: set its workspace = \"worktree\", or run it on local"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
#[path = "git_tests.rs"]
mod tests;
