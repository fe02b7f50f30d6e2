//! Requests to a running driver: control messages from the dashboard (forwarded onto the
//! loop's queue by a thread of their own) and commands appended to the run's inbox by
//! other processes, both checked against the run and turned into engine inputs. Apart from
//! `observe`: these are what people ask for, not what the panes and files show.

use super::{Control, Driver, Update};
use crate::domain::WorkerStatus;
use crate::engine::steer::Steer;
use crate::engine::Input;
use crate::store::InboxCommand;

impl Driver {
    /// The engine inputs of a control message (from the dashboard or the inbox); a request
    /// that does not apply is a notice.
    pub(super) fn control_inputs(
        &mut self,
        c: Control,
        emit: &mut impl FnMut(Update),
    ) -> Vec<Input> {
        match c {
            Control::Answer { worker: None, text } => {
                if !self.state.clarification.pending {
                    emit(Update::Notice("no run-level question is pending".into()));
                    return vec![];
                }
                vec![Input::AnswerRun { text }]
            }
            Control::Answer {
                worker: Some(worker),
                text,
            } => {
                if self.state.worker(&worker).map(|w| w.status) != Some(WorkerStatus::Waiting) {
                    emit(Update::Notice(format!(
                        "{worker} is not waiting for an answer"
                    )));
                    return vec![];
                }
                vec![Input::AnswerWorker { worker, text }]
            }
            Control::Cancel { worker } => vec![Input::Cancel { worker }],
            Control::Steer(s) => match crate::engine::steer::check(&self.state, &s) {
                Ok(()) => vec![Input::Steer(s)],
                Err(why) => {
                    emit(Update::Notice(why));
                    vec![]
                }
            },
            Control::Focus(w) => {
                self.focus = w;
                match self.poller.as_mut() {
                    // Told to the backend with the next look (never waited for here).
                    Some(p) => p.forget_screen = true,
                    None => self.backend.get().forget_screen(),
                }
                self.log_screen.reset();
                self.pace.refocused();
                vec![]
            }
            Control::Quit => vec![],
        }
    }

    /// The engine inputs of the requests other processes appended to the inbox since the
    /// last read. A request that does not apply is refused with a `request-refused` event
    /// (in `events.jsonl`, so every dashboard and `status` read it), never dropped; the
    /// offset read is saved with the state.
    pub(super) fn read_inbox(&mut self, emit: &mut impl FnMut(Update)) -> Vec<Input> {
        let mut inputs = vec![];
        match self.store.read_commands(self.inbox_offset) {
            Ok((cmds, off)) => {
                self.inbox_offset = off;
                self.state.inbox_read = Some(off);
                for cmd in cmds {
                    let what = request_words(&cmd);
                    let c = match cmd {
                        InboxCommand::AnswerRun { text } => Control::Answer { worker: None, text },
                        InboxCommand::AnswerWorker { worker, text } => Control::Answer {
                            worker: Some(worker),
                            text,
                        },
                        InboxCommand::Cancel { worker, grace_s } => {
                            // For the kills this cancel asks for (see `kill_grace`).
                            self.cancel_grace = grace_s.map(std::time::Duration::from_secs);
                            Control::Cancel { worker }
                        }
                        InboxCommand::Steer(s) => Control::Steer(s),
                    };
                    let mut refused = vec![];
                    let got = match self.ended_refusal(&c) {
                        Some(why) => {
                            refused.push(why);
                            vec![]
                        }
                        None => self.control_inputs(c, &mut |u| match u {
                            Update::Notice(n) => refused.push(n),
                            other => emit(other),
                        }),
                    };
                    for why in refused {
                        let e = crate::domain::RunEvent {
                            ts: chrono::Utc::now(),
                            kind: crate::domain::EventKind::RequestRefused,
                            worker: None,
                            attempt: None,
                            source: "user".into(),
                            message: format!("{what} not carried out: {why}"),
                        };
                        self.record_event(e, emit);
                    }
                    inputs.extend(got);
                }
            }
            Err(e) => emit(Update::Notice(format!("inbox: {e}"))),
        }
        inputs
    }

    /// Carry out the requests of the inbox no driver has read yet, when there are some: an
    /// empty apply would hand the launch thread what is left of the first launch batch on
    /// its own, so the batch would start as two.
    pub(super) fn apply_waiting_requests(&mut self, emit: &mut impl FnMut(Update)) {
        let waiting = self.read_inbox(emit);
        if !waiting.is_empty() {
            self.apply(waiting, emit);
        }
    }

    /// Why a cancel or an answer cannot be carried out in a run that has ended (the engine
    /// would leave it without a word).
    fn ended_refusal(&self, c: &Control) -> Option<String> {
        if !self.state.status.is_final() {
            return None;
        }
        matches!(c, Control::Cancel { .. } | Control::Answer { .. }).then(|| {
            format!(
                "run {} is already {}",
                self.state.run_id,
                self.state.status.as_str()
            )
        })
    }
}

/// A request in words, for the line that says it was refused: `cancel of the run`,
/// `answer to asker`, `retry of backend`.
fn request_words(cmd: &InboxCommand) -> String {
    match cmd {
        InboxCommand::AnswerRun { .. } => "the answer to the run's question".into(),
        InboxCommand::AnswerWorker { worker, .. } => format!("the answer to {worker}"),
        InboxCommand::Cancel { worker: None, .. } => "the cancel of the run".into(),
        InboxCommand::Cancel {
            worker: Some(worker),
            ..
        } => format!("the cancel of {worker}"),
        InboxCommand::Steer(Steer::AddWorker { id, .. }) if id.is_empty() => {
            "adding a worker".into()
        }
        InboxCommand::Steer(Steer::AddWorker { id, .. }) => format!("adding worker {id}"),
        InboxCommand::Steer(Steer::Retry { worker, .. }) => format!("the retry of {worker}"),
        InboxCommand::Steer(Steer::SendText { worker, .. }) => format!("the text for {worker}"),
    }
}

/// Hand every control message to the loop's queue, each wrapped by `wrap`, on a thread of
/// its own; `Quit` when the sender is gone.
///
/// # Errors
/// The thread cannot start.
pub(crate) fn forward_controls<T: Send + 'static>(
    control: std::sync::mpsc::Receiver<Control>,
    wake: std::sync::mpsc::Sender<T>,
    wrap: fn(Control) -> T,
) -> crate::error::Result<()> {
    use crate::error::IoContext;
    std::thread::Builder::new()
        .name("crewmux-control".into())
        .spawn(move || {
            for c in control {
                if wake.send(wrap(c)).is_err() {
                    return;
                }
            }
            // The sender is gone: whoever showed the run quit. A failed send means the
            // loop ended first, which is what Quit asks for anyway.
            let _ = wake.send(wrap(Control::Quit));
        })
        .on("cannot start the control thread")?;
    Ok(())
}
