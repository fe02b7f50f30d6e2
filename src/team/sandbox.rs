//! A team's fences as written: the rules a `[sandbox]` table and a worker's `sandbox` obey
//! at load, and `run --sandbox MODE` over them (README "Sandbox").

use crate::domain::{Sandbox, SandboxMode, SandboxSpec, TeamSpec};

/// `run --sandbox MODE`: every worker's fence takes `mode`, over the team's and its own;
/// their `network` and `image` stay.
pub fn force_mode(spec: &mut TeamSpec, mode: SandboxMode) {
    spec.sandbox.get_or_insert_with(SandboxSpec::default).mode = Some(mode);
    for w in &mut spec.workers {
        if let Some(s) = &mut w.sandbox {
            s.mode = None;
        }
    }
}

/// What is wrong with the fence a worker gets from `team` and its own `worker` table, as
/// the end of a one-line message: a container without an image, an image for a fence that
/// is not a container.
pub fn problem(team: Option<&SandboxSpec>, worker: Option<&SandboxSpec>) -> Option<String> {
    let s = Sandbox::resolve(team, worker);
    match (s.mode, &s.image) {
        (SandboxMode::Container, None) => Some(
            "`mode = \"container\"` needs `image = \"…\"` (the image the agent runs in)".into(),
        ),
        (SandboxMode::Container, Some(i)) if i.trim().is_empty() => {
            Some("`image` is empty: name the image the agent runs in".into())
        }
        (m, Some(_)) if m != SandboxMode::Container => Some(format!(
            "`image` is for `mode = \"container\"`, and the mode is `{m}`: remove `image` or use the container mode"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_container_needs_an_image_and_only_a_container_takes_one() {
        let container = SandboxSpec {
            mode: Some(SandboxMode::Container),
            ..Default::default()
        };
        assert!(problem(Some(&container), None)
            .unwrap()
            .contains("needs `image"));
        let image = SandboxSpec {
            image: Some("node:22".into()),
            ..Default::default()
        };
        assert_eq!(problem(Some(&container), Some(&image)), None);
        assert!(problem(None, Some(&image))
            .unwrap()
            .contains("the mode is `none`"));
    }

    #[test]
    fn the_flag_wins_over_the_workers_modes() {
        let mut spec = TeamSpec {
            workers: vec![crate::domain::WorkerSpec {
                sandbox: Some(SandboxSpec {
                    mode: Some(SandboxMode::None),
                    network: Some(crate::domain::SandboxNetwork::None),
                    image: None,
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        force_mode(&mut spec, SandboxMode::Bwrap);
        let s = Sandbox::resolve(spec.sandbox.as_ref(), spec.workers[0].sandbox.as_ref());
        assert_eq!(s.label(), "bwrap, no network");
    }
}
