//! The run-level clarification gate (docs/design.md "Clarification"): decides, with no network and
//! no clock, whether a problem names enough to act on, and if not, which one question to ask.
//!
//! It mirrors the OMG seed's intent gate (`requires_clarification`, `intent_class`,
//! `clarification_prompt`, `confidence`) and extends it to coding work.
//!
//! # Rules, in order
//! The problem and every answer given so far are read together as one text, so a good
//! answer clears the gate on the next evaluation.
//!
//! 1. **Nothing to read**: no word at all (empty, only punctuation or emoji) → slot `problem`.
//! 2. **Too short**: fewer than [`MIN_WORDS`] words *and* no concrete target (a file path,
//!    a code identifier such as `parse_args`, `Foo::bar`, `HttpClient` or a backticked
//!    span) → slot `detail`. Words are Unicode words (UAX #29, `unicode-segmentation`);
//!    a word written in a script without spaces (Han, kana, Thai) counts half a word per
//!    character, since such words average about two characters.
//! 3. **No verb**: English text with no action verb (implement, fix, refactor, …) and no
//!    symptom word that implies a fix (crash, panic, broken, …) → slot `verb`.
//! 4. **No object**: English text where, after removing verbs, function words and vague
//!    words (`it`, `this`, `everything`, `code`, `better`, `bug`, …), no content word and no
//!    concrete target is left → slot `target`. This catches "fix it", "make it better",
//!    "clean up the code".
//! 5. **Auth/config intent** (an auth word such as OAuth, SSO, API key, token, credentials,
//!    together with a set-up verb such as add, configure, enable, rotate) must name a
//!    `provider` (GitHub, Google, Okta, …), a `credential_source` (env var, `.env`, vault,
//!    secrets manager, keychain, file) and a `scope` (scopes, permissions, roles, read-only,
//!    …); each one missing is a slot.
//!
//! **Non-English text.** The verb and object lists are English, so rules 3 and 4 apply only
//! to text the gate can read as English. Text is *not* English when most of its letters are
//! outside the Latin script (CJK, Cyrillic, Arabic, …), or when it is Latin script with no
//! English action verb and either accented letters or a common French, Spanish, German,
//! Italian or Portuguese function word (`le`, `la`, `der`, `und`, `para`, …). Such text is
//! judged on length only (rules 1 and 2); its intent is taken from any English keyword it
//! contains (`bug`, `OAuth`, a file path), else `unknown`, and its confidence is capped at
//! [`NON_ENGLISH_CONFIDENCE_CAP`].
//!
//! # Confidence
//! How sure the gate is that it understood the problem well enough to act on it
//! (`0.0..=1.0`): 0.5, +0.2 when an intent was recognised, +0.1 for a concrete target,
//! +0.1 for at least 8 words, −0.15 per missing slot (so at most 0.9); clamped to
//! `0.05..=0.95`.

use unicode_segmentation::UnicodeSegmentation;

use super::gate_words::*;
use crate::domain::ClarificationGate;

/// Fewer words than this (with no concrete target) is too short to act on.
pub const MIN_WORDS: f64 = 4.0;
/// The highest confidence given to text the gate cannot read as English.
pub const NON_ENGLISH_CONFIDENCE_CAP: f64 = 0.6;

/// Intent classes, as stored in [`ClarificationGate::intent_class`].
pub const INTENT_IMPLEMENT: &str = "implement";
pub const INTENT_FIX: &str = "fix";
pub const INTENT_REVIEW: &str = "review";
pub const INTENT_REFACTOR: &str = "refactor";
pub const INTENT_TEST: &str = "test";
pub const INTENT_DOCS: &str = "docs";
pub const INTENT_AUTH_CONFIG: &str = "auth-config";
pub const INTENT_UNKNOWN: &str = "unknown";

/// Missing-slot names, as stored in [`ClarificationGate::missing_slots`].
pub const SLOT_PROBLEM: &str = "problem";
pub const SLOT_DETAIL: &str = "detail";
pub const SLOT_VERB: &str = "verb";
pub const SLOT_TARGET: &str = "target";
pub const SLOT_PROVIDER: &str = "provider";
pub const SLOT_CREDENTIAL_SOURCE: &str = "credential_source";
pub const SLOT_SCOPE: &str = "scope";

/// Evaluate the gate on the problem and the answers given so far (read together).
///
/// Deterministic and cheap (a few regex passes). `prompt` is `Some` exactly when
/// `requires_clarification` is true: one question naming every missing slot.
pub fn evaluate(problem: &str, answers: &[String]) -> ClarificationGate {
    let mut text = problem.trim().to_string();
    for answer in answers {
        let answer = answer.trim();
        if !answer.is_empty() {
            text.push('\n');
            text.push_str(answer);
        }
    }
    let reading = Reading::of(&text);
    let mut missing: Vec<&str> = Vec::new();

    if reading.word_units == 0.0 {
        missing.push(SLOT_PROBLEM);
    } else {
        if reading.word_units < MIN_WORDS && !reading.concrete_target {
            missing.push(SLOT_DETAIL);
        }
        if reading.english {
            if reading.first_verb_intent.is_none() && !reading.symptom {
                missing.push(SLOT_VERB);
            }
            if !reading.concrete_target && !reading.content_word {
                missing.push(SLOT_TARGET);
            }
        }
        if reading.intent == INTENT_AUTH_CONFIG {
            if !reading.has_any(AUTH_PROVIDERS) {
                missing.push(SLOT_PROVIDER);
            }
            if !reading.credential_source {
                missing.push(SLOT_CREDENTIAL_SOURCE);
            }
            if !reading.scope {
                missing.push(SLOT_SCOPE);
            }
        }
    }

    let mut confidence = 0.5;
    if reading.intent != INTENT_UNKNOWN {
        confidence += 0.2;
    }
    if reading.concrete_target {
        confidence += 0.1;
    }
    if reading.word_units >= 8.0 {
        confidence += 0.1;
    }
    confidence -= 0.15 * missing.len() as f64;
    if !reading.english {
        confidence = confidence.min(NON_ENGLISH_CONFIDENCE_CAP);
    }
    let confidence = (confidence.clamp(0.05, 0.95) * 100.0).round() / 100.0;

    let requires = !missing.is_empty();
    ClarificationGate {
        requires_clarification: requires,
        intent_class: reading.intent.to_string(),
        prompt: requires.then(|| question(problem, &missing)),
        missing_slots: missing.into_iter().map(String::from).collect(),
        confidence,
    }
}

/// What the gate read from the text.
struct Reading {
    /// Lower-cased Unicode words, in order.
    words: Vec<String>,
    word_units: f64,
    english: bool,
    concrete_target: bool,
    /// A credential source is named (an env var counts).
    credential_source: bool,
    /// A scope or permission is named.
    scope: bool,
    first_verb_intent: Option<&'static str>,
    symptom: bool,
    content_word: bool,
    intent: &'static str,
}

impl Reading {
    fn of(text: &str) -> Reading {
        let words: Vec<String> = text.unicode_words().map(str::to_lowercase).collect();
        let word_units = words.iter().map(|w| word_units(w)).sum();
        let is = |list: &[&str], w: &str| list.contains(&w);
        let first_verb_intent = words.iter().find_map(|w| verb_intent(w));
        let symptom = words.iter().any(|w| is(SYMPTOMS, w));
        let english = is_english(text, &words, first_verb_intent.is_some());
        let concrete_target = CONCRETE_TARGET.is_match(text);
        let lower = text.to_lowercase();
        let credential_source = CREDENTIAL_SOURCE.is_match(&lower) || ENV_VAR.is_match(text);
        let scope = SCOPE.is_match(&lower);
        let content_word = words.iter().any(|w| {
            w.chars().count() >= 3
                && verb_intent(w).is_none()
                && !is(VAGUE, w)
                && !is(STOPWORDS, w)
                && !w.chars().all(|c| c.is_ascii_digit())
        });

        let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
        let intent = if AUTH_SETUP_PHRASE.is_match(&lower) {
            INTENT_AUTH_CONFIG
        } else {
            match first_verb_intent {
                Some(INTENT_IMPLEMENT) if has(TEST_NOUNS) => INTENT_TEST,
                Some(INTENT_IMPLEMENT) if has(DOCS_NOUNS) => INTENT_DOCS,
                Some(intent) => intent,
                None if symptom => INTENT_FIX,
                None if has(TEST_NOUNS) => INTENT_TEST,
                None if has(DOCS_NOUNS) => INTENT_DOCS,
                None => INTENT_UNKNOWN,
            }
        };
        Reading {
            words,
            word_units,
            english,
            concrete_target,
            credential_source,
            scope,
            first_verb_intent,
            symptom,
            content_word,
            intent,
        }
    }

    fn has_any(&self, list: &[&str]) -> bool {
        self.words.iter().any(|w| {
            list.contains(&w.as_str()) || w.split(['-', '.']).any(|part| list.contains(&part))
        })
    }
}

/// The intent of an English verb in any simple inflection (`fixes`, `fixed`, `fixing`).
fn verb_intent(word: &str) -> Option<&'static str> {
    let base = stem(word);
    VERBS
        .iter()
        .find(|(verb, _)| *verb == word || *verb == base)
        .map(|(_, intent)| *intent)
}

/// A crude English stem: drops `-ing`, `-ed`, `-es`, `-s` (and a doubled final consonant;
/// `-ies`/`-ied` of a verb in `y`).
fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(base) = word.strip_suffix(suffix) {
            // `tries`, `tried`: a final `y` that became `i`.
            if let Some(stem) = base.strip_suffix('i').filter(|_| suffix != "ing") {
                let with_y = format!("{stem}y");
                if VERBS.iter().any(|(v, _)| *v == with_y) {
                    return with_y;
                }
            }
            if base.len() >= 3 {
                if VERBS.iter().any(|(v, _)| *v == base) {
                    return base.to_string();
                }
                let chars: Vec<char> = base.chars().collect();
                let n = chars.len();
                if n >= 2 && chars[n - 1] == chars[n - 2] && !"slz".contains(chars[n - 1]) {
                    return chars[..n - 1].iter().collect();
                }
                let with_e = format!("{base}e");
                if VERBS.iter().any(|(v, _)| *v == with_e) {
                    return with_e;
                }
                return base.to_string();
            }
        }
    }
    word.to_string()
}

/// Word units of one Unicode word: 1, or half a unit per character in scripts written
/// without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar).
fn word_units(word: &str) -> f64 {
    let chars = word.chars().count();
    if chars > 0 && word.chars().all(is_spaceless_script) {
        chars as f64 / 2.0
    } else {
        1.0
    }
}

fn is_spaceless_script(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF      // Thai, Lao
        | 0x1000..=0x109F    // Myanmar
        | 0x1780..=0x17FF    // Khmer
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0x20000..=0x2FFFF) // CJK extensions B..
}

fn is_latin_letter(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c as u32, 0x00C0..=0x024F | 0x1E00..=0x1EFF)
}

/// See the module docs: the rule that decides whether the verb/object checks apply.
fn is_english(text: &str, words: &[String], has_english_verb: bool) -> bool {
    let letters: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.is_empty() {
        return true;
    }
    let latin = letters.iter().filter(|c| is_latin_letter(**c)).count();
    if latin * 2 < letters.len() {
        return false;
    }
    if has_english_verb {
        return true;
    }
    let accented = letters.iter().any(|c| !c.is_ascii());
    let foreign = words
        .iter()
        .any(|w| FOREIGN_FUNCTION_WORDS.contains(&w.as_str()));
    !(accented || foreign)
}

/// One question naming every missing slot, quoting (a short form of) the problem.
fn question(problem: &str, missing: &[&str]) -> String {
    let asks: Vec<&str> = missing
        .iter()
        .map(|slot| match *slot {
            SLOT_PROBLEM => "what the team should work on (what to change, and where)",
            SLOT_DETAIL => "what exactly should change and how to tell it is done",
            SLOT_VERB => "what to do (implement, fix, review, refactor, test or document)",
            SLOT_TARGET => "which file, module, function or feature it concerns",
            SLOT_PROVIDER => "which auth provider to use (e.g. GitHub, Google, Okta)",
            SLOT_CREDENTIAL_SOURCE => {
                "where the credentials come from (an env var, a secrets manager or a file)"
            }
            SLOT_SCOPE => "which scopes or permissions it needs",
            other => other,
        })
        .collect();
    let joined = match asks.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        [first, second] => format!("{first}, and {second}"),
        [init @ .., last] => format!("{}, and {}", init.join(", "), last),
    };
    let shown: String = problem.trim().chars().take(60).collect();
    let ellipsis = if problem.trim().chars().count() > 60 {
        "…"
    } else {
        ""
    };
    if shown.is_empty() {
        format!("Could you say {joined}?")
    } else {
        format!("\"{shown}{ellipsis}\": could you say {joined}?")
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
