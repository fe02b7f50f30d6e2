//! The limit flags every command that starts or continues workers shares (`run`, `demo`,
//! `resume`): timeouts and stall detection (clap), and what they become for the team
//! resolver.

use clap::Args;

/// Timeouts and stall detection for every worker that does not set its own (then the
/// team file's top level, then the defaults shown). `0` turns one off.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct LimitArgs {
    /// Wall timeout of each agent worker, seconds [default: 2700 = 45 min]
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::cli_values::limit_seconds)]
    pub timeout: Option<u64>,
    /// Idle timeout (no new output) of each agent worker, seconds [default: 600 = 10 min]
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::cli_values::limit_seconds)]
    pub idle_timeout: Option<u64>,
    /// End an agent attempt whose output is only its provider's stall lines (reconnecting,
    /// network, overload) for this long, seconds [default: 120, or the provider's]
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::cli_values::limit_seconds)]
    pub stall_after: Option<u64>,
    /// Wall timeout of each check and `command` worker, seconds [default: 1200 = 20 min]
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::cli_values::limit_seconds)]
    pub check_timeout: Option<u64>,
}

impl From<LimitArgs> for crate::team::limits::LimitFlags {
    fn from(a: LimitArgs) -> Self {
        Self {
            timeout_s: a.timeout,
            idle_timeout_s: a.idle_timeout,
            stall_after_s: a.stall_after,
            check_timeout_s: a.check_timeout,
            // Team and worker field only: `demo` has a `--question-timeout` of its own.
            question_timeout_s: None,
        }
    }
}
