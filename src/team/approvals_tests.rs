//! Team-file tests for `[approvals]` and a worker's `approvals`: the policy each worker
//! gets, and one-line errors naming the place and the fix.

use std::path::Path;

use super::parse_and_validate;
use crate::domain::clarification::ApprovalPolicy;
use crate::providers::Registry;

fn parse(text: &str) -> crate::error::Result<crate::domain::TeamSpec> {
    parse_and_validate(Path::new("t.toml"), text, &Registry::builtin())
}

const WORKERS: &str = "[[worker]]\nid = \"a\"\nrole = \"architect\"\n\n\
                       [[worker]]\nid = \"b\"\nrole = \"architect\"\napprovals = { policy = \"deny\" }\n";

#[test]
fn the_teams_policy_and_a_workers_own_are_read() {
    let spec = parse(&format!("[approvals]\npolicy = \"auto\"\n\n{WORKERS}")).unwrap();
    assert_eq!(
        spec.approvals.and_then(|a| a.policy),
        Some(ApprovalPolicy::Auto)
    );
    assert_eq!(spec.workers[0].approvals, None);
    assert_eq!(
        spec.workers[1].approvals.and_then(|a| a.policy),
        Some(ApprovalPolicy::Deny)
    );
    assert!(
        parse(WORKERS).unwrap().approvals.is_none(),
        "the default is ask"
    );
}

#[test]
fn a_bad_policy_or_field_is_one_line_naming_it_and_the_fix() {
    let e = parse(&format!("[approvals]\npolicy = \"aut\"\n\n{WORKERS}"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "t.toml:2:10: policy = \"aut\": did you mean `auto`? (use ask, auto or deny)"
    );
    let e = parse(&format!("[approvals]\npolicy = \"never\"\n\n{WORKERS}"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "t.toml:2:10: policy = \"never\": unknown value (use ask, auto or deny)"
    );
    let e = parse(&format!("[approvals]\npolcy = \"ask\"\n\n{WORKERS}"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t.toml:2:1: ")
            && e.contains("unknown field `polcy`: did you mean `policy`?"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn critics_and_the_fixer_take_the_teams_policy_unless_they_name_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("team.toml");
    std::fs::write(
        &file,
        "[approvals]\npolicy = \"auto\"\n\n\
         [[worker]]\nid = \"a\"\nrole = \"architect\"\nprovider = \"sim\"\n\n\
         [[critic]]\nid = \"look\"\nprovider = \"sim\"\n\n\
         [[critic]]\nid = \"strict\"\nprovider = \"sim\"\napprovals = { policy = \"deny\" }\n\n\
         [fixer]\nprovider = \"sim\"\n",
    )
    .unwrap();
    let mut opts = super::ResolveOptions::new("p", tmp.path());
    opts.team_file = Some(file);
    let team = super::resolve(&opts).unwrap();
    let policy = |a: Option<crate::domain::clarification::ApprovalsSpec>| a.and_then(|a| a.policy);
    assert_eq!(
        policy(team.critics[0].approvals),
        Some(ApprovalPolicy::Auto)
    );
    assert_eq!(
        policy(team.critics[1].approvals),
        Some(ApprovalPolicy::Deny)
    );
    assert_eq!(
        policy(team.fixer.as_ref().unwrap().approvals),
        Some(ApprovalPolicy::Auto)
    );
}
