//! The tests' own SSH host does not depend on this machine's shell start-up files: its
//! sessions have a `HOME` of their own, and when the host's shell does not answer a plain
//! `true` the host fails to start at once, naming the cause, instead of leaving every
//! remote worker of a test to run locally after its host is given up.

use std::time::{Duration, Instant};

use crate::support::sshd::{sshd_ready, SshHost, SHELL_ANSWER};

/// The start-up file of the host's login shell that `ssh host cmd` reads, if any is known.
fn start_up_file(host: &SshHost) -> Option<&'static str> {
    let out = host.ssh(&["echo $0"]);
    let shell = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if shell.ends_with("bash") {
        Some(".bashrc")
    } else if shell.ends_with("zsh") {
        Some(".zshenv")
    } else {
        eprintln!(
            "\n!!! SKIPPED the hung start-up file case: the host's shell is {shell:?}, which reads no start-up file for `ssh host cmd` !!!\n"
        );
        None
    }
}

#[test]
fn the_hosts_sessions_have_a_home_of_their_own_and_a_hung_shell_fails_its_start_at_once() {
    if !sshd_ready("hosts_sshd") {
        return;
    }
    let mut host = SshHost::start();
    let said = host.ssh(&["echo $HOME; cd && pwd"]);
    assert_eq!(
        String::from_utf8_lossy(&said.stdout),
        format!("{0}\n{0}\n", host.home().display()),
        "{said:?}"
    );
    let Some(file) = start_up_file(&host) else {
        return;
    };
    // A start-up file that never ends, as a stale lock in pyenv's rehash once made one.
    host.stop_sshd();
    std::fs::write(host.home().join(file), "sleep 30\n").unwrap();
    let began = Instant::now();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| host.start_sshd()));
    let took = began.elapsed();
    let said = *failed
        .expect_err("the host started though its shell never answers")
        .downcast::<String>()
        .expect("a panic message");
    assert!(
        said.starts_with("the test host's shell (") && said.contains("did not answer `true`"),
        "{said}"
    );
    assert!(!said.contains('\n'), "one line: {said}");
    assert!(
        took < SHELL_ANSWER + Duration::from_secs(20),
        "it took {took:?}"
    );
}
