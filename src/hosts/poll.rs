//! One poll across hosts: the targets are split by host, each host's thread is asked to
//! poll its own (one round trip there), this machine is polled meanwhile, and the answers
//! (a host that has not answered within a few ms: its targets `Unknown` this turn) are
//! put back in the targets' order.

use std::collections::BTreeMap;

use super::backend::HostsBackend;
use crate::backend::{Liveness, Poll, Target};

/// Poll every target where it runs (see the module docs).
pub(super) fn poll(b: &mut HostsBackend, targets: &[Target], focus: Option<&Target>) -> Poll {
    let mut groups: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
    for (i, t) in targets.iter().enumerate() {
        // Nothing to look at yet (its launch is under way): `Unknown`. Asking this
        // machine's tmux about it would say `Gone`, and a listing can start a tmux server
        // that races the first `new-session` of a run whose workers were all remote.
        if t.pane_id.is_none() && t.pid.is_none() {
            continue;
        }
        let host = t
            .pane_id
            .as_deref()
            .and_then(|p| super::backend::untag_pane(p).0)
            .map(str::to_string);
        groups.entry(host).or_default().push(i);
    }
    let focus_host = focus.and_then(|f| {
        f.pane_id
            .as_deref()
            .and_then(|p| super::backend::untag_pane(p).0)
            .map(str::to_string)
    });
    // A host that is down is asked even with no target there, so it is seen to answer
    // again (its workers may have ended or moved meanwhile).
    for host in b.outages().into_keys() {
        groups.entry(Some(host)).or_default();
    }
    // The local backend is polled even with no target of its own when it has the focus:
    // a focus with a pane here. One still to be launched is nowhere yet; asking this
    // machine's tmux about it would find no server in a run whose workers are all remote
    // and say the tmux server is gone.
    if focus.is_some_and(|f| f.pane_id.is_some() || f.pid.is_some()) && focus_host.is_none() {
        groups.entry(None).or_default();
    }
    let mut liveness = vec![Liveness::Unknown; targets.len()];
    let mut tails: Vec<Option<String>> = vec![None; targets.len()];
    let mut out = Poll::default();
    let mut downs = vec![];
    let groups: Vec<(Option<String>, Vec<usize>, Vec<Target>)> = groups
        .into_iter()
        .map(|(host, idx)| {
            let group = idx.iter().map(|&i| targets[i].clone()).collect();
            (host, idx, group)
        })
        .collect();
    // Every host is asked first, so they all work while this machine is polled.
    for (host, _, group) in &groups {
        if let Some(h) = host {
            let own_focus = focus.filter(|_| focus_host.as_ref() == Some(h));
            b.ask_poll(h, group, own_focus);
        }
    }
    let mut deadline = None;
    // This machine first, then the hosts' answers.
    let mut order: Vec<&(Option<String>, Vec<usize>, Vec<Target>)> = groups.iter().collect();
    order.sort_by_key(|(h, _, _)| h.is_some());
    for (host, idx, group) in order {
        let own_focus = focus.filter(|_| focus_host == *host);
        let p = match host {
            None => b.local_mut().poll(group, own_focus),
            Some(h) => {
                let d = *deadline.get_or_insert_with(|| std::time::Instant::now() + b.answer_wait);
                b.answer(h, group, own_focus, d)
            }
        };
        for (k, &i) in idx.iter().enumerate() {
            if let Some(l) = p.liveness.get(k) {
                liveness[i] = *l;
            }
            if let Some(t) = p.tails.get(k) {
                tails[i] = t.clone();
            }
        }
        if own_focus.is_some() {
            out.screen = p.screen;
        }
        // A host's tmux server that answers `Gone` (the host itself answers); a host
        // that does not answer is in `hosts_down` below.
        if let Some(d) = p.server_down {
            downs.push(match host {
                Some(h) => format!("host {h}: {d}"),
                None => d,
            });
        }
        out.unanswered |= p.unanswered;
    }
    out.liveness = liveness;
    if tails.iter().any(Option::is_some) {
        out.tails = tails;
    }
    out.server_down = (!downs.is_empty()).then(|| downs.join("; "));
    out.hosts_down = b.outages();
    out
}

/// The line saying the tmux servers of `down` answer again, `down` being the line that
/// said they did not (the parts [`poll`] joins with `; `, a host's prefixed `host <name>: `):
/// each host named, this machine's server as `the tmux server`.
pub fn server_back_line(down: &str) -> String {
    let mut said: Vec<String> = vec![];
    for part in down.split("; ") {
        let line = match part.strip_prefix("host ").and_then(|p| p.split_once(": ")) {
            Some((host, _)) => format!("host {host}: its tmux server answers again"),
            None => "the tmux server answers again".to_string(),
        };
        if !said.contains(&line) {
            said.push(line);
        }
    }
    said.join("; ")
}

#[cfg(test)]
mod tests {
    use super::server_back_line;

    #[test]
    fn a_hosts_tmux_server_that_answers_again_is_named() {
        assert_eq!(
            server_back_line("host box: the tmux server is gone (no server running)"),
            "host box: its tmux server answers again"
        );
        assert_eq!(
            server_back_line("the tmux server is gone; host b2: the tmux server is gone"),
            "the tmux server answers again; host b2: its tmux server answers again"
        );
    }
}
