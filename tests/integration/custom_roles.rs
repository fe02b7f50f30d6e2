//! Roles of one's own (README "Team files"): a project's `.crewmux/agents.toml` adds a role
//! a team file can name, whose persona opens its workers' prompts; a role nobody defined is
//! one line naming both `agents.toml` files, and a bad `agents.toml` names itself.

use crate::support::*;

const ROLES: &str = "[agents.data-engineer]\npersona = \"data engineer who keeps pipelines idempotent\"\nmodel_role = \"default\"\ndomain = \"backend\"\nprefers = \"codex\"\n";

fn team(role: &str) -> TeamProject {
    let t = TeamProject::new(
        &command_worker("etl", "true", "Done.")
            .replace("role = \"backend-engineer\"", &format!("role = \"{role}\"")),
    );
    std::fs::create_dir_all(t.path().join(".crewmux")).unwrap();
    t
}

#[test]
fn a_projects_agents_toml_adds_a_role_whose_persona_opens_the_prompt() {
    let t = team("data-engineer");
    std::fs::write(t.path().join(".crewmux/agents.toml"), ROLES).unwrap();
    let out = t.run("load the nightly files").process().output();
    assert_eq!(summary(&out)["status"], "done", "{}", stderr(&out));
    let prompt =
        std::fs::read_to_string(only_run_dir(t.path()).join("workers/etl/attempt-1/prompt.md"))
            .unwrap();
    assert!(
        prompt.starts_with("You are a data engineer who keeps pipelines idempotent."),
        "{prompt}"
    );
}

#[test]
fn an_unknown_role_or_a_bad_agents_toml_is_one_line_and_makes_nothing() {
    let t = team("poet");
    let out = t.run("x").process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("unknown role `poet`") && err.contains(".crewmux/agents.toml"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!t.path().join(".crewmux/runs").exists(), "nothing made");

    let t = team("data-engineer");
    std::fs::write(
        t.path().join(".crewmux/agents.toml"),
        ROLES.replace("\"backend\"", "\"cooking\""),
    )
    .unwrap();
    let out = t.run("x").process().output();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agents.toml: [agents.data-engineer] domain `cooking`"),
        "{}",
        stderr(&out)
    );
}
