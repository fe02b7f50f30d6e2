//! A question in a result: an agent whose answer ends by asking the person something (here
//! a stand-in CLI that speaks Claude Code's stream-json and could not use `ask`) makes its
//! worker wait; `crewmux answer --worker` starts the next attempt, which continues the
//! CLI's conversation with the answer in its prompt; with no answer the result stands.
//! Text sent to a worker that has ended starts its next attempt the same way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

const QUESTION: &str = "Should I also update the README?";

/// The stand-in CLI: appends its argv to `calls.txt`, keeps its prompt as `prompt-<n>.txt`,
/// names the session `s-<n>`; its first answer ends with [`QUESTION`], later ones do not.
const CLI: &str = r#"#!/bin/sh
dir=$(dirname "$0")
n=$(( $(cat "$dir/calls.txt" 2>/dev/null | wc -l) + 1 ))
echo "$*" >> "$dir/calls.txt"
cat > "$dir/prompt-$n.txt"
printf '{"type":"system","subtype":"init","session_id":"s-%s"}\n' "$n"
if [ "$n" = 1 ]; then
  printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s-1","result":"Changed notes.md.\\n\\nShould I also update the README?"}\n'
else
  printf '{"type":"result","subtype":"success","is_error":false,"session_id":"s-%s","result":"Updated the README too (attempt %s)."}\n' "$n" "$n"
fi
"#;

struct Asker {
    team: TeamProject,
    bin: tempfile::TempDir,
}

impl Asker {
    /// A project whose one worker runs the stand-in with a question timeout of `timeout_s`.
    fn new(timeout_s: u64) -> Self {
        let team = TeamProject::new(&format!(
            "name = \"asking\"\nquestion_timeout_s = {timeout_s}\n\n[[worker]]\nid = \"talker\"\nrole = \"backend-engineer\"\nprovider = \"talker\"\nmax_attempts = 1\n"
        ));
        let bin = tempfile::tempdir().unwrap();
        let cli = bin.path().join("talker");
        std::fs::write(&cli, CLI).unwrap();
        std::fs::set_permissions(&cli, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        std::fs::create_dir_all(team.path().join(".crewmux")).unwrap();
        std::fs::write(
            team.path().join(".crewmux/providers.toml"),
            format!(
                "[providers.talker]\nkind = \"agent\"\nbinary = \"{}\"\nargs = [\"--fresh\"]\nresume_args = [\"--resume\", \"{{session}}\"]\nprompt = \"stdin\"\noutput = \"claude-json\"\nauth = \"none\"\n",
                cli.display()
            ),
        )
        .unwrap();
        Asker { team, bin }
    }

    fn path(&self) -> &Path {
        self.team.path()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.bin.path().join("calls.txt"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn prompt(&self, n: u32) -> String {
        std::fs::read_to_string(self.bin.path().join(format!("prompt-{n}.txt"))).unwrap()
    }

    fn state(&self) -> serde_json::Value {
        let file: PathBuf = only_run_dir(self.path()).join("state.json");
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
    }
}

#[test]
fn a_question_at_the_end_of_a_result_waits_and_the_answer_continues_the_conversation() {
    let backend = tmux_or_process("result-question");
    let a = Asker::new(600);
    let child = a.team.run("Change the notes").on(&backend).spawn();
    let st = wait_state(a.path(), "talker waiting", Duration::from_secs(90), |s| {
        state_worker(s, "talker")["status"] == "waiting"
    });
    let w = state_worker(&st, "talker");
    assert_eq!(w["question"], QUESTION, "{w}");
    assert_eq!(w["pending"]["from_result"], true, "{w}");
    assert_eq!(st["dispatches"][0]["status"], "completed", "{st:#}");
    // `status` says what it waits on.
    let id = run_id(a.path());
    let status = run_crewmux(a.path(), backend.socket(), &["status", &id]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains(QUESTION),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );

    let answer = "yes: the install section, with\ttabs and \"quotes\"";
    let ans = run_crewmux(
        a.path(),
        backend.socket(),
        &["answer", &id, "--worker", "talker", answer],
    );
    assert_eq!(ans.status.code(), Some(0), "{}", stderr(&ans));
    let out = wait_limited(child, &["run"]);
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    assert_eq!(
        a.calls(),
        ["--fresh", "--resume s-1"],
        "the answer continues session s-1"
    );
    let prompt = a.prompt(2);
    assert!(
        prompt.starts_with("[crewmux: this continues your conversation of attempt 1")
            && prompt.contains("the person answered your question"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("- You asked: {QUESTION}\n  Answer: {answer}\n")),
        "the answer is in the prompt byte for byte:\n{prompt}"
    );
    let st = a.state();
    assert_eq!(st["dispatches"][1]["resumed"], "s-1", "{st:#}");
    let w = state_worker(&st, "talker");
    assert_eq!(w["status"], "completed");
    assert_eq!(w["attempt"], 2);
    let answers = &st["clarification"]["worker_answers"];
    assert_eq!(answers[0]["question"], QUESTION, "{st:#}");
    assert_eq!(answers[0]["answer"], answer);
    let run = only_run_dir(a.path());
    assert_eq!(count_events(&run, "worker-waiting"), 1);
    assert_eq!(count_events(&run, "worker-answered"), 1);
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(report.contains(QUESTION), "{report}");
}

#[test]
fn an_unanswered_question_in_a_result_lets_the_result_stand() {
    let backend = tmux_or_process("result-question-unanswered");
    let a = Asker::new(2);
    let out = a.team.run("Change the notes").on(&backend).output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    assert_eq!(a.calls(), ["--fresh"], "no second attempt");
    let st = a.state();
    let w = state_worker(&st, "talker");
    assert_eq!(w["status"], "completed");
    assert_eq!(w["attempt"], 1);
    let answer = st["clarification"]["worker_answers"][0]["answer"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        answer.contains("not answered within 2s") && answer.contains("stands"),
        "{answer}"
    );
    let run = only_run_dir(a.path());
    assert_eq!(count_events(&run, "worker-unanswered"), 1);
    let result = std::fs::read_to_string(run.join("workers/talker/attempt-1/result.md")).unwrap();
    assert!(result.contains(QUESTION), "{result}");
}

#[test]
fn text_sent_to_an_ended_agent_worker_continues_its_conversation() {
    let backend = tmux_or_process("result-question-send");
    let a = Asker::new(1);
    let out = a.team.run("Change the notes").on(&backend).output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let id = run_id(a.path());
    let message = "also add a line to CHANGELOG.md";
    let sent = run_crewmux(
        a.path(),
        backend.socket(),
        &["steer", &id, "send", "talker", message],
    );
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    assert!(
        stderr(&sent).contains("continue it with crewmux attach"),
        "saved for the next driver, not typed anywhere: {}",
        stderr(&sent)
    );
    let out = run_crewmux(a.path(), backend.socket(), &["resume", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(a.calls(), ["--fresh", "--resume s-1"]);
    let prompt = a.prompt(2);
    assert!(
        prompt.contains("the person sent you a message")
            && prompt.contains(&format!("- {message}\n")),
        "{prompt}"
    );
    let st = a.state();
    assert_eq!(st["status"], "done", "{st:#}");
    assert_eq!(state_worker(&st, "talker")["attempt"], 2);
}
