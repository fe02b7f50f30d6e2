//! What the run has spent, for its budget (`engine::budget`): every attempt's tokens and
//! dollars as its CLI reported them (`usage.json`), dollars from the provider's `prices`
//! where the CLI gave none, and an estimate of 1 token per 4 bytes of its prompt and
//! output for an attempt still running or a CLI that reports no tokens.

use std::time::{Duration, Instant};

use crate::domain::Spend;
use crate::engine::Input;
use crate::lead::Driver;

/// How often a running run's spend is summed again (a few file reads per attempt).
const EVERY: Duration = Duration::from_secs(2);

/// Bytes per token of the estimate (the usual rule of thumb for English text and code).
const BYTES_PER_TOKEN: u64 = 4;

impl Driver {
    /// The run's spend when it has a budget, the last sum is [`EVERY`] old and it changed.
    pub(in crate::lead) fn spent_input(&mut self) -> Option<Input> {
        let budget = self.state.budget.as_ref()?;
        if budget.exhausted.is_some() || self.state.status.is_final() {
            return None;
        }
        // An attempt ended: the engine starts nothing until it has the new sum.
        let due = self.mem.spend_pending;
        if !due && self.spend_at.is_some_and(|at| at.elapsed() < EVERY) {
            return None;
        }
        self.spend_at = Some(Instant::now());
        let spend = self.spend();
        (due || spend != budget.spent).then_some(Input::Spent(spend))
    }

    /// Sum every dispatch record's attempt.
    fn spend(&self) -> Spend {
        let mut total = Spend::default();
        for d in &self.state.dispatches {
            let dir = self.store.attempt_dir(&d.worker_id, d.attempt);
            let w = self.state.worker(&d.worker_id);
            let spec = w.and_then(|w| self.registry.get(&w.provider));
            let model = w.and_then(|w| w.model.as_deref());
            let reported =
                crate::providers::output::read_usage(&dir).filter(|_| d.ended_at.is_some());
            let (input, output, cost, estimated) = match reported {
                Some(u) => (u.input_tokens, u.output_tokens, u.cost_usd, false),
                None => {
                    let size = |f: &str| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len());
                    (
                        size("prompt.md") / BYTES_PER_TOKEN,
                        size("output.log") / BYTES_PER_TOKEN,
                        None,
                        true,
                    )
                }
            };
            total.tokens += input + output;
            total.usd += cost
                .or_else(|| spec.and_then(|s| s.cost_of(model, input, output)))
                .unwrap_or(0.0);
            total.estimated |= estimated;
        }
        total
    }
}
