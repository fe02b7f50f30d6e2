//! Our own `list-panes -F` format and parser (docs/tmux.md: tmux_interface's `PanesCtl`
//! panics on quotes in start commands). Fields are tab-separated (tmux ≥ 3.4 prints other
//! control characters as octal; tab is left alone), free text last.

/// `#{pane_id}`, `#{pane_pid}`, `#{pane_dead}`, `#{pane_dead_status}`, the server `#{pid}`,
/// and the change signature `#{history_size} #{cursor_x} #{cursor_y} #{window_activity}`.
pub const PANE_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pid}\t#{history_size} #{cursor_x} #{cursor_y} #{window_activity}\t#{window_name}";

/// One row of [`PANE_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRow {
    pub pane_id: String,
    pub pane_pid: u32,
    pub dead: bool,
    /// Empty in tmux before the status is known (or when SIGCHLD was lost).
    pub dead_status: Option<i32>,
    pub server_pid: u32,
    pub signature: String,
    pub window_name: String,
}

/// Parse `list-panes -F PANE_FORMAT` output; malformed lines are skipped.
pub fn parse_panes(text: &str) -> Vec<PaneRow> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.splitn(7, '\t');
            let pane_id = f.next()?.to_string();
            if !pane_id.starts_with('%') {
                return None;
            }
            let pane_pid = f.next()?.parse().ok()?;
            let dead = f.next()? == "1";
            let dead_status = f.next()?.trim().parse().ok();
            let server_pid = f.next()?.parse().ok()?;
            let signature = f.next()?.to_string();
            let window_name = f.next().unwrap_or_default().to_string();
            Some(PaneRow {
                pane_id,
                pane_pid,
                dead,
                dead_status,
                server_pid,
                signature,
                window_name,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_with_empty_dead_status_and_quotes_in_names() {
        let text = "%1\t100\t0\t\t99\t10 0 3 1700000000\tback'end-1\n%2\t101\t1\t3\t99\t4 0 1 1700000001\tx\ngarbage\n";
        let rows = parse_panes(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].dead_status, None);
        assert_eq!(rows[0].window_name, "back'end-1");
        assert!(rows[1].dead);
        assert_eq!(rows[1].dead_status, Some(3));
        assert_eq!(rows[1].server_pid, 99);
    }
}
