//! The multiplexer of a run with workers on SSH hosts: this machine's backend for local
//! workers, and per host a tmux backend whose calls run through ssh (`tmux::RemoteShell`,
//! with the same control-mode channel as locally). An attempt is routed by its host: a
//! spawn by [`SpawnSpec::host`], everything after by its pane reference, which carries
//! the host as `<host>:%<pane>@<server>` — so a reattached driver routes without a map.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::config::HostSpec;
use super::ssh::SshLink;
use crate::backend::{Launcher, Multiplexer, Poll, SpawnSpec, Spawned, Target};
use crate::domain::BackendKind;
use crate::error::{Error, Result};
use crate::tmux::{RemoteShell, TmuxBackend};

/// Where one host's attempts go: its link and the run's place on it.
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub spec: HostSpec,
    pub link: SshLink,
    pub run_id: String,
    /// When the host's thread last finished a step (see `host_thread`).
    pub progress: super::host_thread::Progress,
}

/// The driver's side of one host: everything that waits on ssh is on its thread.
struct Remote {
    place: Place,
    /// Only for `attach_command` (the viewer's calls, never the driver loop's).
    attach: TmuxBackend,
    thread: super::host_thread::HostThread,
    /// The targets (as the run saves them) and focus of the last poll asked.
    asked_targets: Vec<Target>,
    asked_focus: Option<Target>,
}

/// A run's backend across hosts (see the module docs).
pub struct HostsBackend {
    local: Box<dyn Multiplexer>,
    remotes: BTreeMap<String, Remote>,
    /// Hosts found lost and not yet handed to the driver.
    lost: Vec<(String, String)>,
    /// Attempts left on hosts that were ended there, not yet handed to the driver.
    ended: Vec<(String, Vec<crate::backend::EndedOnHost>)>,
    /// Answers to `check_host` not yet handed to the driver: `(host, answers)`.
    checked: Vec<(String, bool)>,
    /// Batches started on hosts' threads, not yet handed to the driver.
    launched: Vec<crate::backend::HostLaunched>,
    /// Work of ended attempts brought back (or not) on hosts' threads, not yet handed to
    /// the driver.
    brought_back: Vec<crate::backend::WorkBackDone>,
    /// Ends of ended attempts under way on hosts (see `kill`).
    ending: super::kill::Ending,
    /// How long a poll waits for the hosts' answers (see `backend_poll`).
    pub(super) answer_wait: std::time::Duration,
    /// How long a poll may be outstanding before its host reads as not answering.
    pub(super) hung_after: std::time::Duration,
}

/// `<host>:<pane ref>`: a remote pane's reference as the run saves it.
pub fn tag_pane(host: &str, pane_ref: &str) -> String {
    format!("{host}:{pane_ref}")
}

/// The host of a saved pane reference (`None`: this machine) and the reference its tmux
/// server knows.
pub fn untag_pane(pane_ref: &str) -> (Option<&str>, &str) {
    match pane_ref.split_once(':') {
        Some((host, pane)) if pane.starts_with('%') && !host.is_empty() => (Some(host), pane),
        _ => (None, pane_ref),
    }
}

/// The host a target is on, from its pane reference.
fn host_of(t: &Target) -> Option<&str> {
    t.pane_id.as_deref().and_then(|p| untag_pane(p).0)
}

/// What the session's first window on a host shows.
fn remote_home_argv(run_id: &str) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo 'crewmux run {run_id}: the workers on this host are in the other windows'; exec tail -f /dev/null"),
    ]
}

impl HostsBackend {
    /// `local` for this machine's workers and a tmux backend on each of `hosts` for the
    /// run `run_id` (session `session`); `control`: use a control-mode channel per host
    /// (the process that drives the run).
    ///
    /// # Errors
    /// The private directory of SSH control sockets cannot be made.
    pub fn new(
        local: Box<dyn Multiplexer>,
        hosts: &BTreeMap<String, HostSpec>,
        run_id: &str,
        session: &str,
        control: bool,
    ) -> Result<Self> {
        let mut remotes = BTreeMap::new();
        for (name, spec) in hosts {
            let link = SshLink::new(spec)?;
            let shell = RemoteShell {
                ssh: link.prefix(),
                tmux: spec.tmux.clone(),
                host: name.clone(),
            };
            let mut tmux = TmuxBackend::over_ssh(
                &spec.tmux_socket,
                session,
                remote_home_argv(run_id),
                shell.clone(),
            );
            let attach =
                TmuxBackend::over_ssh(&spec.tmux_socket, session, remote_home_argv(run_id), shell);
            if control {
                tmux = tmux.with_control_mode();
            }
            let place = Place {
                spec: spec.clone(),
                link,
                run_id: run_id.to_string(),
                progress: Default::default(),
            };
            let thread = super::host_thread::HostThread::start(super::host_thread::HostSide {
                place: place.clone(),
                tmux,
                reach: super::reach::Reach::Up,
                fetched: HashSet::new(),
                streams: control.then(super::output::Streams::default),
                stuck: None,
                answered: false,
            })?;
            remotes.insert(
                name.clone(),
                Remote {
                    place,
                    attach,
                    thread,
                    asked_targets: vec![],
                    asked_focus: None,
                },
            );
        }
        Ok(HostsBackend {
            local,
            remotes,
            lost: vec![],
            ended: vec![],
            checked: vec![],
            launched: vec![],
            brought_back: vec![],
            ending: super::kill::Ending::default(),
            answer_wait: polling::answer_wait(control),
            hung_after: polling::hung_after(control),
        })
    }

    fn remote(&mut self, host: &str) -> Result<&mut Remote> {
        self.remotes
            .get_mut(host)
            .ok_or_else(|| Error::Other(format!("host {host} is not one of this run's hosts")))
    }
}

impl Place {
    /// The local attempt folder's remote twin.
    pub(in crate::hosts) fn remote_dir(&self, local_log: &Path) -> Option<PathBuf> {
        let local_dir = local_log.parent()?;
        Some(super::remote_attempt_dir(
            &self.spec,
            &self.run_id,
            local_dir,
        ))
    }
}

impl Multiplexer for HostsBackend {
    fn kind(&self) -> BackendKind {
        self.local.kind()
    }

    fn spawn(&mut self, spec: &SpawnSpec) -> Result<Spawned> {
        self.spawn_many(std::slice::from_ref(spec))
            .pop()
            .unwrap_or_else(|| Err(Error::Other("nothing was started".into())))
    }

    fn spawn_many(&mut self, specs: &[SpawnSpec]) -> Vec<Result<Spawned>> {
        let local = &mut self.local;
        let remotes = &mut self.remotes;
        spawning::route(
            specs,
            &mut |group| local.spawn_many(group),
            &mut |host, group| {
                let r = remotes.get(host)?;
                let started = r
                    .thread
                    .call(|reply| super::host_thread::Ask::Spawn(group.to_vec(), reply));
                Some(started.unwrap_or_else(|| {
                    group
                        .iter()
                        .map(|_| Err(Error::Other(format!("host {host}: its thread ended"))))
                        .collect()
                }))
            },
        )
    }

    /// This machine's launcher only: a remote launch goes to its host's own thread
    /// ([`Multiplexer::launch_on_host`]), and asking a thread busy with one for a launcher
    /// here would wait for that launch (a frozen host's: ~50 s).
    fn launcher(&mut self) -> Option<Box<dyn Launcher>> {
        let local = self.local.launcher();
        Some(Box::new(spawning::HostsLauncher { local }))
    }

    fn poll(&mut self, targets: &[Target], focus: Option<&Target>) -> Poll {
        super::poll::poll(self, targets, focus)
    }

    /// Text for a remote pane goes to its host's thread (a failure there is logged).
    fn send_text(&mut self, target: &Target, text: &str) -> Result<()> {
        match host_of(target).map(str::to_string) {
            None => self.local.send_text(target, text),
            Some(h) => {
                self.remote(&h)?.thread.ask(super::host_thread::Ask::Send {
                    target: untagged(target),
                    text: text.to_string(),
                });
                Ok(())
            }
        }
    }

    /// One `ssh <dest> true` on the shared connection, within [`ATTACH_CHECK`]: a host
    /// that hangs (not yet found out by the polls) makes `ssh -t` wait far longer.
    ///
    /// [`ATTACH_CHECK`]: super::reach::ATTACH_CHECK
    fn reachable(&self, target: &Target) -> Result<()> {
        let Some(r) = host_of(target).and_then(|h| self.remotes.get(h)) else {
            return Ok(());
        };
        super::reach::answers_within(&r.place.link, super::reach::ATTACH_CHECK)
    }

    /// ssh's own exit (255) on a host's pane: the host stopped answering (the attach's
    /// keep-alive gave up, see [`SshLink::interactive`]) or the connection failed.
    ///
    /// [`SshLink::interactive`]: super::ssh::SshLink::interactive
    fn attach_ended(&self, target: &Target, status: std::process::ExitStatus) -> Option<String> {
        let h = host_of(target)?;
        (status.code() == Some(255)).then(|| {
            format!("host {h} does not answer (the attach's ssh gave up on it); Enter attaches once it does")
        })
    }

    fn attach_command(&self, target: &Target) -> Option<Command> {
        let Some(h) = host_of(target) else {
            return self.local.attach_command(target);
        };
        let r = self.remotes.get(h)?;
        let local = r.attach.attach_command(&untagged(target))?;
        let mut words = vec![r.place.spec.tmux.clone()];
        words.extend(local.get_args().map(|a| a.to_string_lossy().into_owned()));
        let line = super::ssh::remote_line(&words).ok()?;
        Some(r.place.link.interactive(&line))
    }

    /// Each host's thread ends the attempt when the host answers (now, or when it answers
    /// again: the nonce does not say which host it ran on); the survivors returned are
    /// this machine's, a host's are logged by its thread.
    fn find_window(&mut self, window: &str) -> Option<crate::backend::Spawned> {
        self.local.find_window(window)
    }

    fn end_stale_attempt(&mut self, nonce: &str) -> Vec<u32> {
        for r in self.remotes.values() {
            r.thread.ask(super::host_thread::Ask::EndWhenBack(vec![
                crate::backend::LeftOnHost {
                    nonce: nonce.to_string(),
                    dir: None,
                },
            ]));
        }
        self.local.end_stale_attempt(nonce)
    }

    fn end_on_host_when_back(&mut self, host: &str, left: Vec<crate::backend::LeftOnHost>) {
        match self.remotes.get(host) {
            Some(r) => r.thread.ask(super::host_thread::Ask::EndWhenBack(left)),
            None => tracing::warn!("{}", crate::backend::no_such_host(host)),
        }
    }

    fn take_ended_on_hosts(&mut self) -> Vec<(String, Vec<crate::backend::EndedOnHost>)> {
        self.take_told();
        std::mem::take(&mut self.ended)
    }

    fn launch_on_host(&mut self, host: &str, launch: crate::backend::HostLaunch) -> bool {
        let Some(r) = self.remotes.get(host) else {
            return false;
        };
        r.thread
            .ask(super::host_thread::Ask::Launch(Box::new(launch)));
        true
    }

    fn take_launched_on_hosts(&mut self) -> Vec<crate::backend::HostLaunched> {
        self.take_told();
        std::mem::take(&mut self.launched)
    }

    fn bring_back_on_host(&mut self, host: &str, work: crate::backend::WorkBack) -> bool {
        let Some(r) = self.remotes.get(host) else {
            return false;
        };
        r.thread.ask(super::host_thread::Ask::BringBack(work));
        true
    }

    fn take_brought_back(&mut self) -> Vec<crate::backend::WorkBackDone> {
        self.take_told();
        std::mem::take(&mut self.brought_back)
    }

    fn check_host(&mut self, host: &str) {
        match self.remotes.get(host) {
            Some(r) => r.thread.ask(super::host_thread::Ask::Check),
            None => tracing::warn!("{}", crate::backend::no_such_host(host)),
        }
    }

    fn take_checked_hosts(&mut self) -> Vec<(String, bool)> {
        self.take_told();
        std::mem::take(&mut self.checked)
    }

    fn hosts_not_answering(&self) -> std::collections::BTreeSet<String> {
        self.outages().into_keys().collect()
    }

    /// A kill on a host goes to its thread (a failure there is logged).
    fn signal_on_host(&mut self, host: &str, nonce: &str, hard: bool) -> Result<()> {
        self.remote(host)?
            .thread
            .ask(super::host_thread::Ask::Signal {
                nonce: nonce.to_string(),
                hard,
            });
        Ok(())
    }

    fn reap_on_host(&mut self, host: &str, worker: &str, nonce: &str, grace: Duration) {
        match self.remotes.get(host) {
            Some(r) => self
                .ending
                .begin(r.place.link.clone(), nonce.to_string(), grace, worker),
            None => tracing::warn!("{worker}: {}", crate::backend::no_such_host(host)),
        }
    }

    fn remove_run(&mut self) -> Result<Option<String>> {
        let mut removed: Vec<String> = self.local.remove_run()?.into_iter().collect();
        for (name, r) in &self.remotes {
            match r.thread.call(super::host_thread::Ask::RemoveRun) {
                Some(Ok(Some(what))) => removed.push(format!("{what} on host {name}")),
                Some(Ok(None)) => {}
                Some(Err(e)) => tracing::warn!("host {name}: {e}"),
                None => tracing::warn!("host {name}: its thread ended"),
            }
        }
        Ok((!removed.is_empty()).then(|| removed.join(", ")))
    }

    fn take_lost_hosts(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.lost)
    }

    fn forget_screen(&mut self) {
        self.local.forget_screen();
        for r in self.remotes.values() {
            r.thread.ask(super::host_thread::Ask::ForgetScreen);
        }
    }
}

impl Drop for HostsBackend {
    /// Every host's thread is told to stop first, then all are waited for together, so
    /// hosts that hang cost the leaving one [`LEAVE_WAIT`] in all, not one each.
    ///
    /// [`LEAVE_WAIT`]: super::host_thread::LEAVE_WAIT
    fn drop(&mut self) {
        for r in self.remotes.values_mut() {
            r.thread.close();
        }
        let deadline = std::time::Instant::now() + super::host_thread::LEAVE_WAIT;
        for r in self.remotes.values_mut() {
            r.thread.finish_by(deadline);
        }
    }
}

/// `t` with the pane reference its host's tmux server knows.
fn untagged(t: &Target) -> Target {
    let mut t = t.clone();
    t.pane_id = t.pane_id.as_deref().map(|p| untag_pane(p).1.to_string());
    t
}

#[path = "backend_spawn.rs"]
mod spawning;
pub(in crate::hosts) use spawning::spawn_on;

#[path = "backend_poll.rs"]
mod polling;
pub(super) use polling::outage_line;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_pane_reference_carries_its_host() {
        let tagged = tag_pane("box", "%3@123.456");
        assert_eq!(tagged, "box:%3@123.456");
        assert_eq!(untag_pane(&tagged), (Some("box"), "%3@123.456"));
        assert_eq!(untag_pane("%3@123.456"), (None, "%3@123.456"));
        assert_eq!(untag_pane("%3"), (None, "%3"));
    }
}
