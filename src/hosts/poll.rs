//! One poll across hosts: the targets are split by host, each host is polled in one round
//! trip of its own, and the answers are put back in the targets' order.

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
    // The local backend is polled even with no target of its own when it has the focus.
    if focus.is_some() && focus_host.is_none() {
        groups.entry(None).or_default();
    }
    let mut liveness = vec![Liveness::Unknown; targets.len()];
    let mut tails: Vec<Option<String>> = vec![None; targets.len()];
    let mut out = Poll::default();
    let mut downs = vec![];
    for (host, idx) in groups {
        let group: Vec<Target> = idx.iter().map(|&i| targets[i].clone()).collect();
        let own_focus = focus.filter(|_| focus_host == host);
        let p = match &host {
            None => b.local_mut().poll(&group, own_focus),
            Some(h) => b.poll_host(h, &group, own_focus),
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
        if let Some(d) = p.server_down {
            downs.push(match &host {
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
    out
}
