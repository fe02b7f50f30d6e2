//! Prompt packaging (SPEC §5): persona, project, the task and constraints, capped at
//! `max_chars` without ever cutting the task.

use std::path::Path;

/// Package a worker's prompt. Sections in order: persona, project, task, constraints; when
/// over `max_chars`, the lowest sections are dropped first and the task is always kept whole.
pub fn package(role: &str, task: &str, project: &Path, max_chars: usize) -> String {
    let persona = format!("Role: {role}\nYou are the team's {role}.");
    let project = format!("Project: {}", project.display());
    let task = format!("Task: {task}");
    let constraints =
        "Constraints: Follow existing patterns. No hardcoded secrets. Verify changes.".to_string();
    let mut sections = vec![persona, project, task, constraints];
    while sections.iter().map(|s| s.len() + 2).sum::<usize>() > max_chars && sections.len() > 1 {
        let task_at = sections
            .iter()
            .position(|s| s.starts_with("Task: "))
            .unwrap_or(0);
        let drop = if sections.len() - 1 != task_at {
            sections.len() - 1
        } else if task_at > 0 {
            task_at - 1
        } else {
            break;
        };
        sections.remove(drop);
    }
    sections.join("\n\n")
}
