//! The input of an attempt whose end is settled: its exit code with the artifacts it did not
//! leave, the usage its CLI reported and, when it wrote no result, one taken from its output
//! (a retake queued when that output may still be arriving), and what its provider's exit
//! output says of a failure; or its vanishing. Apart from `observe_attempt`, which decides
//! that an attempt has ended: this takes what it left.

use std::time::Instant;

use super::result::{collect_output, events_text, log_text, FromLog};
use crate::backend::Target;
use crate::domain::ExitSource;
use crate::engine::Input;
use crate::lead::{Driver, Watch};

impl Driver {
    /// The input for a settled attempt: its exit with the artifacts it lacks and its
    /// result (the output when it wrote none), or its vanishing.
    pub(in crate::lead) fn exit_input(
        &mut self,
        t: &Target,
        w: &Watch,
        exit: Result<(i32, ExitSource), String>,
    ) -> Input {
        match exit {
            Ok((code, source)) => {
                let artifacts = self
                    .state
                    .worker(&t.worker)
                    .map(|s| s.artifacts.clone())
                    .unwrap_or_default();
                let missing: Vec<String> = artifacts
                    .into_iter()
                    .filter(|a| !w.dir.join(a).exists())
                    .collect();
                // Usage, and for an agent that prints its answer instead of writing the
                // result file, the result (providers/output.rs).
                let spec = self
                    .state
                    .worker(&t.worker)
                    .and_then(|s| self.registry.get(&s.provider));
                let from_log = collect_output(&w.dir, spec, code == 0 && missing.is_empty());
                if from_log != FromLog::No && w.marker_code().is_none() {
                    // The output's last lines may still be on their way (see `result`).
                    let provider = self.state.worker(&t.worker).map(|s| s.provider.clone());
                    let of = super::retake::Of {
                        worker: &t.worker,
                        attempt: t.attempt,
                        dir: &w.dir,
                        nonce: &w.nonce,
                    };
                    let late = from_log == FromLog::NoText;
                    let retake = super::retake::Retake::new(of, late, provider, Instant::now());
                    self.retakes.push(retake);
                }
                let now = chrono::Utc::now();
                // A CLI that exits 0 whatever its API did is read on 0 too.
                let said = spec
                    .filter(|s| code != 0 || s.exit_zero_on_failure)
                    .and_then(|s| {
                        let explain = |text: &str| {
                            crate::providers::exit_output::explain(&s.exit_output, text, now)
                        };
                        explain(&events_text(&w.dir))
                            .or_else(|| explain(&log_text(&w.dir.join("output.log"))))
                    });
                let result = w.dir.join("result.md");
                // When it ended, by its own record (the wrapper's clock), not when it was
                // noticed: a host that did not answer, a run nobody drove, bring it late.
                let ended_at = crate::launch::read_exit_record(&w.dir.join("exit.json"), &w.nonce)
                    .ok()
                    .flatten()
                    .and_then(|r| r.ended_at);
                // An agent's answer that ends by asking the person something (the engine
                // decides whether this worker may wait on it).
                let agent = spec.is_some_and(|s| s.kind != crate::providers::ProviderKind::Command);
                let question = (agent && code == 0 && missing.is_empty())
                    .then(|| std::fs::read_to_string(&result).ok())
                    .flatten()
                    .and_then(|text| crate::clarification::in_result::closing_question(&text));
                Input::Exited {
                    worker: t.worker.clone(),
                    attempt: t.attempt,
                    code,
                    source,
                    missing_artifacts: missing,
                    result: result.exists().then_some(result),
                    said,
                    ended_at,
                    question,
                }
            }
            Err(detail) => Input::Vanished {
                worker: t.worker.clone(),
                attempt: t.attempt,
                detail,
            },
        }
    }
}
