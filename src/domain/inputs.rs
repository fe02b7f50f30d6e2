//! What `crewmux run` is given besides the problem (`--context`, `--files`,
//! `--expected-outcome`), as the seeds took them: each becomes its own section of every
//! agent worker's packaged prompt (`providers::prompt`), shown in the Prompt tab.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The run's inputs beside the problem; all empty for a run given none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RunInputs {
    /// `--context TEXT` (or the text of `--context @FILE`): background the workers should
    /// know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// `--files a,b`: files of the project the task is about, relative to the project.
    /// Their paths are listed in the prompt, their text (read when the attempt starts,
    /// from the worker's own tree) as far as the prompt cap allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<PathBuf>,
    /// `--expected-outcome TEXT`: what the result should be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_outcome: Option<String>,
}

impl RunInputs {
    pub fn is_empty(&self) -> bool {
        self.context.is_none() && self.files.is_empty() && self.expected_outcome.is_none()
    }
}
