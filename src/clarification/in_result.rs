//! A question an agent left at the end of its result (docs/design.md "Clarification",
//! worker level): an agent that could not use the `ask` tool (a CLI whose MCP server did
//! not start, an agent that ignored the prompt) often ends its answer with "Should I also
//! migrate the old rows?" and exits 0. That result is still a question: the worker waits
//! for the person, and the answer continues the conversation in a new attempt.
//!
//! The rule: the last paragraph of the result (text after the last blank line, outside a
//! code fence), once markdown's closing marks are taken off, ends with `?`. Only the last
//! paragraph counts: a question the agent asked and then answered itself, or a list of open
//! questions followed by its own decision, is no question to the person.

/// The longest question kept, in characters; a longer closing paragraph is cut to its last
/// sentences (a question is short; a paragraph this long is the agent thinking aloud).
pub const MAX_QUESTION_CHARS: usize = 600;

/// The question `result` (a result file's text) ends with, as one line: the last
/// paragraph with its lines joined by a space, cut to its last [`MAX_QUESTION_CHARS`]
/// characters at a sentence end; `None` when the last paragraph is no question, lies in a
/// code block, or the result is empty.
pub fn closing_question(result: &str) -> Option<String> {
    let text = result.trim_end();
    if text.is_empty() || ends_in_code(text) {
        return None;
    }
    let last = text
        .rsplit("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty())
        .unwrap_or(text);
    let line = last.split_whitespace().collect::<Vec<_>>().join(" ");
    let bare = line.trim_end_matches(|c: char| {
        matches!(
            c,
            '*' | '_' | '`' | '"' | '\'' | ')' | ']' | '»' | '”' | '’'
        ) || c.is_whitespace()
    });
    // `?` or the full-width `？` (CJK text), after at least one word: a paragraph that is
    // only a question mark asks nothing.
    let body = bare.strip_suffix('?').or_else(|| bare.strip_suffix('？'))?;
    if !body.chars().any(char::is_alphanumeric) {
        return None;
    }
    // A heading (`## Open questions?`) or a quoted line is not the agent asking.
    if bare.starts_with('#') || bare.starts_with('>') {
        return None;
    }
    let bare = bare.trim_start_matches(['-', '*', '+', '_', ' ']);
    Some(cut_to_last_sentences(bare, MAX_QUESTION_CHARS))
}

/// Whether `text` ends inside or right after a fenced code block (an odd count of ```
/// fences, or a last line that is a fence): its last paragraph is code, not prose.
fn ends_in_code(text: &str) -> bool {
    let fences = text
        .lines()
        .filter(|l| l.trim_start().starts_with("```"))
        .count();
    fences % 2 == 1
        || text
            .lines()
            .last()
            .is_some_and(|l| l.trim_start().starts_with("```"))
}

/// `line` when it fits in `max` characters, else its tail from the first sentence start
/// (after `. `, `! ` or `? `) that leaves at most `max`, else its last `max` characters.
fn cut_to_last_sentences(line: &str, max: usize) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= max {
        return line.to_string();
    }
    let from = chars.len() - max;
    let start = (from..chars.len())
        .find(|&i| {
            i > 0
                && chars[i] != ' '
                && chars[i - 1] == ' '
                && i >= 2
                && matches!(chars[i - 2], '.' | '!' | '?')
        })
        .unwrap_or(from);
    chars[start..].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_paragraph_ending_with_a_question_mark_is_the_question() {
        let result = "## Summary\nAdded the migration.\n\nShould I also\nbackfill the old rows?\n";
        assert_eq!(
            closing_question(result).as_deref(),
            Some("Should I also backfill the old rows?")
        );
        // Markdown's closing marks do not hide it.
        assert_eq!(
            closing_question("Done.\n\n**Do you want the index too?**").as_deref(),
            Some("Do you want the index too?")
        );
        assert_eq!(
            closing_question("Done.\n\n- Keep the old API?").as_deref(),
            Some("Keep the old API?")
        );
        assert_eq!(
            closing_question("完成。\n\n要更新 README 吗？").as_deref(),
            Some("要更新 README 吗？")
        );
    }

    #[test]
    fn a_question_the_agent_went_on_from_is_no_question() {
        assert_eq!(
            closing_question("Should I keep it? Yes: kept.\n\nDone."),
            None
        );
        assert_eq!(
            closing_question("Open questions?\n\nNone left; all done."),
            None
        );
        assert_eq!(closing_question(""), None);
        assert_eq!(closing_question("Done.\n\n?"), None, "a bare question mark");
        assert_eq!(closing_question("Done.\n\n**?**"), None);
        assert_eq!(closing_question("   \n\n  "), None);
        // A heading or a quote that ends with `?`, and code, are not the agent asking.
        assert_eq!(closing_question("Done.\n\n## What next?"), None);
        assert_eq!(closing_question("Done.\n\n> why?"), None);
        assert_eq!(
            closing_question("Done.\n\n```\nif x?\n```"),
            None,
            "a closed fence"
        );
        assert_eq!(
            closing_question("Done.\n\n```rust\nlet a = b?"),
            None,
            "an open fence"
        );
    }

    #[test]
    fn a_long_closing_paragraph_keeps_its_last_sentences() {
        let long = format!(
            "{} Which one should I keep?",
            "This is context. ".repeat(60)
        );
        let q = closing_question(&long).unwrap();
        assert!(q.chars().count() <= MAX_QUESTION_CHARS, "{}", q.len());
        assert!(q.ends_with("Which one should I keep?"));
        assert!(
            q.starts_with("This is context."),
            "cut at a sentence start: {q}"
        );
    }
}
