//! An SSH host of the test's own: `sshd` on a free loopback port with its host key, the
//! client key, `authorized_keys`, the known-hosts file and both configs in a temporary
//! directory (never the machine's own SSH setup), and the host's `workdir` in another.
//! The "remote" tmux server runs on this machine under a socket of its own, killed on
//! drop with the sshd. Without `sshd`/`ssh` a test says so loudly and skips;
//! `CREWMUX_REQUIRE_SSH=1` (set by CI) turns the skip into a failure.
//!
//! The host does not depend on this machine's shell start-up files: sshd runs every
//! command through the user's login shell, and bash run by sshd reads `~/.bashrc` even
//! for `ssh host true` (zsh its `~/.zshenv`). A stale lock in one (pyenv's rehash waits
//! on `~/.pyenv/shims/.pyenv-shim` for good) once made every ssh to the host hang and
//! every remote worker of the `hosts*` tests run locally, unnoticed. So the host's
//! sessions get a `HOME` of their own (an empty directory), `~/.ssh/rc` is off, and
//! start-up fails at once, naming the cause, when the host's shell does not answer a
//! plain `true` within [`SHELL_ANSWER`] after sshd let the test in.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

use super::procs;

/// Set by CI: a test that needs sshd fails instead of skipping when it is missing.
pub const REQUIRE_SSH_ENV: &str = "CREWMUX_REQUIRE_SSH";
/// Where Debian/Ubuntu's openssh-server puts sshd; it must be run by absolute path.
const SSHD: &str = "/usr/sbin/sshd";
/// The destination the tests' ssh config defines.
pub const SSH_DEST: &str = "crewmux-test-host";
/// The file in the host's directory naming the test process that started its sshd, so a
/// later test process ends an sshd whose test was killed ([`sweep_dead_tests`]).
const OWNER_FILE: &str = "test.pid";

/// How long the host's shell may take to answer `true` once sshd has let the test in
/// (a few ms on a quiet machine; generous for a loaded one).
pub const SHELL_ANSWER: Duration = Duration::from_secs(10);
/// How long the test's own ssh calls to the host may take before the test fails.
const SIDE_DOOR_LIMIT: Duration = Duration::from_secs(60);

static NEXT: AtomicU32 = AtomicU32::new(0);

/// True when sshd, ssh and ssh-keygen can be used (and tmux: the host runs it);
/// otherwise says so loudly (and panics under `CREWMUX_REQUIRE_SSH=1`).
pub fn sshd_ready(test: &str) -> bool {
    if !super::tmux_ready(test) {
        return false;
    }
    let has = |p: &str, arg: &str| {
        Command::new(p)
            .arg(arg)
            .stdin(Stdio::null())
            .output()
            .is_ok()
    };
    let ok = Path::new(SSHD).exists() && has("ssh", "-V") && has("ssh-keygen", "-?");
    if !ok {
        if std::env::var(REQUIRE_SSH_ENV).as_deref() == Ok("1") {
            panic!("{test}: sshd and ssh are required ({REQUIRE_SSH_ENV}=1) but missing");
        }
        eprintln!(
            "\n!!! SKIPPED {test}: {SSHD} or ssh is not installed; install openssh-server and openssh-client to run it !!!\n"
        );
    }
    ok
}

/// A running sshd and everything a client needs to reach it.
pub struct SshHost {
    pub dir: tempfile::TempDir,
    /// The host's `workdir`.
    pub workdir: tempfile::TempDir,
    /// The tmux socket name crewmux uses on the host.
    pub tmux_socket: String,
    sshd: Option<Child>,
}

fn keygen(path: &Path) {
    let st = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen runs");
    assert!(st.success(), "ssh-keygen {}", path.display());
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The login shell sshd runs the host's commands with (`getent passwd`), for messages.
fn login_shell() -> String {
    let out = Command::new("getent").args(["passwd", &user()]).output();
    out.ok()
        .and_then(|o| {
            let line = String::from_utf8_lossy(&o.stdout).trim().to_string();
            line.rsplit(':').next().map(str::to_string)
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "the login shell".into())
}

/// Write `text` as `<project>/.crewmux/hosts.toml`.
pub fn write_hosts(project: &Path, text: &str) {
    std::fs::create_dir_all(project.join(".crewmux")).unwrap();
    std::fs::write(project.join(".crewmux").join("hosts.toml"), text).unwrap();
}

/// What one `true` sent to the host came to.
enum Probe {
    /// It ran and ended with 0.
    Answered,
    /// sshd let the test in, and the shell did not run `true` in time.
    ShellSilent,
    /// Not in (yet): refused, failed or still logging in.
    NotIn,
}

impl SshHost {
    /// Start sshd and wait (bounded) until a client gets in.
    pub fn start() -> SshHost {
        SshHost::start_with_env(&[])
    }

    /// As [`SshHost::start`], with `env` set in every session on the host (e.g. `PATH`:
    /// what the host's commands find first). sshd takes one `SetEnv` line only: this is
    /// the way to add one.
    pub fn start_with_env(env: &[(&str, &str)]) -> SshHost {
        sweep_dead_tests();
        let dir = tempfile::tempdir().unwrap();
        let workdir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let home = d.join("home");
        std::fs::create_dir(&home).unwrap();
        let set_env: String = std::iter::once(("HOME", home.to_str().unwrap()))
            .chain(env.iter().copied())
            .map(|(k, v)| {
                assert!(!v.contains(char::is_whitespace), "SetEnv {k}={v}");
                format!(" {k}={v}")
            })
            .collect();
        std::fs::write(d.join(OWNER_FILE), std::process::id().to_string()).unwrap();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}", host_pub.trim()),
        )
        .unwrap();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 PubkeyAuthentication yes\nLogLevel ERROR\nPermitUserRC no\nSetEnv{set_env}\n",
                d = d.display()
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host {SSH_DEST}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {d}/client_key\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  \
                 StrictHostKeyChecking yes\n",
                user = user(),
                d = d.display()
            ),
        )
        .unwrap();
        // sshd running as root wants its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut host = SshHost {
            tmux_socket: format!(
                "crewmux-test-ssh-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::SeqCst)
            ),
            sshd: None,
            dir,
            workdir,
        };
        host.start_sshd();
        host
    }

    /// Start (again) sshd on the same port and wait until a client gets in.
    pub fn start_sshd(&mut self) {
        let d = self.dir.path();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
            .spawn()
            .expect("sshd starts");
        self.sshd = Some(child);
        // Room for a few probes on a loaded machine (one may take SHELL_ANSWER).
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            match self.probe() {
                Probe::Answered => return,
                Probe::ShellSilent => panic!(
                    "the test host's shell ({}) did not answer `true` within {SHELL_ANSWER:?} \
                     after sshd let the test in: a start-up file of that shell hangs (the \
                     system's, or one in the host's HOME {}); ssh -v said: {}",
                    login_shell(),
                    self.home().display(),
                    self.dir.path().join("probe.log").display()
                ),
                Probe::NotIn if Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Probe::NotIn => panic!(
                    "sshd did not let the test in: {}",
                    std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
                ),
            }
        }
    }

    /// One `ssh -v … true` to the host, ended after [`SHELL_ANSWER`]; its debug lines go
    /// to `probe.log`, which tells a refused or unfinished login from a silent shell.
    fn probe(&self) -> Probe {
        let log = self.dir.path().join("probe.log");
        let mut child = Command::new("ssh")
            .arg("-v")
            .arg("-F")
            .arg(self.ssh_config())
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=5",
                SSH_DEST,
                "true",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("ssh runs");
        let status = child.wait_timeout(SHELL_ANSWER).expect("wait for ssh");
        if status.is_none() {
            // Killed and reaped here; an error means it ended by itself meanwhile.
            let _ = child.kill();
            let _ = child.wait();
        }
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        match status {
            Some(st) if st.success() => Probe::Answered,
            None if said.contains("Authenticated to") => Probe::ShellSilent,
            _ => Probe::NotIn,
        }
    }

    /// Stop sshd for good (connections already open stay until [`drop_connections`]).
    pub fn stop_sshd(&mut self) {
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Freeze the host: SIGSTOP sshd and every sshd process under it (each connection's),
    /// so connections already open hang instead of failing and new ones are never
    /// answered. [`thaw`](Self::thaw) undoes it. Returns the pids stopped.
    pub fn freeze(&self) -> Vec<u32> {
        let Some(root) = self.sshd.as_ref().map(Child::id) else {
            return vec![];
        };
        // sshd and its connections' (`sshd-session` on newer OpenSSH), not what they run.
        let all = procs::tree(&procs::all(), root, |comm| comm.starts_with("sshd"));
        let missed = procs::signal(&all, procs::Signal::SIGSTOP);
        assert!(missed.is_empty(), "SIGSTOP {missed:?}");
        all
    }

    /// Let the processes [`freeze`](Self::freeze) stopped go on.
    pub fn thaw(&self, pids: &[u32]) {
        // One may have ended meanwhile; the rest still get theirs.
        procs::signal(pids, procs::Signal::SIGCONT);
    }

    /// The `HOME` of the host's sessions: a directory of the test's own, empty unless a
    /// test writes into it.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The ssh config file the client uses.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// Run a command on the host with the test's own client config (no connection
    /// sharing: this is the test's side door).
    /// Fails the test when it has not ended within a minute (a hung host shell).
    pub fn ssh(&self, remote: &[&str]) -> std::process::Output {
        let child = Command::new("ssh")
            .arg("-F")
            .arg(self.ssh_config())
            .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", SSH_DEST])
            .args(remote)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ssh runs");
        super::bounded::output_within(child, SIDE_DOOR_LIMIT).unwrap_or_else(|| {
            panic!("ssh {remote:?} to the test host did not end within {SIDE_DOOR_LIMIT:?}")
        })
    }

    /// The `[hosts.NAME]` table of this host (lost after 3 s without an answer).
    pub fn hosts_toml(&self, name: &str) -> String {
        self.hosts_toml_lost_after(name, 3)
    }

    /// As [`hosts_toml`](Self::hosts_toml), lost after `secs` s without an answer.
    pub fn hosts_toml_lost_after(&self, name: &str, secs: u64) -> String {
        format!(
            "[hosts.{name}]\nssh = \"{SSH_DEST}\"\nssh_args = [\"-F\", \"{}\"]\nworkdir = \"{}\"\ntmux_socket = \"{}\"\nmax_workers = 4\nlost_after_s = {secs}\n",
            self.ssh_config().display(),
            self.workdir.path().display(),
            self.tmux_socket
        )
    }

    /// Write `<project>/.crewmux/hosts.toml` naming this host `name`.
    pub fn write_hosts_file(&self, project: &Path, name: &str) {
        write_hosts(project, &self.hosts_toml(name));
    }

    /// As [`write_hosts_file`](Self::write_hosts_file), the host lost only after `secs` s
    /// without an answer (300: long after the test is over, so it comes back as itself).
    pub fn write_hosts_file_lost_after(&self, project: &Path, name: &str, secs: u64) {
        write_hosts(project, &self.hosts_toml_lost_after(name, secs));
    }

    /// The private directory crewmux keeps its SSH control sockets in for this test
    /// (its `XDG_RUNTIME_DIR`).
    pub fn runtime_dir(&self) -> PathBuf {
        let p = self.dir.path().join("rt");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Kill every ssh client crewmux started for this test (the control-mode channel and
    /// the shared connection): they are the ones whose command line names the test's
    /// private control directory.
    pub fn kill_ssh_clients(&self) -> usize {
        let needle = self.runtime_dir().display().to_string();
        let clients: Vec<u32> = procs::all()
            .into_iter()
            .filter(|p| p.cmdline.starts_with("ssh") && p.cmdline.contains(&needle))
            .map(|p| p.pid)
            .collect();
        procs::kill_all(&clients);
        clients.len()
    }

    /// End the shared SSH connections crewmux left open (ControlPersist).
    /// Bounded: a master stuck on a frozen host is killed with the other clients on drop.
    pub fn drop_connections(&self) {
        let exit = Command::new("ssh")
            .arg("-F")
            .arg(self.ssh_config())
            .arg("-o")
            .arg(format!(
                "ControlPath={}/crewmux-ssh/{}",
                self.runtime_dir().display(),
                // The name crewmux gives the socket of this destination and `ssh_args`.
                crewmux::hosts::ssh::control_name(
                    SSH_DEST,
                    &["-F".to_string(), self.ssh_config().display().to_string()]
                )
            ))
            .args(["-O", "exit", SSH_DEST])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if let Ok(child) = exit {
            let _ = super::bounded::output_within(child, Duration::from_secs(10));
        }
    }
}

impl Drop for SshHost {
    /// Everything of the host ends with the test, also a failed one and a host left
    /// frozen: the shared connections, sshd and every process under it (SIGKILL ends a
    /// stopped one too), the ssh clients crewmux started for the test, the host's tmux
    /// server (a daemon, under no sshd) and anything left working in the host's HOME or
    /// `workdir` (a worker's `setsid` child outlives its pane).
    fn drop(&mut self) {
        self.drop_connections();
        if let Some(mut c) = self.sshd.take() {
            procs::kill_all(&procs::tree(&procs::all(), c.id(), |_| true));
            let _ = c.wait();
        }
        self.kill_ssh_clients();
        procs::end_server(&self.tmux_socket);
        for dir in [self.dir.path(), self.workdir.path()] {
            procs::kill_all(&procs::working_in(dir));
        }
    }
}

/// Once per test process: end the sshd (and what runs under it) of every test process
/// that is gone, found by the [`OWNER_FILE`] beside its config.
fn sweep_dead_tests() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        let all = procs::all();
        for p in &all {
            let Some(config) = p.cmdline.strip_prefix(&format!("{SSHD} -D -e -f ")) else {
                continue;
            };
            let Some(dir) = Path::new(config).parent() else {
                continue;
            };
            let owner = std::fs::read_to_string(dir.join(OWNER_FILE))
                .ok()
                .and_then(|o| o.trim().parse::<u32>().ok());
            if owner.is_some_and(|o| !procs::alive(o)) {
                procs::kill_all(&procs::tree(&all, p.pid, |_| true));
            }
        }
    });
}
