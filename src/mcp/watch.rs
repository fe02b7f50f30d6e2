//! What the lead reads of one attempt's MCP exchange each turn: new questions, new
//! progress lines and servers that died. Whatever does not carry the attempt's nonce is
//! refused (an ask gets a `Refused` reply at once) and reported, never taken.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::exchange::{self, Ask, Progress, Reply, ServerFile};

/// What one look found.
#[derive(Debug, Clone, PartialEq)]
pub enum McpNews {
    /// A question (or an approval request) of this attempt, not yet replied to.
    Asked(Box<Ask>),
    /// A progress line of this attempt.
    Progress(String),
    /// Something written with another run's, worker's or attempt's nonce: refused.
    Refused(String),
    /// The server `pid` ended without saying so (killed, crashed); the asks it left open
    /// are in `open_asks` (ids).
    ServerDied { pid: u32, open_asks: Vec<String> },
}

/// The lead's reading position in one attempt's exchange.
#[derive(Debug, Clone, Default)]
pub struct McpWatch {
    dir: PathBuf,
    seen: HashSet<String>,
    progress_at: u64,
    dead: HashSet<u32>,
}

impl McpWatch {
    /// A watch of `<attempt_dir>/mcp/`.
    pub fn new(attempt_dir: &Path) -> Self {
        Self {
            dir: exchange::dir(attempt_dir),
            ..Self::default()
        }
    }

    /// The exchange folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Everything new since the last look, for the attempt whose nonce is `nonce`.
    /// A missing folder (no server was started) is nothing new.
    pub fn look(&mut self, nonce: &str, alive: impl Fn(u32) -> bool) -> Vec<McpNews> {
        let mut news = vec![];
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return news;
        };
        let mut asks = vec![];
        let mut servers = vec![];
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(id) = name
                .strip_prefix("ask-")
                .and_then(|n| n.strip_suffix(".json"))
            {
                if !self.seen.contains(id) {
                    asks.push(id.to_string());
                }
            } else if let Some(pid) = name
                .strip_prefix("server-")
                .and_then(|n| n.strip_suffix(".json"))
                .and_then(|p| p.parse::<u32>().ok())
            {
                if !self.dead.contains(&pid) {
                    servers.push(pid);
                }
            }
        }
        // Progress first: a line sent before a question reads before it.
        news.extend(self.read_progress(nonce));
        asks.sort();
        for id in asks {
            self.seen.insert(id.clone());
            if exchange::reply_path(&self.dir, &id).exists() {
                // Settled before this look (a lead before this one, the server itself).
                continue;
            }
            match exchange::read_json::<Ask>(&exchange::ask_path(&self.dir, &id)) {
                Ok(Some(ask)) if ask.caller.nonce == nonce => {
                    news.push(McpNews::Asked(Box::new(ask)))
                }
                Ok(Some(ask)) => {
                    let why = format!(
                        "refused: this question names worker {} attempt {} with a nonce that is not this attempt's",
                        ask.caller.worker, ask.caller.attempt
                    );
                    let _ = exchange::write_json(
                        &exchange::reply_path(&self.dir, &id),
                        &Reply::Refused { why: why.clone() },
                    );
                    news.push(McpNews::Refused(format!("MCP ask {id}: {why}")));
                }
                Ok(None) => {}
                Err(e) => news.push(McpNews::Refused(format!("MCP ask {id}: unreadable: {e}"))),
            }
        }
        for pid in servers {
            if alive(pid) {
                continue;
            }
            // Removed between the listing and now: it ended on purpose.
            let path = exchange::server_path(&self.dir, pid);
            if !matches!(exchange::read_json::<ServerFile>(&path), Ok(Some(_))) {
                continue;
            }
            self.dead.insert(pid);
            let prefix = format!("{pid}-");
            let open_asks = self
                .seen
                .iter()
                .filter(|id| id.starts_with(&prefix))
                .filter(|id| !exchange::reply_path(&self.dir, id).exists())
                .cloned()
                .collect();
            news.push(McpNews::ServerDied { pid, open_asks });
        }
        news
    }

    /// New whole lines of `progress.jsonl`.
    fn read_progress(&mut self, nonce: &str) -> Vec<McpNews> {
        let path = exchange::progress_path(&self.dir);
        exchange::new_lines(&path, &mut self.progress_at)
            .into_iter()
            .map(|l| match serde_json::from_slice::<Progress>(&l) {
                Ok(p) if p.nonce == nonce => McpNews::Progress(p.text),
                Ok(_) => McpNews::Refused(
                    "MCP progress refused: its nonce is not this attempt's".to_string(),
                ),
                Err(e) => McpNews::Refused(format!("MCP progress line unreadable: {e}")),
            })
            .collect()
    }
}

/// Whether process `pid` exists on this machine (`kill(pid, 0)`).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    }
}
