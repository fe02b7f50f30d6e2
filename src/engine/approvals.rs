//! A worker's approval policy applied to one request of its agent CLI (docs/mcp.md
//! "Approvals"): what is decided without the person, and what reaches them.
//!
//! In order: a worker whose policy is `deny` is denied everything; a kind (tool name) the
//! person allowed for the rest of the run (`A`) is allowed; `auto` allows a request whose
//! every path is inside the worker's worktree; everything else asks the person.

use crate::domain::clarification::Reach;
use crate::domain::clarification::{Approval, ApprovalPolicy, ToolReply};

/// What becomes of one approval request before the person sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Answered without asking: `reply` goes to the agent, `said` to the Log.
    Decided { reply: ToolReply, said: String },
    /// The person decides (the worker waits).
    Ask,
}

/// The decision for `a` of a worker with `policy`, the run's `always` allowed kinds and
/// where the request's paths lie (`reach`, against the worker's worktree).
pub fn decide(policy: ApprovalPolicy, always: &[String], a: &Approval, reach: &Reach) -> Decision {
    if policy == ApprovalPolicy::Deny {
        return Decision::Decided {
            reply: ToolReply::Deny {
                reason: Some(
                    "crewmux's approvals policy for this worker is `deny`: this action is not \
                     allowed; go on without it and say in your result what you could not do."
                        .into(),
                ),
            },
            said: format!(
                "{} denied by the approvals policy (deny): {}",
                a.tool, a.input
            ),
        };
    }
    if always.contains(&a.tool) {
        return Decision::Decided {
            reply: ToolReply::Allow { always: true },
            said: format!("{} allowed for the rest of the run: {}", a.tool, a.input),
        };
    }
    if policy == ApprovalPolicy::Auto && *reach == Reach::Inside {
        return Decision::Decided {
            reply: ToolReply::Allow { always: false },
            said: format!(
                "{} allowed by the approvals policy (auto, inside its worktree): {}",
                a.tool, a.input
            ),
        };
    }
    Decision::Ask
}

/// What the person's answer `text` to approval `a` replies: `y` (or `yes`, `allow`) allows
/// once; `A` (or `always`) allows this kind for the rest of the run and adds it to
/// `always`; `n [reason]` (or `no`, `deny`) denies with the reason; any other text denies
/// with that text as the reason. Returns the reply and what the Log says.
pub fn reply_to(text: &str, a: &Approval, always: &mut Vec<String>) -> (ToolReply, String) {
    let t = text.trim();
    let (word, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
    match word {
        "y" | "Y" | "yes" | "allow" => (
            ToolReply::Allow { always: false },
            format!("allowed {} once", a.tool),
        ),
        "A" | "always" => {
            if !always.contains(&a.tool) {
                always.push(a.tool.clone());
            }
            (
                ToolReply::Allow { always: true },
                format!("allowed {} for the rest of the run", a.tool),
            )
        }
        "n" | "N" | "no" | "deny" => {
            let reason = (!rest.trim().is_empty()).then(|| rest.trim().to_string());
            let said = match &reason {
                Some(r) => format!("denied {}: {r}", a.tool),
                None => format!("denied {}", a.tool),
            };
            (ToolReply::Deny { reason }, said)
        }
        _ => (
            ToolReply::Deny {
                reason: Some(t.to_string()),
            },
            format!("denied {}: {t}", a.tool),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash() -> Approval {
        Approval {
            tool: "Bash".into(),
            input: "{\"command\":\"make\"}".into(),
            targets: None,
        }
    }

    fn write() -> Approval {
        Approval {
            tool: "Write".into(),
            input: "{\"file_path\":\"/wt/a.rs\"}".into(),
            targets: Some(vec!["/wt/a.rs".into()]),
        }
    }

    fn allowed(d: &Decision) -> Option<bool> {
        match d {
            Decision::Decided {
                reply: ToolReply::Allow { always },
                ..
            } => Some(*always),
            _ => None,
        }
    }

    #[test]
    fn auto_allows_inside_the_worktree_and_asks_outside_or_when_the_target_is_unknown() {
        let auto = ApprovalPolicy::Auto;
        assert_eq!(
            allowed(&decide(auto, &[], &write(), &Reach::Inside)),
            Some(false)
        );
        let out = Reach::Outside("/etc/hosts".into());
        assert_eq!(decide(auto, &[], &write(), &out), Decision::Ask);
        assert_eq!(decide(auto, &[], &bash(), &Reach::Unknown), Decision::Ask);
        // `ask` asks even inside.
        let ask = ApprovalPolicy::Ask;
        assert_eq!(decide(ask, &[], &write(), &Reach::Inside), Decision::Ask);
    }

    #[test]
    fn deny_denies_everything_even_a_kind_allowed_for_the_run() {
        let always = vec!["Bash".to_string()];
        for (a, reach) in [(bash(), Reach::Unknown), (write(), Reach::Inside)] {
            match decide(ApprovalPolicy::Deny, &always, &a, &reach) {
                Decision::Decided {
                    reply: ToolReply::Deny { reason: Some(r) },
                    said,
                } => {
                    assert!(r.contains("policy for this worker is `deny`"), "{r}");
                    assert!(said.contains("denied by the approvals policy"), "{said}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_kind_allowed_always_is_allowed_without_asking_and_only_that_kind() {
        let mut always = vec![];
        let (r, said) = reply_to("A", &bash(), &mut always);
        assert_eq!(r, ToolReply::Allow { always: true });
        assert_eq!(said, "allowed Bash for the rest of the run");
        assert_eq!(always, vec!["Bash".to_string()]);
        reply_to("always", &bash(), &mut always);
        assert_eq!(always.len(), 1, "a kind is kept once");
        let ask = ApprovalPolicy::Ask;
        assert_eq!(
            allowed(&decide(ask, &always, &bash(), &Reach::Unknown)),
            Some(true)
        );
        assert_eq!(
            decide(ask, &always, &write(), &Reach::Inside),
            Decision::Ask
        );
    }

    #[test]
    fn y_allows_once_and_n_denies_with_or_without_a_reason() {
        let mut always = vec![];
        assert_eq!(
            reply_to("y", &bash(), &mut always).0,
            ToolReply::Allow { always: false }
        );
        assert_eq!(
            reply_to("n", &bash(), &mut always).0,
            ToolReply::Deny { reason: None }
        );
        let (r, said) = reply_to("n  not on main\tplease ", &bash(), &mut always);
        assert_eq!(
            r,
            ToolReply::Deny {
                reason: Some("not on main\tplease".into())
            }
        );
        assert_eq!(said, "denied Bash: not on main\tplease");
        assert_eq!(
            reply_to("use cargo instead", &bash(), &mut always).0,
            ToolReply::Deny {
                reason: Some("use cargo instead".into())
            }
        );
        assert!(always.is_empty());
    }
}
