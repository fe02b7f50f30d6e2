//! An SSH host of the test's own: `sshd` on a free loopback port with its host key, the
//! client key, `authorized_keys`, the known-hosts file and both configs in a temporary
//! directory (never the machine's own SSH setup), and the host's `workdir` in another.
//! The "remote" tmux server runs on this machine under a socket of its own, killed on
//! drop with the sshd. Without `sshd`/`ssh` a test says so loudly and skips;
//! `CREWMUX_REQUIRE_SSH=1` (set by CI) turns the skip into a failure.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Set by CI: a test that needs sshd fails instead of skipping when it is missing.
pub const REQUIRE_SSH_ENV: &str = "CREWMUX_REQUIRE_SSH";
/// Where Debian/Ubuntu's openssh-server puts sshd; it must be run by absolute path.
const SSHD: &str = "/usr/sbin/sshd";
/// The destination the tests' ssh config defines.
pub const SSH_DEST: &str = "crewmux-test-host";

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

impl SshHost {
    /// Start sshd and wait (bounded) until a client gets in.
    pub fn start() -> SshHost {
        SshHost::start_with("")
    }

    /// As [`SshHost::start`], with `extra` lines at the end of the sshd config (e.g.
    /// `SetEnv PATH=…`: what the host's commands find first).
    pub fn start_with(extra: &str) -> SshHost {
        let dir = tempfile::tempdir().unwrap();
        let workdir = tempfile::tempdir().unwrap();
        let d = dir.path();
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
                 PubkeyAuthentication yes\nLogLevel ERROR\n{extra}",
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
        let ok = super::wait_for(
            || self.ssh(&["true"]).status.success(),
            Duration::from_secs(20),
        );
        assert!(
            ok,
            "sshd did not let the test in: {}",
            std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
        );
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
        let mut all = vec![root];
        // Children before their parents are found, so walk until nothing new turns up.
        loop {
            let before = all.len();
            for e in std::fs::read_dir("/proc").unwrap().flatten() {
                let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                    continue;
                };
                let Some((comm, rest)) = stat.split_once(") ") else {
                    continue;
                };
                let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
                if comm.ends_with("(sshd")
                    && ppid.is_some_and(|p| all.contains(&p))
                    && !all.contains(&pid)
                {
                    all.push(pid);
                }
            }
            if all.len() == before {
                break;
            }
        }
        for pid in &all {
            let st = Command::new("kill")
                .args(["-STOP", &pid.to_string()])
                .status();
            assert!(st.is_ok_and(|s| s.success()), "SIGSTOP {pid}");
        }
        all
    }

    /// Let the processes [`freeze`](Self::freeze) stopped go on.
    pub fn thaw(&self, pids: &[u32]) {
        for pid in pids {
            // One may have ended meanwhile; the rest still get theirs.
            let _ = Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status();
        }
    }

    /// The ssh config file the client uses.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// Run a command on the host with the test's own client config (no connection
    /// sharing: this is the test's side door).
    pub fn ssh(&self, remote: &[&str]) -> std::process::Output {
        Command::new("ssh")
            .arg("-F")
            .arg(self.ssh_config())
            .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=5", SSH_DEST])
            .args(remote)
            .stdin(Stdio::null())
            .output()
            .expect("ssh runs")
    }

    /// The `[hosts.NAME]` table of this host (lost after 3 s without an answer).
    pub fn hosts_toml(&self, name: &str) -> String {
        format!(
            "[hosts.{name}]\nssh = \"{SSH_DEST}\"\nssh_args = [\"-F\", \"{}\"]\nworkdir = \"{}\"\ntmux_socket = \"{}\"\nmax_workers = 4\nlost_after_s = 3\n",
            self.ssh_config().display(),
            self.workdir.path().display(),
            self.tmux_socket
        )
    }

    /// Write `<project>/.crewmux/hosts.toml` naming this host `name`.
    pub fn write_hosts_file(&self, project: &Path, name: &str) {
        std::fs::create_dir_all(project.join(".crewmux")).unwrap();
        std::fs::write(
            project.join(".crewmux").join("hosts.toml"),
            self.hosts_toml(name),
        )
        .unwrap();
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
        let mut killed = 0;
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.starts_with("ssh") && cmd.contains(&needle) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                killed += 1;
            }
        }
        killed
    }

    /// End the shared SSH connections crewmux left open (ControlPersist).
    pub fn drop_connections(&self) {
        let _ = Command::new("ssh")
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
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        self.drop_connections();
        self.stop_sshd();
        // A control-mode client the "remote" side started outlives sshd when the connection
        // died with it, and the server it holds then refuses `kill-server` ("server exited
        // unexpectedly"): end every process that names this test's socket first. The
        // trailing space keeps `…-1` from matching `…-10`.
        let _ = Command::new("pkill")
            .args(["-f", "--", &format!("-L {} ", self.tmux_socket)])
            .stderr(Stdio::null())
            .status();
        let _ = Command::new("tmux")
            .args(["-L", &self.tmux_socket, "kill-server"])
            .stderr(Stdio::null())
            .status();
    }
}
