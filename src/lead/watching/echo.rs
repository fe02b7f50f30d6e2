//! The echo of text crewmux pasted into a worker's pane (an answer to its question, the
//! dashboard's answer, `steer send`): a terminal shows what is typed into it, so the pasted
//! lines come back in `output.log` (tmux `pipe-pane` copies the pane's output, the echo of
//! the tty's input included: termios(3) `ECHO`). Those bytes are crewmux's own, not the
//! worker's: they do not make an answered worker `running` again (`worker-resumed`) nor
//! restart its idle or stall clock. Only output that is not the echo does.

use std::collections::VecDeque;

use crate::launch::strip_ansi;

/// What one paste into an attempt's pane will echo, line by line, until the worker prints
/// something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo {
    /// The pasted text's lines not echoed yet (ANSI-free, trimmed, blank lines left out).
    lines: VecDeque<String>,
    /// The pane's unfinished line when the text was pasted (the prompt the text is typed
    /// after), ANSI-free and trimmed: the echo of the first line completes it.
    prompt: String,
    /// The question the worker waits on (its screen's question line), trimmed: a prompt not
    /// read yet when the text was pasted comes back with the echo on its line.
    question: String,
    /// A line was echoed already (only the first may follow the prompt on its line).
    started: bool,
}

/// How one read of a log reads once the echo is taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sorted {
    /// The read's complete lines that are not the echo (from the first such line on).
    pub kept: Vec<String>,
    /// Everything read was the echo (or blank): the read is no activity of the worker.
    pub only_echo: bool,
    /// The echo is over: the worker printed something else, so what follows is its own.
    pub over: bool,
}

fn clean(line: &str) -> String {
    strip_ansi(line).trim().to_string()
}

impl Echo {
    /// The echo a paste of `text` will give into a pane whose unfinished line is `prompt`,
    /// while the worker waits on `question` (if any). `None` for text with no visible line.
    pub fn new(text: &str, prompt: &str, question: Option<&str>) -> Option<Self> {
        let lines: VecDeque<String> = text.lines().map(clean).filter(|l| !l.is_empty()).collect();
        if lines.is_empty() {
            return None;
        }
        Some(Echo {
            lines,
            prompt: clean(prompt),
            question: question.map(clean).unwrap_or_default(),
            started: false,
        })
    }

    /// `rest` (what stands before an echoed line on it, trimmed) is the prompt the text was
    /// typed after.
    fn is_prompt(&self, rest: &str) -> bool {
        !self.started
            && !rest.is_empty()
            && (rest == self.prompt
                || self.prompt.ends_with(rest)
                || (!self.question.is_empty() && self.question.ends_with(rest)))
    }

    /// Whether the complete line `line` is the next line of the echo (consumed if so).
    fn take_line(&mut self, line: &str) -> bool {
        let line = clean(line);
        if line.is_empty() {
            return true;
        }
        let Some(next) = self.lines.front() else {
            return false;
        };
        let echoed = line == *next
            || line
                .strip_suffix(next.as_str())
                .is_some_and(|rest| self.is_prompt(rest.trim()));
        if echoed {
            self.lines.pop_front();
            self.started = true;
        }
        echoed
    }

    /// Whether the unfinished line `partial` is (a start of) the echo, or the prompt as it
    /// was.
    fn partial_is_echo(&self, partial: &str) -> bool {
        let p = clean(partial);
        if p.is_empty() || p == self.prompt || (!self.started && p == self.question) {
            return true;
        }
        let Some(next) = self.lines.front() else {
            return false;
        };
        if next.starts_with(&p) {
            return true;
        }
        [self.prompt.as_str(), self.question.as_str()]
            .iter()
            .filter(|before| !self.started && !before.is_empty())
            .any(|before| {
                p.strip_prefix(before)
                    .is_some_and(|typed| next.starts_with(typed.trim()))
            })
    }

    /// Take the echo out of one read: its complete `lines`, then `partial`, the unfinished
    /// line after them.
    pub fn sort(&mut self, lines: Vec<String>, partial: &str) -> Sorted {
        let mut kept = Vec::new();
        let mut over = false;
        for line in lines {
            if over || !self.take_line(&line) {
                over = true;
                kept.push(line);
            }
        }
        let only_echo = !over && self.partial_is_echo(partial);
        let over = over || !only_echo;
        Sorted {
            kept,
            only_echo,
            over,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const Q: &str = "Do you trust the files in this folder? (y/n)";

    #[test]
    fn the_echo_on_the_prompts_line_and_a_blank_are_no_activity() {
        let mut e = Echo::new(
            "y",
            "Do you trust the files in this folder? (y/n) ",
            Some(Q),
        )
        .unwrap();
        // The echo comes in two pieces: the typed text, then the Enter.
        let s = e.sort(vec![], &format!("{Q} y"));
        assert!(s.only_echo && !s.over, "{s:?}");
        let s = e.sort(lines(&[&format!("{Q} y\r")]), "");
        assert!(s.only_echo && s.kept.is_empty(), "{s:?}");
        let s = e.sort(lines(&["", "\u{1b}[0m"]), "");
        assert!(s.only_echo, "{s:?}");
        // What the worker prints next is its own, even when it says the same.
        let s = e.sort(lines(&["y", "thanks"]), "");
        assert_eq!((s.only_echo, s.over), (false, true));
        assert_eq!(s.kept, lines(&["y", "thanks"]));
    }

    #[test]
    fn a_prompt_read_with_its_echo_is_the_question_answered() {
        // The prompt had not been read from the log when the answer was pasted.
        let mut e = Echo::new("yes please", "", Some(Q)).unwrap();
        let s = e.sort(lines(&[&format!("{Q} yes please")]), "");
        assert!(s.only_echo, "{s:?}");
    }

    #[test]
    fn a_line_after_the_echo_is_kept_and_ends_it() {
        let mut e = Echo::new("first\nsecond\n", "> ", None).unwrap();
        let s = e.sort(lines(&["> first", "second", "working on it"]), "");
        assert_eq!(s.kept, lines(&["working on it"]));
        assert!(!s.only_echo && s.over);
        // A new prompt (an unfinished line that is not the echo) is the worker's too.
        let mut e = Echo::new("y", "(y/n) ", None).unwrap();
        let s = e.sort(lines(&["(y/n) y"]), "Name? ");
        assert!(!s.only_echo && s.over && s.kept.is_empty(), "{s:?}");
    }

    #[test]
    fn other_output_is_not_taken_for_the_echo() {
        let mut e = Echo::new("y", "(y/n) ", None).unwrap();
        // Ends with the answer, but does not follow the prompt.
        let s = e.sort(lines(&["deploying to qa-array-y"]), "");
        assert!(!s.only_echo && s.over);
        assert_eq!(Echo::new(" \n", "", None), None);
    }
}
