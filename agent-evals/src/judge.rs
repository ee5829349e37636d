//! Rubric expectations: a judge model (its own, not the agent's) reads the
//! conversation, the answer and the rubric, and answers with structured
//! output `{"pass": bool, "reason": string}`.
//!
//! Invariant: a verdict is the judge's validated output or a failure that
//! says the judge could not grade and why; a judge that fails never passes
//! a case.

use std::sync::Arc;

use loopwright_core::{Agent, LanguageModel, Message, OutputSpec};
use serde::Deserialize;

/// The judge's instructions.
pub const JUDGE_SYSTEM: &str = "You grade the answer of an AI agent against a rubric. Read the conversation \
the agent was given, its answer and the rubric. Judge only what the rubric asks; do not grade style unless \
it asks. Answer with pass (true when the answer meets the rubric, false otherwise) and a one-sentence reason \
naming what decided it.";

/// Model calls the judge may make (a structured answer in tool mode may
/// need a retry).
const JUDGE_MAX_STEPS: u32 = 3;

/// The judge's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct Verdict {
    pub pass: bool,
    pub reason: String,
}

fn verdict_spec() -> Result<OutputSpec, String> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "pass": {"type": "boolean", "description": "Whether the answer meets the rubric."},
            "reason": {"type": "string", "description": "One sentence: what decided it."}
        },
        "required": ["pass", "reason"],
        "additionalProperties": false
    });
    OutputSpec::from_schema("verdict", schema).map_err(|e| e.to_string())
}

/// The judge's prompt for a run.
pub(crate) fn prompt(conversation: &[Message], answer: &str, rubric: &str) -> String {
    let mut text = String::from("The conversation the agent was given:\n<conversation>\n");
    for m in conversation {
        let role = serde_json::to_value(m.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        text.push_str(&format!("{role}: {}\n", m.text()));
    }
    text.push_str("</conversation>\n\nThe agent's answer:\n<answer>\n");
    text.push_str(answer);
    text.push_str("\n</answer>\n\nThe rubric:\n<rubric>\n");
    text.push_str(rubric);
    text.push_str("\n</rubric>\n\nDoes the answer meet the rubric?");
    text
}

/// Ask `model` whether `answer` meets `rubric`.
pub(crate) async fn judge(
    model: Arc<dyn LanguageModel>,
    conversation: &[Message],
    answer: &str,
    rubric: &str,
) -> Result<Verdict, String> {
    let agent = Agent::builder(model)
        .name("judge")
        .system(JUDGE_SYSTEM)
        .max_steps(JUDGE_MAX_STEPS)
        .output(verdict_spec()?)
        .build();
    let result = agent
        .run(prompt(conversation, answer, rubric))
        .await
        .map_err(|e| format!("the judge could not grade: {e}"))?;
    let value = result
        .output
        .ok_or_else(|| format!("the judge gave no verdict: {:?}", result.outcome.exit()))?;
    serde_json::from_value(value).map_err(|e| format!("the judge's verdict is unreadable: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_prompt_holds_the_conversation_the_answer_and_the_rubric() {
        let p = prompt(&[Message::user("Capital of France?")], "Paris.", "Names Paris.");
        assert!(p.contains("user: Capital of France?\n</conversation>"), "{p}");
        assert!(p.contains("<answer>\nParis.\n</answer>"), "{p}");
        assert!(p.contains("<rubric>\nNames Paris.\n</rubric>"), "{p}");
        assert!(verdict_spec().is_ok());
    }
}
