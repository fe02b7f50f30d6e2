//! The run's usage as the dashboard shows it (the header's total, the roster's column):
//! [`crate::providers::output::run_usage`] reads one `usage.json` per attempt, so a frame
//! that called it for the header and the roster read 128 files of a 64-worker run every
//! second (15 % of an idle dashboard's time). It is read again only when the run's state
//! was saved since (`updated_at`): a `usage.json` is written when its attempt ends, which
//! the lead saves as a change of the run.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;

use crate::domain::RunState;
use crate::providers::output::Usage;

/// Per worker (those whose CLI reported usage) and for the whole run.
pub type RunUsage = Rc<(BTreeMap<String, Usage>, Option<Usage>)>;

type Key = (PathBuf, chrono::DateTime<chrono::Utc>, u64);

thread_local! {
    static LAST: RefCell<Option<(Key, RunUsage)>> = const { RefCell::new(None) };
}

/// The usage of `run`, read from its attempts' files when the run changed since the last
/// call on this thread (the dashboard draws on one).
pub fn run_usage(run: &RunState) -> RunUsage {
    let attempts: u64 = run.workers.iter().map(|w| u64::from(w.attempt)).sum();
    let key = (run.run_dir.clone(), run.updated_at, attempts);
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((k, u)) = last.as_ref() {
            if *k == key {
                return u.clone();
            }
        }
        let u: RunUsage = Rc::new(crate::providers::output::run_usage(run));
        *last = Some((key, u.clone()));
        u
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_read_again_only_when_the_run_was_saved_since() {
        let tmp = tempfile::tempdir().unwrap();
        let mut run = crate::engine::tests::run(1, 2);
        run.run_dir = tmp.path().to_path_buf();
        run.workers[0].attempt = 1;
        let dir = tmp
            .path()
            .join("workers")
            .join(&run.workers[0].id)
            .join("attempt-1");
        std::fs::create_dir_all(&dir).unwrap();
        let write = |tokens: u64| {
            let u = Usage {
                input_tokens: tokens,
                ..Usage::default()
            };
            std::fs::write(dir.join("usage.json"), serde_json::to_vec(&u).unwrap()).unwrap();
        };
        write(10);
        assert_eq!(run_usage(&run).1.map(|u| u.input_tokens), Some(10));
        write(20);
        assert_eq!(
            run_usage(&run).1.map(|u| u.input_tokens),
            Some(10),
            "the same saved run: the files are not read again"
        );
        run.updated_at += chrono::Duration::seconds(1);
        assert_eq!(run_usage(&run).1.map(|u| u.input_tokens), Some(20));
    }
}
