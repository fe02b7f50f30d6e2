//! The person's key bindings over the default keymaps (the config file's `[keys]` table:
//! `action = "key"` or `action = ["key", "key"]`). A rebound action loses its default keys
//! in every keymap it is in and gets the new ones there; the footer and the help show the
//! keys in force because they read the same tables.

use std::borrow::Cow;

use crossterm::event::{KeyCode, KeyModifiers};

use super::action::{
    Action, Binding, CONFIRM, COUNCIL_VIEW, DIFF_VIEW, FORM, GLOBAL, HELP, INPUT, MERGE_CONFIRM,
    OUTPUT, ROSTER, SCROLL, SEND_FORM, WORKER,
};

/// One key as the config names it, e.g. `r`, `+`, `C-r`, `M-x`, `Enter`, `F5`, `S-Tab`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
    /// How hints write it (as the config wrote it).
    pub label: String,
}

/// Rebound actions and their keys, in the order the config gave them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    bound: Vec<(Action, Vec<Key>)>,
}

/// Every stack of keymaps that is active at once (see `action::default_keymaps`): a key
/// may mean one action only within each.
const STACKS: &[&[&[Binding]]] = &[
    &[ROSTER, WORKER, GLOBAL],
    &[COUNCIL_VIEW, SCROLL, GLOBAL, WORKER],
    &[OUTPUT, WORKER, SCROLL, GLOBAL],
    &[DIFF_VIEW, WORKER, SCROLL, GLOBAL],
    &[WORKER, SCROLL, GLOBAL],
    &[INPUT],
    &[HELP],
    &[CONFIRM],
    &[MERGE_CONFIRM],
    &[FORM],
    &[SEND_FORM],
    &[super::approval::APPROVAL],
];

/// The names of the actions a config may bind (kebab case), with each one's action.
pub fn bindable() -> Vec<(String, Action)> {
    let mut out: Vec<(String, Action)> = Vec::new();
    for b in STACKS.iter().flat_map(|s| s.iter()).flat_map(|m| m.iter()) {
        if matches!(b.action, Action::SelectTab(_) | Action::InsertChar(_)) {
            continue;
        }
        let Ok(serde_json::Value::String(name)) = serde_json::to_value(b.action) else {
            continue;
        };
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, b.action));
        }
    }
    out
}

/// The action a config names, e.g. `retry`, `next-waiting`.
///
/// # Errors
/// The name is not a bindable action: the message lists them.
pub fn action_named(name: &str) -> Result<Action, String> {
    let all = bindable();
    all.iter()
        .find(|(n, _)| n == name)
        .map(|(_, a)| *a)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
            match crate::text::closest(name, names.iter().copied()) {
                Some(near) => format!("unknown action `{name}`: did you mean `{near}`?"),
                None => format!("unknown action `{name}`: use one of {}", names.join(", ")),
            }
        })
}

/// Read a key as the config writes it: a single character (`r`, `+`, `?`), `C-` (Ctrl) or
/// `M-` (Alt) before one, or a named key (`Enter`, `Esc`, `Tab`, `S-Tab`, `Backspace`,
/// `Delete`, `Up`, `Down`, `Left`, `Right`, `Home`, `End`, `PageUp`, `PageDown`, `Space`,
/// `F1`–`F12`).
///
/// # Errors
/// The text names no key: the message says what to write.
pub fn parse_key(text: &str) -> Result<Key, String> {
    let bad = || {
        format!(
            "`{text}` is not a key: write one character (`r`, `+`), `C-r` (Ctrl), `M-r` (Alt), \
             or a name: Enter, Esc, Tab, S-Tab, Backspace, Delete, Up, Down, Left, Right, Home, \
             End, PageUp, PageDown, Space, F1-F12"
        )
    };
    let (mods, rest) = if let Some(r) = text.strip_prefix("C-") {
        (KeyModifiers::CONTROL, r)
    } else if let Some(r) = text.strip_prefix("M-") {
        (KeyModifiers::ALT, r)
    } else {
        (KeyModifiers::NONE, text)
    };
    let mut chars = rest.chars();
    let code = match (chars.next(), chars.next()) {
        (Some(c), None) if !c.is_control() && c != ' ' => KeyCode::Char(c),
        _ => match rest {
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Tab" => KeyCode::Tab,
            "S-Tab" | "BackTab" => KeyCode::BackTab,
            "Backspace" => KeyCode::Backspace,
            "Delete" => KeyCode::Delete,
            "Up" => KeyCode::Up,
            "Down" => KeyCode::Down,
            "Left" => KeyCode::Left,
            "Right" => KeyCode::Right,
            "Home" => KeyCode::Home,
            "End" => KeyCode::End,
            "PageUp" => KeyCode::PageUp,
            "PageDown" => KeyCode::PageDown,
            "Space" => KeyCode::Char(' '),
            f => match f.strip_prefix('F').and_then(|n| n.parse::<u8>().ok()) {
                Some(n) if (1..=12).contains(&n) => KeyCode::F(n),
                _ => return Err(bad()),
            },
        },
    };
    if mods != KeyModifiers::NONE && !matches!(code, KeyCode::Char(_)) {
        return Err(bad());
    }
    Ok(Key {
        code,
        mods,
        label: text.to_string(),
    })
}

impl Keys {
    /// Bind `action` to `keys` (replacing its default keys).
    ///
    /// # Errors
    /// A key already means another action where `action` works (the message names both and
    /// how to free it); nothing is bound then.
    pub fn bind(&mut self, action: Action, keys: Vec<Key>) -> Result<(), String> {
        self.bind_all(vec![(action, keys)]).map_err(|(_, m)| m)
    }

    /// Bind every action of a config file at once, each replacing its default keys, and
    /// only then look for clashes: a swap (`retry = "R"` with `add-worker = ["+", "r"]`)
    /// holds whatever order the file lists it in.
    ///
    /// # Errors
    /// The action whose key means another action where it works, with the message; nothing
    /// is bound then.
    pub fn bind_all(&mut self, bindings: Vec<(Action, Vec<Key>)>) -> Result<(), (Action, String)> {
        let mut next = self.clone();
        for (action, keys) in bindings {
            next.bound.retain(|(a, _)| *a != action);
            next.bound.push((action, keys));
        }
        next.clashes()?;
        *self = next;
        Ok(())
    }

    /// The first key that means two actions in one stack of keymaps: the rebound action it
    /// belongs to and a message.
    fn clashes(&self) -> Result<(), (Action, String)> {
        for stack in STACKS {
            let maps: Vec<Vec<Binding>> = stack.iter().map(|m| self.apply(m)).collect();
            let all: Vec<&Binding> = maps.iter().flatten().collect();
            for (i, a) in all.iter().enumerate() {
                let other = all[i + 1..]
                    .iter()
                    .find(|b| b.code == a.code && b.mods == a.mods && b.action != a.action);
                if let Some(b) = other {
                    let (mine, theirs) = if self.is_bound(a.action) {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    return Err((
                        mine.action,
                        format!(
                            "`{}` is already {}'s key where {} works: bind {} to another key \
                             too, or pick another",
                            mine.label,
                            name(theirs.action),
                            name(mine.action),
                            name(theirs.action)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn is_bound(&self, action: Action) -> bool {
        self.bound.iter().any(|(a, _)| *a == action)
    }

    /// The keymap `base` with these bindings applied: a rebound action's new keys where its
    /// default ones were (hinted as they were), every other binding as it is.
    pub fn apply(&self, base: &[Binding]) -> Vec<Binding> {
        if self.bound.is_empty() {
            return base.to_vec();
        }
        let mut out = Vec::with_capacity(base.len());
        for b in base {
            match self.bound.iter().find(|(a, _)| *a == b.action) {
                None => out.push(b.clone()),
                Some((action, keys)) => {
                    if out.iter().any(|o: &Binding| o.action == *action) {
                        continue;
                    }
                    let hint = base.iter().any(|x| x.action == *action && x.hint);
                    out.extend(keys.iter().map(|k| Binding {
                        code: k.code,
                        mods: k.mods,
                        label: Cow::Owned(k.label.clone()),
                        action: *action,
                        hint,
                    }));
                }
            }
        }
        out
    }
}

/// An action's config name (`retry`).
fn name(a: Action) -> String {
    match serde_json::to_value(a) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{a:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_keymaps_mean_one_action_per_key_wherever_they_are_active() {
        Keys::default().clashes().unwrap();
    }

    #[test]
    fn keys_read_as_the_config_writes_them() {
        let k = parse_key("C-r").unwrap();
        assert_eq!(
            (k.code, k.mods),
            (KeyCode::Char('r'), KeyModifiers::CONTROL)
        );
        assert_eq!(parse_key("+").unwrap().code, KeyCode::Char('+'));
        assert_eq!(parse_key("F5").unwrap().code, KeyCode::F(5));
        assert_eq!(parse_key("S-Tab").unwrap().code, KeyCode::BackTab);
        for bad in ["", "Ctrl+r", "F13", "C-Enter", "rr"] {
            assert!(
                parse_key(bad).unwrap_err().contains("is not a key"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_rebound_action_loses_its_default_keys_and_keeps_its_hint() {
        let mut keys = Keys::default();
        keys.bind(Action::Retry, vec![parse_key("R").unwrap()])
            .unwrap();
        let worker = keys.apply(WORKER);
        let retry: Vec<&Binding> = worker
            .iter()
            .filter(|b| b.action == Action::Retry)
            .collect();
        assert_eq!(retry.len(), 1);
        assert_eq!((retry[0].label.as_ref(), retry[0].hint), ("R", true));
        assert!(!worker.iter().any(|b| b.code == KeyCode::Char('r')));
    }

    #[test]
    fn a_key_that_means_another_action_there_is_refused() {
        let mut keys = Keys::default();
        let err = keys
            .bind(Action::Retry, vec![parse_key("q").unwrap()])
            .unwrap_err();
        assert!(err.contains("`q` is already quit's key"), "{err}");
        assert_eq!(keys, Keys::default(), "nothing bound");
        // Free `q` first, then it may be taken.
        keys.bind(Action::Quit, vec![parse_key("Q").unwrap()])
            .unwrap();
        keys.bind(Action::Retry, vec![parse_key("q").unwrap()])
            .unwrap();
    }

    #[test]
    fn a_swap_of_keys_holds_whatever_order_it_is_given_in() {
        for order in [[0, 1], [1, 0]] {
            let pairs = [
                (Action::Retry, vec![parse_key("R").unwrap()]),
                (
                    Action::AddWorker,
                    vec![parse_key("+").unwrap(), parse_key("r").unwrap()],
                ),
            ];
            let mut keys = Keys::default();
            keys.bind_all(order.iter().map(|&i| pairs[i].clone()).collect())
                .unwrap();
            let r = |map: &[Binding]| {
                keys.apply(map)
                    .into_iter()
                    .find(|b| b.code == KeyCode::Char('r'))
                    .map(|b| b.action)
            };
            assert_eq!(r(GLOBAL), Some(Action::AddWorker), "{order:?}");
            assert_eq!(r(WORKER), None, "{order:?}: retry is on R now");
        }
    }

    #[test]
    fn unknown_action_names_say_the_near_one_or_list_the_known_ones() {
        assert_eq!(action_named("retry").unwrap(), Action::Retry);
        assert_eq!(
            action_named("retyr").unwrap_err(),
            "unknown action `retyr`: did you mean `retry`?"
        );
        assert_eq!(
            action_named("add-workr").unwrap_err(),
            "unknown action `add-workr`: did you mean `add-worker`?"
        );
        let err = action_named("teleport").unwrap_err();
        assert!(
            err.contains("unknown action `teleport`: use one of") && err.contains("next-waiting")
        );
    }
}
