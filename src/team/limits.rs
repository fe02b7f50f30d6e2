//! Default timeouts and stall detection: every run ends, whatever its agents do.
//!
//! For each limit the first value given wins, in this order: the worker's own (team file),
//! the command line (`--timeout`, `--idle-timeout`, `--stall-after`, `--check-timeout`),
//! the team's (team file top level), the provider's (`stall_after_s` only), then the default
//! here. `0` at any level turns the limit off. A `command` worker's idle and stall limits
//! come only from its own value and its provider's (the flags and the team's top level are
//! for agents), and a check has a wall timeout only.

use serde::Serialize;

/// Wall timeout of an agent worker (critics and fixers included), seconds: 45 min.
pub const DEFAULT_TIMEOUT_S: u64 = 45 * 60;
/// Idle timeout of an agent worker (no new output), seconds: 10 min.
pub const DEFAULT_IDLE_TIMEOUT_S: u64 = 10 * 60;
/// Seconds of output made only of stall lines before an attempt is ended: 2 min.
pub const DEFAULT_STALL_AFTER_S: u64 = 120;
/// How long a worker's question (MCP `ask`, an approval, a question on its screen) waits
/// for the person, seconds: 10 min, as long as the idle timeout, so a question nobody
/// answers ends (with the ask's default, a denied approval, or the attempt `failed`)
/// well before the wall timeout.
pub const DEFAULT_QUESTION_TIMEOUT_S: u64 = 10 * 60;
/// Wall timeout of a check or a `command` worker, seconds: 20 min (no idle timeout: a
/// build may stay quiet for long).
pub const DEFAULT_CHECK_TIMEOUT_S: u64 = 20 * 60;

/// Limits given on the command line (`None`: not given; `Some(0)`: off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LimitFlags {
    pub timeout_s: Option<u64>,
    pub idle_timeout_s: Option<u64>,
    pub stall_after_s: Option<u64>,
    pub check_timeout_s: Option<u64>,
    pub question_timeout_s: Option<u64>,
}

/// The limits of one worker, seconds; `None`: no such limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Limits {
    pub timeout_s: Option<u64>,
    pub idle_timeout_s: Option<u64>,
    pub stall_after_s: Option<u64>,
    pub question_timeout_s: Option<u64>,
}

/// The first given value of `levels` (most specific first), else `default`; 0 is off.
pub fn pick(levels: &[Option<u64>], default: u64) -> Option<u64> {
    let v = levels.iter().find_map(|l| *l).unwrap_or(default);
    (v > 0).then_some(v)
}

/// What a run's limits are made from besides the worker's own values.
#[derive(Debug, Clone, Copy, Default)]
pub struct LimitSources {
    pub flags: LimitFlags,
    /// The team file's top-level values.
    pub team: LimitFlags,
}

impl LimitSources {
    /// The limits of an agent worker with its own values `own` on `provider_stall_s` (the
    /// provider's `stall_after_s`).
    pub fn agent(&self, own: Limits, provider_stall_s: Option<u64>) -> Limits {
        Limits {
            timeout_s: pick(
                &[own.timeout_s, self.flags.timeout_s, self.team.timeout_s],
                DEFAULT_TIMEOUT_S,
            ),
            idle_timeout_s: pick(
                &[
                    own.idle_timeout_s,
                    self.flags.idle_timeout_s,
                    self.team.idle_timeout_s,
                ],
                DEFAULT_IDLE_TIMEOUT_S,
            ),
            stall_after_s: pick(
                &[
                    own.stall_after_s,
                    self.flags.stall_after_s,
                    self.team.stall_after_s,
                    provider_stall_s,
                ],
                DEFAULT_STALL_AFTER_S,
            ),
            question_timeout_s: self.question_timeout(own),
        }
    }

    /// The limits of a check: a wall timeout only (its own, `--check-timeout`, the team's
    /// `check_timeout_s`, [`DEFAULT_CHECK_TIMEOUT_S`]), unless it sets its own idle timeout.
    pub fn check(&self, own: Limits) -> Limits {
        Limits {
            timeout_s: pick(
                &[
                    own.timeout_s,
                    self.flags.check_timeout_s,
                    self.team.check_timeout_s,
                ],
                DEFAULT_CHECK_TIMEOUT_S,
            ),
            idle_timeout_s: own.idle_timeout_s.filter(|s| *s > 0),
            stall_after_s: None,
            question_timeout_s: self.question_timeout(own),
        }
    }

    /// The limits of a `command` worker with its own values `own`: a check's, and a stall
    /// clock when its provider lists `stall_patterns` (`stall_lines`) and its own
    /// `stall_after_s` or the provider's (`provider_stall_s`) sets one. No default: any
    /// program is any program, so only a providers.toml that names its stall lines gives it
    /// one, and without stall lines no window could ever open.
    pub fn command(&self, own: Limits, provider_stall_s: Option<u64>, stall_lines: bool) -> Limits {
        Limits {
            stall_after_s: if stall_lines {
                pick(&[own.stall_after_s, provider_stall_s], 0)
            } else {
                None
            },
            ..self.check(own)
        }
    }

    /// How long a question of a worker with its own values `own` waits, for every kind of
    /// worker (a `command` worker may ask through `CREWMUX_MCP_CONFIG` too).
    fn question_timeout(&self, own: Limits) -> Option<u64> {
        pick(
            &[
                own.question_timeout_s,
                self.flags.question_timeout_s,
                self.team.question_timeout_s,
            ],
            DEFAULT_QUESTION_TIMEOUT_S,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_value_wins_and_zero_turns_a_limit_off() {
        let src = LimitSources {
            flags: LimitFlags {
                timeout_s: Some(60),
                idle_timeout_s: Some(0),
                ..Default::default()
            },
            team: LimitFlags {
                timeout_s: Some(90),
                stall_after_s: Some(30),
                ..Default::default()
            },
        };
        let none = Limits::default();
        assert_eq!(
            src.agent(none, Some(45)),
            Limits {
                timeout_s: Some(60),
                idle_timeout_s: None,
                stall_after_s: Some(30),
                question_timeout_s: Some(DEFAULT_QUESTION_TIMEOUT_S)
            }
        );
        let own = Limits {
            timeout_s: Some(5),
            idle_timeout_s: Some(7),
            stall_after_s: Some(0),
            question_timeout_s: Some(0),
        };
        assert_eq!(
            src.agent(own, None),
            Limits {
                timeout_s: Some(5),
                idle_timeout_s: Some(7),
                stall_after_s: None,
                question_timeout_s: None
            }
        );
        let defaults = LimitSources::default().agent(none, None);
        assert_eq!(
            defaults,
            Limits {
                timeout_s: Some(DEFAULT_TIMEOUT_S),
                idle_timeout_s: Some(DEFAULT_IDLE_TIMEOUT_S),
                stall_after_s: Some(DEFAULT_STALL_AFTER_S),
                question_timeout_s: Some(DEFAULT_QUESTION_TIMEOUT_S)
            }
        );
        assert_eq!(
            LimitSources::default().agent(none, Some(45)).stall_after_s,
            Some(45)
        );
        assert_eq!(
            LimitSources::default().check(none).timeout_s,
            Some(DEFAULT_CHECK_TIMEOUT_S)
        );
    }

    #[test]
    fn a_command_worker_has_a_stall_clock_only_when_it_or_its_provider_sets_one() {
        // The flags and the team's top level are for agents: they give a command none.
        let src = LimitSources {
            flags: LimitFlags {
                stall_after_s: Some(30),
                ..Default::default()
            },
            team: LimitFlags {
                stall_after_s: Some(40),
                ..Default::default()
            },
        };
        let none = Limits::default();
        let own = |s| Limits {
            stall_after_s: Some(s),
            ..Limits::default()
        };
        let stall = |own, provider, lines| src.command(own, provider, lines).stall_after_s;
        assert_eq!(stall(none, None, true), None, "no default");
        assert_eq!(stall(none, Some(2), true), Some(2), "the provider's");
        assert_eq!(stall(own(5), Some(2), true), Some(5), "its own wins");
        assert_eq!(stall(own(0), Some(2), true), None, "0 is off");
        assert_eq!(stall(own(5), Some(2), false), None, "no stall lines to see");
        assert_eq!(
            src.command(own(5), Some(2), true).timeout_s,
            Some(DEFAULT_CHECK_TIMEOUT_S)
        );
        assert_eq!(src.check(own(5)).stall_after_s, None, "a check has none");
    }
}
