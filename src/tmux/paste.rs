//! Typing into a pane: text goes in as one bracketed paste through a tmux buffer, Enter
//! as a separate key (docs/tmux.md "Input to a pane").

use std::time::Duration;

use tmux_interface::{LoadBuffer, PasteBuffer, SendKeys, Tmux};

use super::client::{count_call, TmuxClient};
use super::command_line::tmux_quote;
use crate::error::{Error, Result};

impl TmuxClient {
    /// Paste `text` into `pane` as one bracketed paste, then Enter as a separate key a
    /// moment later (docs/tmux.md "Input to a pane": no 16 KiB command limit, no swallowed
    /// Enter). The buffer is deleted after pasting.
    ///
    /// # Errors
    /// As [`paste_text`](Self::paste_text) and [`run`](Self::run) for the Enter key.
    pub fn paste(&self, pane: &str, text: &str) -> Result<()> {
        self.paste_text(pane, text)?;
        std::thread::sleep(Duration::from_millis(50));
        self.run(Tmux::new().add_command(SendKeys::new().target_pane(pane).key("Enter").build()))?;
        Ok(())
    }

    /// The text part of [`paste`](Self::paste): `load-buffer -` then `paste-buffer -d -p`,
    /// without the Enter.
    ///
    /// # Errors
    /// [`Error::Tmux`] when `load-buffer` or `paste-buffer` fails (no such pane),
    /// [`Error::Timeout`] when the server does not answer, [`Error::Other`] when tmux cannot start.
    pub fn paste_text(&self, pane: &str, text: &str) -> Result<()> {
        let buffer = format!(
            "crewmux-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        if self.control.is_some() {
            // No stdin to load from on the channel: the text goes on the command line,
            // escaped so it stays one line (`set-buffer` has no 16 KiB limit here: the
            // line does not travel as a client message).
            let text_arg = super::control::quote_line_arg(text).map_err(Error::Other)?;
            let lines = vec![
                format!("set-buffer -b {} -- {text_arg}", tmux_quote(&buffer)),
                format!(
                    "paste-buffer -d -p -b {} -t {}",
                    tmux_quote(&buffer),
                    tmux_quote(pane)
                ),
            ];
            let args = [
                "set-buffer",
                "-b",
                &buffer,
                "…",
                ";",
                "paste-buffer",
                "-t",
                pane,
            ]
            .map(String::from)
            .to_vec();
            if let Some(done) = self.over_channel(&lines, super::bounded::CALL_LIMIT, false, &args)
            {
                return done.map(|_| ());
            }
        }
        count_call(self.socket());
        let cmd = Tmux::new()
            .socket_name(self.socket())
            .add_command(
                LoadBuffer::new()
                    .buffer_name(buffer.as_str())
                    .path("-")
                    .build(),
            )
            .into_command();
        let out = self.output(cmd, Some(text.as_bytes()), super::bounded::CALL_LIMIT)?;
        if !out.status.success() {
            return Err(Error::Tmux {
                args: ["-L", self.socket(), "load-buffer", "-b", &buffer, "-"]
                    .map(String::from)
                    .to_vec(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        self.run(
            Tmux::new().add_command(
                PasteBuffer::new()
                    .delete()
                    .bracket_codes()
                    .buffer_name(buffer.as_str())
                    .target_pane(pane)
                    .build(),
            ),
        )?;
        Ok(())
    }
}
