//! Judging a run: the clarification gate, critics, verdict parsing and the report merge.
//! (Interim: replaced by the full judge module.)

pub mod gate {
    use crate::domain::ClarificationGate;

    /// Interim gate: asks only when the problem has fewer than three words.
    pub fn evaluate(problem: &str, answers: &[String]) -> ClarificationGate {
        let words = problem.split_whitespace().count()
            + answers
                .iter()
                .map(|a| a.split_whitespace().count())
                .sum::<usize>();
        let requires = words < 3;
        ClarificationGate {
            requires_clarification: requires,
            intent_class: "unknown".into(),
            missing_slots: if requires {
                vec!["target".into()]
            } else {
                vec![]
            },
            prompt: requires.then(|| "What should the team work on, exactly?".to_string()),
            confidence: 0.5,
        }
    }
}
