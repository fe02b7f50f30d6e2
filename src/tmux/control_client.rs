//! One persistent control-mode client per tmux server the driver uses (docs/tmux.md
//! "Control mode"): `tmux -L <socket> -C attach-session -t =<session> -f
//! no-output,ignore-size`, a command a line on its stdin, replies read by
//! [`super::control::Reader`] on a thread and handed to the waiting callers in the order
//! the commands were written (tmux runs a client's commands in order).
//!
//! - Attached to the run's session, because a control client that is not attached ends as
//!   soon as its first command is done; `no-output` keeps pane output off the channel and
//!   `ignore-size` keeps it from resizing windows. `attach-session` never starts a server.
//! - Every reply has a deadline; a channel that misses one is ended (tmux's control mode
//!   has had wedge bugs) and the caller is told, like a tmux process that timed out.
//! - When the channel is down (EOF, `%exit`, a missed deadline) [`Channel::send`] says so
//!   at once and the caller runs a tmux process instead; a new channel is tried after a
//!   back-off (1 s, doubling to 30 s; reset once a channel has lived 30 s).
#![allow(
    clippy::expect_used,
    reason = "stdin and stdout are piped just before they are taken"
)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::control::{Event, Notification, Reader, Reply};

/// First wait before a new channel is tried after one ended.
const RETRY_FIRST: Duration = Duration::from_secs(1);
/// Longest wait between two tries.
const RETRY_MAX: Duration = Duration::from_secs(30);
/// A channel that lived this long resets the back-off.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);

/// What [`Channel::send`] got.
#[derive(Debug)]
pub enum Sent {
    /// One reply per line sent, in order.
    Answered(Vec<Reply>),
    /// No channel: nothing was sent; run a tmux process instead.
    Down,
    /// The channel ended after some lines were written and before every reply came: the
    /// commands may or may not have run.
    Lost,
    /// A reply did not come within the limit; the channel was ended.
    TimedOut,
}

/// Counters of one channel, for tests and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControlStats {
    /// Commands answered over a channel.
    pub commands: u64,
    /// Channels started (each is one `tmux -C` process).
    pub connects: u64,
    /// Calls that found no channel and ran a tmux process instead.
    pub fallbacks: u64,
    /// Whether a channel is up now.
    pub connected: bool,
    /// The pid of the current `tmux -C` client, when up.
    pub client_pid: Option<u32>,
}

/// The control-mode channel to one tmux server, shared by every clone of a
/// [`super::TmuxClient`] and safe to use from several threads.
pub struct Channel {
    socket: String,
    session: String,
    /// Set for a server on another machine: the client runs through ssh.
    remote: Option<Arc<super::remote::RemoteShell>>,
    conn: Mutex<Conn>,
    commands: AtomicU64,
    connects: AtomicU64,
    fallbacks: AtomicU64,
}

/// The channel's client, if up, and when to try again if not.
struct Conn {
    link: Option<Live>,
    retry_at: Instant,
    /// The wait after the next failure.
    backoff: Duration,
}

/// A running `tmux -C` client.
struct Live {
    child: Child,
    stdin: ChildStdin,
    queue: Arc<Mutex<Queue>>,
    since: Instant,
}

/// Callers waiting for replies, oldest first; `closed` once the reader ended.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Sender<Reply>>,
    closed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A thread that panicked while holding the lock left plain data behind: use it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Drop for Live {
    fn drop(&mut self) {
        // The client may have ended already; either way it is reaped here.
        if let Err(e) = self.child.kill() {
            tracing::trace!("tmux -C kill: {e}");
        }
        if let Err(e) = self.child.wait() {
            tracing::debug!("tmux -C wait: {e}");
        }
    }
}

impl Channel {
    /// A channel to the server on `-L socket`, attached to `session` when it starts. None
    /// is started until the first [`send`](Self::send).
    pub fn new(
        socket: &str,
        session: &str,
        remote: Option<Arc<super::remote::RemoteShell>>,
    ) -> Self {
        Channel {
            socket: socket.to_string(),
            session: session.to_string(),
            remote,
            conn: Mutex::new(Conn {
                link: None,
                retry_at: Instant::now(),
                backoff: RETRY_FIRST,
            }),
            commands: AtomicU64::new(0),
            connects: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// The counters now.
    pub fn stats(&self) -> ControlStats {
        let conn = lock(&self.conn);
        let client_pid = conn
            .link
            .as_ref()
            .filter(|live| !lock(&live.queue).closed)
            .map(|live| live.child.id());
        ControlStats {
            commands: self.commands.load(Ordering::Relaxed),
            connects: self.connects.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            connected: client_pid.is_some(),
            client_pid,
        }
    }

    /// True while a client is up (started and its reader not ended); never starts one.
    pub fn is_up(&self) -> bool {
        lock(&self.conn)
            .link
            .as_ref()
            .is_some_and(|live| !lock(&live.queue).closed)
    }

    /// Send `lines` (one tmux command each, no newline, never empty: an empty line ends a
    /// control client) and wait for their replies, each within `limit` of the send.
    pub fn send(&self, lines: &[String], limit: Duration) -> Sent {
        self.send_each(lines, limit, &mut |_, _| {})
    }

    /// As [`send`](Self::send), handing each reply to `each` (with its line's index) as
    /// soon as it comes, before the next one is waited for: a caller can act on the first
    /// commands of a long batch while tmux runs the rest.
    pub fn send_each(
        &self,
        lines: &[String],
        limit: Duration,
        each: &mut dyn FnMut(usize, &Reply),
    ) -> Sent {
        if lines
            .iter()
            .any(|l| l.trim().is_empty() || l.contains('\n'))
        {
            return Sent::Down;
        }
        let (receivers, generation) = {
            let mut conn = lock(&self.conn);
            let Some(live) = self.live(&mut conn) else {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                return Sent::Down;
            };
            let generation = live.child.id();
            match write_lines(live, lines) {
                Ok(receivers) => (receivers, generation),
                Err(written) => {
                    // The client died before its reader saw the end: said as in `live`.
                    tracing::info!(
                        "tmux -L {}: the control channel ended; using tmux processes meanwhile",
                        self.socket
                    );
                    self.went_down(&mut conn);
                    if written == 0 {
                        self.fallbacks.fetch_add(1, Ordering::Relaxed);
                        return Sent::Down;
                    }
                    return Sent::Lost;
                }
            }
        };
        let deadline = Instant::now() + limit;
        let mut replies = Vec::with_capacity(receivers.len());
        for (i, rx) in receivers.into_iter().enumerate() {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(reply) => {
                    each(i, &reply);
                    replies.push(reply);
                }
                Err(RecvTimeoutError::Disconnected) => return Sent::Lost,
                Err(RecvTimeoutError::Timeout) => {
                    let mut conn = lock(&self.conn);
                    if conn.link.as_ref().map(|l| l.child.id()) == Some(generation) {
                        tracing::warn!(
                            "tmux -L {}: the control channel did not answer within {} ms; ending it",
                            self.socket,
                            limit.as_millis()
                        );
                        self.went_down(&mut conn);
                    }
                    return Sent::TimedOut;
                }
            }
        }
        self.commands
            .fetch_add(replies.len() as u64, Ordering::Relaxed);
        Sent::Answered(replies)
    }

    /// End the channel now (before `kill-server`, or when its server is known gone).
    pub fn close(&self) {
        let mut conn = lock(&self.conn);
        if conn.link.is_some() {
            self.went_down(&mut conn);
        }
    }

    /// The live channel, starting one when none is up and the back-off allows.
    fn live<'a>(&self, conn: &'a mut Conn) -> Option<&'a mut Live> {
        if conn.link.as_ref().is_some_and(|l| lock(&l.queue).closed) {
            tracing::info!(
                "tmux -L {}: the control channel ended; using tmux processes meanwhile",
                self.socket
            );
            self.went_down(conn);
        }
        if conn.link.is_none() {
            if Instant::now() < conn.retry_at {
                return None;
            }
            match self.connect() {
                Some(live) => {
                    tracing::info!("tmux -L {}: control channel up", self.socket);
                    conn.link = Some(live);
                }
                None => {
                    conn.retry_at = Instant::now() + conn.backoff;
                    conn.backoff = (conn.backoff * 2).min(RETRY_MAX);
                }
            }
        }
        conn.link.as_mut()
    }

    /// Mark the channel down (ending its client); the next try comes after the back-off,
    /// which starts again from [`RETRY_FIRST`] when the channel had lived long.
    fn went_down(&self, conn: &mut Conn) {
        if let Some(live) = conn.link.take() {
            if live.since.elapsed() >= HEALTHY_AFTER {
                conn.backoff = RETRY_FIRST;
            }
        }
        conn.retry_at = Instant::now() + conn.backoff;
        conn.backoff = (conn.backoff * 2).min(RETRY_MAX);
    }

    /// Start `tmux -C` and check that it answers.
    fn connect(&self) -> Option<Live> {
        super::client::count_call(&self.socket);
        self.connects.fetch_add(1, Ordering::Relaxed);
        let mut cmd = Command::new("tmux");
        super::locale::give_utf8(&mut cmd);
        cmd.args(["-L", &self.socket, "-C", "attach-session", "-t"])
            .arg(format!("={}", self.session))
            .args(["-f", "no-output,ignore-size"])
            .env_remove("TMUX");
        let mut probe_limit = super::bounded::CALL_LIMIT;
        if let Some(shell) = &self.remote {
            cmd = shell
                .wrap_control(&cmd, &self.socket, &self.session)
                .map_err(|e| tracing::debug!("tmux -L {} -C: {e}", self.socket))
                .ok()?;
            probe_limit = super::remote::REMOTE_CALL_LIMIT;
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| tracing::debug!("tmux -L {} -C: {e}", self.socket))
            .ok()?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let queue = Arc::new(Mutex::new(Queue::default()));
        let reader_queue = queue.clone();
        let socket = self.socket.clone();
        let spawned = std::thread::Builder::new()
            .name("crewmux-tmux-control".into())
            .spawn(move || read_replies(BufReader::new(stdout), &reader_queue, &socket));
        let live = Live {
            child,
            stdin,
            queue,
            since: Instant::now(),
        };
        if let Err(e) = spawned {
            tracing::warn!("cannot start the control channel's reader: {e}");
            return None;
        }
        self.probe(live, probe_limit)
    }

    /// Up once the client is attached to the run's session: the probe asks the client's
    /// own session. A client that cannot attach (no server, no session) ends; until it
    /// has (tmux 3.3a runs a line from stdin before, between or after the `attach-session`
    /// of the command line, and on a failed attach it still answers before it exits, with
    /// another session as the current one), the answer is empty and the probe asks again.
    /// A probe that only had to be answered called such a client up; the next command
    /// then met its exit ("the control channel ended before tmux answered") and a launch
    /// failed, now and then under load, on a server holding other runs' sessions.
    fn probe(&self, mut live: Live, limit: Duration) -> Option<Live> {
        let deadline = Instant::now() + limit;
        loop {
            let probe = vec!["display-message -p \"#{client_session}\"".to_string()];
            let rx = write_lines(&mut live, &probe).ok()?.pop()?;
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(reply) if reply.ok && reply.text().trim() == self.session => return Some(live),
                Ok(reply) if reply.ok && reply.text().trim().is_empty() => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(reply) => {
                    tracing::debug!("control channel probe: {}", reply.text().trim());
                    return None;
                }
                Err(e) => {
                    tracing::debug!("tmux -L {} -C did not come up: {e}", self.socket);
                    return None;
                }
            }
        }
    }
}

/// Write `lines` to the client, queueing one receiver per line in the same order; on a
/// failed write, how many lines were written.
fn write_lines(live: &mut Live, lines: &[String]) -> Result<Vec<Receiver<Reply>>, usize> {
    let mut queue = lock(&live.queue);
    if queue.closed {
        return Err(0);
    }
    let mut receivers = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let (tx, rx) = mpsc::channel();
        queue.waiting.push_back(tx);
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(e) = live.stdin.write_all(&bytes) {
            tracing::debug!("control channel write: {e}");
            return Err(i);
        }
        receivers.push(rx);
    }
    if live.stdin.flush().is_err() {
        return Err(lines.len());
    }
    Ok(receivers)
}

/// The reader thread: every reply to this client goes to the oldest waiting caller; at
/// `%exit` or end of output the queue closes (waiting callers see their sender dropped).
fn read_replies(mut out: impl BufRead, queue: &Mutex<Queue>, socket: &str) {
    let mut reader = Reader::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match out.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!("tmux -L {socket} -C: {e}");
                break;
            }
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        match reader.line(&line) {
            Some(Event::Reply(reply)) if reply.from_client => {
                if let Some(tx) = lock(queue).waiting.pop_front() {
                    // A caller that gave up (timed out) has dropped its receiver.
                    if tx.send(reply).is_err() {
                        tracing::trace!("a reply came after its caller stopped waiting");
                    }
                }
            }
            Some(Event::Notification(Notification::Exit { reason })) => {
                tracing::debug!(
                    "tmux -L {socket} -C: %exit {}",
                    reason.as_deref().unwrap_or("")
                );
                break;
            }
            Some(other) => tracing::trace!("tmux -L {socket} -C: {other:?}"),
            None => {}
        }
    }
    let mut q = lock(queue);
    q.closed = true;
    q.waiting.clear();
}

impl super::TmuxBackend {
    /// Route this backend's routine calls (launch batches, polls, captures, answers) over
    /// one persistent control-mode client (see the module docs); for the process that
    /// drives the run. Without it every call is a tmux process.
    pub fn with_control_mode(mut self) -> Self {
        self.client = self.client.with_control(&self.session);
        self
    }
}
