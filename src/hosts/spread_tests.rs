//! Tests of spreading workers over `--hosts`.

use super::*;

fn s(host: &str, capacity: usize) -> Slots {
    Slots {
        host: host.into(),
        capacity,
        no_crewmux: None,
    }
}

/// A worker free to go anywhere whose provider runs crewmux itself.
const SIM: Want<'static> = Want {
    pinned: None,
    runs_crewmux: true,
};

fn free(n: usize) -> Vec<Want<'static>> {
    vec![Want::default(); n]
}

fn pinned<'a>(hosts: &[Option<&'a str>]) -> Vec<Want<'a>> {
    hosts
        .iter()
        .map(|p| Want {
            pinned: *p,
            runs_crewmux: false,
        })
        .collect()
}

#[test]
fn free_workers_go_where_most_slots_are_free_and_ties_go_to_the_first_listed() {
    let slots = [s("a", 2), s("b", 4), s("local", 2)];
    let got = spread(&slots, &free(8));
    // b: 4 free → 3 → 2 ties a (2) and local (2): a is listed first.
    assert_eq!(got, ["b", "b", "a", "b", "local", "a", "b", "local"]);
}

#[test]
fn pinned_workers_keep_their_host_and_take_its_slots_first() {
    let slots = [s("a", 2), s("local", 2)];
    let got = spread(
        &slots,
        &pinned(&[None, Some("a"), None, Some("a"), None, Some("z")]),
    );
    assert_eq!(got, ["local", "a", "local", "a", "a", "z"]);
}

#[test]
fn past_every_hosts_capacity_the_waiting_workers_are_shared_out_evenly() {
    let slots = [s("a", 1), s("b", 1)];
    let got = spread(&slots, &free(5));
    assert_eq!(got, ["a", "b", "a", "b", "a"]);
    // The same team and list always give the same hosts.
    assert_eq!(spread(&slots, &free(5)), got);
}

#[test]
fn workers_that_run_crewmux_skip_a_host_that_cannot_and_the_others_still_use_it() {
    let mut mac = s("mac", 4);
    mac.no_crewmux = Some(NoCrewmux::Foreign("it is `Darwin arm64`".into()));
    let slots = [mac, s("local", 2)];
    let cmd = Want::default();
    let got = spread(&slots, &[SIM, cmd, SIM, cmd, SIM, cmd]);
    // mac has the most free slots, but the sim workers go to local only; past
    // local's capacity they wait there.
    assert_eq!(got, ["local", "mac", "local", "mac", "local", "mac"]);
    // A pinned worker keeps its host (its refusal is the helper's, when planned).
    let pinned_sim = Want {
        pinned: Some("mac"),
        runs_crewmux: true,
    };
    assert_eq!(spread(&slots, &[pinned_sim]), ["mac"]);
}

#[test]
fn no_host_for_a_worker_that_runs_crewmux_is_one_line_naming_each_reason_and_the_fix() {
    let mut mac = s("mac", 4);
    mac.no_crewmux = Some(NoCrewmux::Foreign("it is `Darwin arm64`".into()));
    let mut down = s("down", 2);
    down.no_crewmux = Some(NoCrewmux::NotAnswering(
        "it did not answer within 12 s".into(),
    ));
    let e = none_runs_crewmux(
        "simmer",
        "sim",
        &["mac".into(), "down".into()],
        &[mac, down],
    );
    assert_eq!(
        e.to_string(),
        "--hosts mac,down: worker `simmer` uses provider `sim`, which runs crewmux itself, and no host listed can run this crewmux (mac: it is `Darwin arm64`; down: it did not answer within 12 s): add `local` to --hosts, or give the worker another provider"
    );
}

#[test]
fn a_bad_hosts_list_is_one_line_naming_the_fix() {
    let hosts = Hosts::default();
    let e = slots(&["box".into()], &hosts, 4).unwrap_err().to_string();
    assert!(
        e.starts_with("--hosts: unknown host `box`: the hosts are local;"),
        "{e}"
    );
    let e = slots(&["local".into(), "local".into()], &hosts, 4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`local` is given twice"), "{e}");
    let e = slots(&["local".into(), String::new()], &hosts, 4)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--hosts \"local,\": an empty host name"),
        "{e}"
    );
    assert_eq!(
        slots(&["local".into()], &hosts, 3).unwrap(),
        [s("local", 3)]
    );
}

/// The hosts `spread` gives no worker, as `dispatch` names them.
fn unused_of(slots: &[Slots], wants: &[Want<'_>]) -> Vec<(String, String)> {
    unused(slots, wants, &spread(slots, wants))
        .into_iter()
        .map(|u| (u.host, u.reason))
        .collect()
}

#[test]
fn a_host_that_gets_no_worker_is_named_with_the_reason_planning_had() {
    let mut down = s("box", 4);
    down.no_crewmux = Some(NoCrewmux::NotAnswering(
        "ssh to host box: ssh: connect to host 127.0.0.1 port 2222: Connection refused".into(),
    ));
    // Every free worker runs crewmux: the probe's answer is the reason.
    assert_eq!(
        unused_of(&[down.clone(), s("local", 1)], &[SIM, SIM]),
        [(
            "box".to_string(),
            "not answering: ssh to host box: ssh: connect to host 127.0.0.1 port 2222: Connection refused".to_string()
        )]
    );
    let mut mac = s("mac", 2);
    mac.no_crewmux = Some(NoCrewmux::Foreign("it is `Darwin arm64`".into()));
    assert_eq!(
        unused_of(&[mac, s("local", 1)], &[SIM]),
        [(
            "mac".to_string(),
            "cannot run this crewmux, which the free workers' provider runs: it is `Darwin arm64`"
                .to_string()
        )]
    );
    // A host that answered well and lost on capacity says its capacity; `local` its
    // `parallel`.
    assert_eq!(
        unused_of(&[s("local", 4), s("box", 2)], &free(1)),
        [(
            "box".to_string(),
            "max_workers 2: the 1 free worker went to hosts with as many free slots or more"
                .to_string()
        )]
    );
    assert_eq!(
        unused_of(&[s("box", 4), s("local", 1)], &free(2)),
        [(
            "local".to_string(),
            "parallel 1: the 2 free workers went to hosts with as many free slots or more"
                .to_string()
        )]
    );
    // Pinned workers elsewhere, none free.
    assert_eq!(
        unused_of(&[s("box", 4), s("local", 1)], &pinned(&[Some("local")])),
        [(
            "box".to_string(),
            "every worker names its own host".to_string()
        )]
    );
    // A host every listed worker reaches says nothing.
    assert!(unused_of(&[s("box", 1), s("local", 1)], &free(2)).is_empty());
}

#[test]
fn a_host_that_cannot_run_crewmux_and_lost_the_others_on_capacity_says_both() {
    let mut down = s("box", 1);
    down.no_crewmux = Some(NoCrewmux::NotAnswering(
        "it did not answer within 12 s".into(),
    ));
    assert_eq!(
        unused_of(&[s("local", 3), down], &[SIM, Want::default()]),
        [(
            "box".to_string(),
            "not answering: it did not answer within 12 s; max_workers 1: the 1 other free worker went to hosts with as many free slots or more".to_string()
        )]
    );
}
