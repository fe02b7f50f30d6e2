use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::*;
use crate::error::Result;
use crate::hosts::doctor::RemoteOut;

/// A host that is this machine: the script runs in a local `sh -c`.
struct Here;

impl RemoteSh for Here {
    fn sh(&self, script: &str, _limit: Duration) -> Result<RemoteOut> {
        let out = Command::new("sh").arg("-c").arg(script).output().unwrap();
        let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
        output.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok(RemoteOut {
            code: out.status.code(),
            output,
            timed_out: false,
        })
    }
}

fn own() -> OwnBinary {
    OwnBinary {
        file: PathBuf::from("/x/crewmux"),
        system: "Linux x86_64".into(),
        version: "1.0.0".into(),
        hash: "cccccccccccc".into(),
        bytes: 5_000_000,
    }
}

fn host(workdir: &Path, tmux: &Path) -> HostSpec {
    HostSpec {
        name: "box".into(),
        ssh: "x".into(),
        ssh_args: vec![],
        workdir: workdir.to_path_buf(),
        max_workers: 1,
        tmux: tmux.display().to_string(),
        tmux_socket: "crewmux".into(),
        lost_after_s: 1,
        source: "h.toml".into(),
    }
}

fn executable(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Make `path` two hours old (no run was planned with it within the hour).
fn age(path: &Path) {
    let touched = Command::new("touch")
        .args(["-d", "2 hours ago"])
        .arg(path)
        .status()
        .unwrap();
    assert!(touched.success());
}

/// A wrapper of run `run` on the host that runs the copy at `copy`.
fn wrapper(workdir: &Path, run: &str, copy: &Path) {
    let dir = workdir.join("runs").join(run).join("workers/w/attempt-1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("launch.sh"),
        format!("#!/bin/sh\n{} sim-agent\n", copy.display()),
    )
    .unwrap();
}

#[test]
fn old_copies_go_and_this_one_those_a_process_or_a_live_run_uses_and_fresh_parts_stay() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work dir");
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // The host's tmux server has run `live`'s session (and one of something else).
    let tmux = dir.path().join("tmux");
    executable(&tmux, "#!/bin/sh\nprintf 'crewmux-live\\nnotes\\n'\n");
    let h = host(&work, &tmux);
    let current = bin.join(own().name());
    let unused = bin.join("crewmux-0.9.0-aaaaaaaaaaaa");
    let live = bin.join("crewmux-0.9.0-bbbbbbbbbbbb");
    let gone_run = bin.join("crewmux-0.8.0-dddddddddddd");
    let running = bin.join("crewmux-0.7.0-eeeeeeeeeeee");
    let old_part = bin.join(format!("{}.part.123", own().name()));
    let new_part = bin.join(format!("{}.part.456", own().name()));
    let recent = bin.join("crewmux-0.9.5-ffffffffffff");
    let other = bin.join("notes.txt");
    for f in [
        &current, &unused, &live, &gone_run, &old_part, &new_part, &recent, &other,
    ] {
        executable(f, "#!/bin/sh\nexit 0\n");
    }
    std::fs::copy("/bin/sleep", &running).unwrap();
    // Two hours old: no run was planned with them since (a temporary copy that old is a
    // leftover of a killed copy); `recent` was planned with within the hour.
    for f in [&current, &unused, &live, &gone_run, &old_part, &running] {
        age(f);
    }
    // ETXTBSY: another test's fork may still hold the copy's write descriptor a moment.
    let started = std::time::Instant::now();
    let mut proc = loop {
        match Command::new(&running).arg("30").spawn() {
            Ok(p) => break p,
            Err(e)
                if e.raw_os_error() == Some(26) && started.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("{}: {e}", running.display()),
        }
    };
    // spawn returns before the child's execve: wait until it runs the copy.
    let exe = PathBuf::from(format!("/proc/{}/exe", proc.id()));
    while std::fs::read_link(&exe).ok().as_deref() != Some(running.as_path()) {
        assert!(started.elapsed() < Duration::from_secs(30), "never exec'd");
        std::thread::sleep(Duration::from_millis(10));
    }
    wrapper(&work, "live", &live);
    wrapper(&work, "ended", &gone_run);

    let removed = prune(&Here, &h, &own());
    if let Err(e) = proc.kill() {
        eprintln!("kill: {e}");
    }
    if let Err(e) = proc.wait() {
        eprintln!("wait: {e}");
    }
    let mut removed = removed.unwrap();
    removed.sort();
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let mut want = vec![name(&unused), name(&gone_run), name(&old_part)];
    want.sort();
    assert_eq!(removed, want);
    for kept in [&current, &live, &running, &new_part, &recent, &other] {
        assert!(kept.exists(), "{} kept", kept.display());
    }
    // The run's own copy is touched: planned with now.
    let planned = std::fs::metadata(&current).unwrap().modified().unwrap();
    assert!(planned.elapsed().unwrap() < Duration::from_secs(600));
    for gone in [&unused, &gone_run, &old_part] {
        assert!(!gone.exists(), "{} removed", gone.display());
    }
    // Again, once its process has ended: the copy it ran goes, and nothing else.
    assert_eq!(prune(&Here, &h, &own()), Ok(vec![name(&running)]));
    assert_eq!(prune(&Here, &h, &own()), Ok(vec![]));
}

#[test]
fn a_host_without_a_bin_folder_or_a_tmux_server_has_nothing_to_prune() {
    let dir = tempfile::tempdir().unwrap();
    let h = host(
        &dir.path().join("nothing here"),
        Path::new("/nonexistent/tmux"),
    );
    assert_eq!(prune(&Here, &h, &own()), Ok(vec![]));
    let bin = dir.path().join("w/bin");
    std::fs::create_dir_all(&bin).unwrap();
    executable(&bin.join("crewmux-0.1.0-000000000000"), "");
    age(&bin.join("crewmux-0.1.0-000000000000"));
    let h = host(&dir.path().join("w"), Path::new("/nonexistent/tmux"));
    assert_eq!(
        prune(&Here, &h, &own()),
        Ok(vec!["crewmux-0.1.0-000000000000".to_string()]),
        "no tmux server there: no live run"
    );
}

#[test]
fn what_was_removed_is_one_line() {
    let bin = Path::new("/srv/crew/bin");
    assert_eq!(pruned_notice("box", bin, &[]), None);
    assert_eq!(
        pruned_notice("box", bin, &["crewmux-0.1.0-aaaaaaaaaaaa".into()]).unwrap(),
        "host box: removed 1 old copy of crewmux from /srv/crew/bin (no process or live run uses them)"
    );
    let two_and_part = [
        "crewmux-0.1.0-aaaaaaaaaaaa".to_string(),
        "crewmux-0.2.0-bbbbbbbbbbbb".to_string(),
        "crewmux-0.3.0-cccccccccccc.part.9".to_string(),
    ];
    assert_eq!(
        pruned_notice("box", bin, &two_and_part).unwrap(),
        "host box: removed 2 old copies and 1 unfinished one of crewmux from /srv/crew/bin (no process or live run uses them)"
    );
}
