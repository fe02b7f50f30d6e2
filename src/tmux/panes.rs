//! Our own `list-panes -F` format and parser (docs/tmux.md: tmux_interface's `PanesCtl`
//! panics on quotes in start commands). Fields are tab-separated (tmux ≥ 3.4 prints other
//! control characters as octal; tab is left alone), free text last.
//!
//! A pane is stored as a *pane reference*: its `#{pane_id}` and the server instance it
//! belongs to, `%3@<server pid>.<server start time>` ([`PANE_REF_FORMAT`]). A tmux server
//! numbers its panes from `%0` when it starts, so after a server restart the id alone can
//! name another worker's pane; the instance tells them apart (docs/tmux.md "Pane identity").

/// `#{pane_id}`, `#{pane_pid}`, `#{pane_dead}`, `#{pane_dead_status}`, the server `#{pid}`
/// and `#{start_time}`, and the change signature `#{history_size} #{cursor_x} #{cursor_y}
/// #{window_activity}`.
pub const PANE_FORMAT: &str = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pid}\t#{start_time}\t#{history_size} #{cursor_x} #{cursor_y} #{window_activity}\t#{window_name}";

/// The server instance of a tmux server: `<pid>.<start time, epoch seconds>`.
pub const SERVER_FORMAT: &str = "#{pid}.#{start_time}";

/// The pane reference of a new pane (`new-window -P -F`): `%3@<pid>.<start time>`.
pub const PANE_REF_FORMAT: &str = "#{pane_id}@#{pid}.#{start_time}";

/// A stored pane reference split into the tmux pane id (`%3`) and its server instance;
/// a reference saved before instances were stored (`%3`) has none.
pub fn split_pane_ref(pane_ref: &str) -> (&str, Option<&str>) {
    match pane_ref.split_once('@') {
        Some((id, server)) => (id, Some(server)),
        None => (pane_ref, None),
    }
}

/// True when `pane_ref` names a pane of the server instance `server`: the same instance,
/// or a reference without one (read as before: by id alone).
pub fn same_server(pane_ref: &str, server: &str) -> bool {
    split_pane_ref(pane_ref).1.is_none_or(|s| s == server)
}

/// One row of [`PANE_FORMAT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRow {
    pub pane_id: String,
    pub pane_pid: u32,
    pub dead: bool,
    /// Empty in tmux before the status is known (or when SIGCHLD was lost).
    pub dead_status: Option<i32>,
    pub server_pid: u32,
    /// The server instance ([`SERVER_FORMAT`]).
    pub server: String,
    pub signature: String,
    pub window_name: String,
}

/// Parse `list-panes -F PANE_FORMAT` output; malformed lines are skipped.
pub fn parse_panes(text: &str) -> Vec<PaneRow> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.splitn(8, '\t');
            let pane_id = f.next()?.to_string();
            if !pane_id.starts_with('%') {
                return None;
            }
            let pane_pid = f.next()?.parse().ok()?;
            let dead = f.next()? == "1";
            let dead_status = f.next()?.trim().parse().ok();
            let server_pid = f.next()?.parse().ok()?;
            let server = format!("{server_pid}.{}", f.next()?);
            let signature = f.next()?.to_string();
            let window_name = f.next().unwrap_or_default().to_string();
            Some(PaneRow {
                pane_id,
                pane_pid,
                dead,
                dead_status,
                server_pid,
                server,
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
        let text = "%1\t100\t0\t\t99\t1699999999\t10 0 3 1700000000\tback'end-1\n%2\t101\t1\t3\t99\t1699999999\t4 0 1 1700000001\tx\ngarbage\n";
        let rows = parse_panes(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].dead_status, None);
        assert_eq!(rows[0].window_name, "back'end-1");
        assert!(rows[1].dead);
        assert_eq!(rows[1].dead_status, Some(3));
        assert_eq!(rows[1].server_pid, 99);
        assert_eq!(rows[1].server, "99.1699999999");
        assert_eq!(rows[1].signature, "4 0 1 1700000001");
    }

    #[test]
    fn a_pane_reference_names_its_server_instance() {
        assert_eq!(
            split_pane_ref("%3@42.1700000000"),
            ("%3", Some("42.1700000000"))
        );
        assert_eq!(split_pane_ref("%3"), ("%3", None));
        assert!(same_server("%3@42.1700000000", "42.1700000000"));
        assert!(!same_server("%3@42.1700000000", "43.1700000100"));
        assert!(
            same_server("%3", "43.1700000100"),
            "an old reference: by id alone"
        );
    }
}
