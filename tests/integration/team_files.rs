//! Team files: the examples and built-in modes parse and validate; each kind of bad file
//! gives one line naming the file, the line and the field.

use std::path::{Path, PathBuf};

use crewmux::providers::Registry;
use crewmux::team::{load_file, load_mode, parse_and_validate, Mode};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

#[test]
fn examples_parse_and_validate() {
    let reg = Registry::builtin();
    let ccg = load_file(&examples().join("ccg-review.toml"), &reg).unwrap();
    assert_eq!(ccg.spec.workers.len(), 3);
    assert_eq!(ccg.spec.workers[0].target.as_deref(), Some("codex"));
    assert_eq!(ccg.spec.checks[0].command, ["cargo", "test", "--quiet"]);

    let cmd = load_file(&examples().join("command-team.toml"), &reg).unwrap();
    assert_eq!(cmd.spec.workers[0].provider.as_deref(), Some("command"));
    assert_eq!(cmd.spec.workers[0].command.as_ref().unwrap()[0], "grep");
    assert!(cmd
        .base_dir
        .unwrap()
        .join(cmd.spec.workers[1].prompt_file.as_ref().unwrap())
        .is_file());

    let rust = load_file(&examples().join("rust-checks.toml"), &reg).unwrap();
    let checks: Vec<&str> = rust
        .spec
        .checks
        .iter()
        .map(|c| c.command[1].as_str())
        .collect();
    assert_eq!(checks, ["check", "test", "clippy"]);
    assert_eq!(rust.spec.max_fix_rounds, Some(2));

    let pipeline = load_file(&examples().join("pipeline.toml"), &reg).unwrap();
    assert_eq!(pipeline.spec.workers[3].after, ["backend", "frontend"]);
}

#[test]
fn builtin_modes_keep_their_worker_ids() {
    let reg = Registry::builtin();
    let ids = |m| {
        load_mode(m, &reg)
            .unwrap()
            .spec
            .workers
            .into_iter()
            .map(|w| w.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(Mode::Crazy),
        [
            "architect",
            "backend",
            "frontend",
            "security",
            "testing",
            "synthesis"
        ]
    );
    assert_eq!(ids(Mode::Ccg), ["backend", "frontend", "synthesis"]);
    assert_eq!(ids(Mode::Solo), ["solo"]);
}

/// The error of `text` as a team file `bad.toml`.
fn err(text: &str) -> String {
    let e = parse_and_validate(Path::new("bad.toml"), text, &Registry::builtin())
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

const HEAD: &str = "name = \"t\"\n";

#[test]
fn bad_files_name_file_line_and_field() {
    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"architect\"\nprovder = \"codex\"\n"
    ));
    assert!(e.starts_with("bad.toml:5:"), "{e}");
    assert!(e.contains("provder"), "{e}");

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"architect\"\nprovider = \"codx\"\n"
    ));
    assert!(e.starts_with("bad.toml:5:"), "{e}");
    assert!(
        e.contains("`provider`") && e.contains("codx") && e.contains("codex"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"Backend_1\"\nrole = \"architect\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:3:") && e.contains("Backend_1"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"architect\"\n[[worker]]\nid = \"a\"\nrole = \"reviewer\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:6:") && e.contains("used twice"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"wizard\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:4:") && e.contains("`role`") && e.contains("architect"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nprovider = \"command\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:5:") && e.contains("command = [argv...]"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nprovider = \"codex\"\ncommand = [\"ls\"]\n"
    ));
    assert!(
        e.starts_with("bad.toml:6:") && e.contains("`command`"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nrole_model = \"huge\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:5:") && e.contains("huge") && e.contains("smol"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nmax_attempts = 0\n"
    ));
    assert!(
        e.starts_with("bad.toml:5:") && e.contains("`max_attempts`"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\ntarget = \"sim\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:5:") && e.contains("unknown target"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nartifacts = [\"../x\"]\n"
    ));
    assert!(
        e.starts_with("bad.toml:5:") && e.contains("`artifacts`"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}parallel = 0\n[[worker]]\nid = \"a\"\nrole = \"reviewer\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:2:") && e.contains("`parallel`"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\n[[check]]\nid = \"t\"\ncommand = []\n"
    ));
    assert!(
        e.starts_with("bad.toml:7:") && e.contains("check `t`"),
        "{e}"
    );

    let e = err(HEAD);
    assert!(
        e.starts_with("bad.toml:1:") && e.contains("[[worker]]"),
        "{e}"
    );

    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\ntimeout_s = \"ten\"\n"
    ));
    assert!(
        e.starts_with("bad.toml:5:"),
        "wrong type names its line: {e}"
    );
}

#[test]
fn unreadable_file_is_named() {
    let e = load_file(Path::new("/no/such/team.toml"), &Registry::builtin())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("/no/such/team.toml: cannot read team file"),
        "{e}"
    );
}

#[test]
fn resolve_fills_tasks_from_prompt_files_and_keeps_command_argv() {
    use crewmux::providers::EnvSnapshot;
    use crewmux::team::{resolve, ResolveOptions};
    let project = crate::support::project();
    let mut opts = ResolveOptions::new("Tidy the error messages", project.path());
    opts.env = EnvSnapshot::from_pairs([("PATH", "/nonexistent"), ("HOME", "/nonexistent")]);
    opts.team_file = Some(examples().join("command-team.toml"));
    // claude is named by the file but not installed: an error naming its install hint...
    let e = resolve(&opts).unwrap_err().to_string();
    assert!(
        e.contains("worker `agent`") && e.contains("npm install -g @anthropic-ai/claude-code"),
        "{e}"
    );
    // ...or sim when allowed.
    opts.allow_sim_fallback = true;
    let team = resolve(&opts).unwrap();
    assert_eq!(team.name, "command-team");
    assert_eq!(team.parallel, 2);
    let grep = &team.workers[0];
    assert_eq!(grep.provider, "command");
    assert_eq!(
        grep.command.as_ref().unwrap()[..2],
        ["grep".to_string(), "-rn".to_string()]
    );
    assert_eq!(
        grep.task, "Tidy the error messages",
        "no prompt: the problem itself"
    );
    assert_eq!(grep.max_attempts, 1);
    let agent = &team.workers[1];
    assert_eq!(agent.provider, "sim");
    assert_eq!(agent.model, None, "sim has no models");
    assert!(
        agent.task.starts_with("Work on: Tidy the error messages\n"),
        "{}",
        agent.task
    );
    assert_eq!(agent.max_attempts, 2, "default attempts");
    assert_eq!(team.checks[0].command, ["cargo", "fmt", "--check"]);

    // A prompt without `{problem}` gets the problem appended.
    let f = project.path().join("t.toml");
    std::fs::write(&f, "[[worker]]\nid = \"r\"\nrole = \"reviewer\"\nprovider = \"sim\"\nprompt = \"Review the diff.\"\n").unwrap();
    opts.team_file = Some(f);
    let team = resolve(&opts).unwrap();
    assert_eq!(
        team.workers[0].task,
        "Review the diff.\n\nProblem: Tidy the error messages"
    );
}

#[test]
fn a_mistyped_field_names_its_entry_and_the_field_it_meant() {
    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\nprovider = \"command\"\ncomand = [\"true\"]\n"
    ));
    assert_eq!(
        e,
        "bad.toml:6:1: worker `a`: unknown field `comand`: did you mean `command`?"
    );
    let e = err(&format!(
        "{HEAD}[[worker]]\nid = \"a\"\nrole = \"reviewer\"\n\n[[check]]\nid = \"t\"\ncomand = [\"true\"]\n"
    ));
    assert_eq!(
        e,
        "bad.toml:8:1: check `t`: unknown field `comand`: did you mean `command`?"
    );
    let e = err(&format!(
        "{HEAD}[[worker]]\nrole = \"reviewer\"\ntimeout = 5\n"
    ));
    assert!(
        e.starts_with("bad.toml:4:1: worker #1: unknown field `timeout`"),
        "{e}"
    );
}

#[test]
fn a_worker_table_written_with_single_brackets_says_to_write_double_ones() {
    let e = err(&format!(
        "{HEAD}\n[worker]\nid = \"a\"\nrole = \"reviewer\"\n"
    ));
    assert_eq!(
        e,
        "bad.toml:3:1: `[worker]` is one table, but a list is expected here: write `[[worker]]` for each entry"
    );
}
