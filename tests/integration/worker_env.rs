//! What a worker's process is told through its environment: `CREWMUX_ATTEMPT` is the
//! attempt number (1, 2, …), one meaning; the attempt's nonce travels separately.

use crate::support::{only_run_dir, summary, worker, TeamProject};

#[test]
fn the_agent_sees_its_attempt_number_in_crewmux_attempt() {
    // Fails unless it is the second attempt: the retry must see `2`.
    let tmp = TeamProject::new(
        "max_fix_rounds = 0\n\n[workspace]\nmode = \"shared\"\n\n[[worker]]\nid = \"w\"\nrole = \"backend-engineer\"\nprovider = \"command\"\nmax_attempts = 2\ncommand = [\"sh\", \"-c\", \"echo \\\"attempt=$CREWMUX_ATTEMPT nonce=${CREWMUX_ATTEMPT_NONCE:+set}\\\" >> seen.txt; [ \\\"$CREWMUX_ATTEMPT\\\" = 2 ]\"]\n",
    );
    let out = tmp.run("go").process().output();
    let s = summary(&out);
    let seen = std::fs::read_to_string(tmp.path().join("seen.txt")).unwrap_or_default();
    assert_eq!(seen, "attempt=1 nonce=set\nattempt=2 nonce=set\n", "{s}");
    assert_eq!(worker(&s, "w")["status"], "completed", "{s}");
    assert!(only_run_dir(tmp.path())
        .join("workers/w/attempt-2")
        .is_dir());
}
