//! A remote task as this side knows it, built up from what the agent sent:
//! the task, its status updates, its artifacts chunk by chunk.
//!
//! Invariant: an artifact chunk with `append` extends the artifact of its
//! id, any other replaces it; the state is the last one the agent gave.

use a2a::{Artifact, Message, PartContent, SendMessageResponse, StreamResponse, Task, TaskState};
use serde_json::Value;

/// What is known of one remote task.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tracked {
    pub(crate) task: Option<String>,
    pub(crate) context: Option<String>,
    pub(crate) state: TaskState,
    pub(crate) message: Option<Message>,
    pub(crate) artifacts: Vec<Artifact>,
}

impl Tracked {
    /// Whether the task ended or waits for the client.
    pub(crate) fn settled(&self) -> bool {
        self.state.is_terminal() || matches!(self.state, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Take in the task whole.
    pub(crate) fn task(&mut self, task: Task) {
        self.task = Some(task.id);
        self.context = Some(task.context_id);
        self.state = task.status.state;
        self.message = task.status.message;
        if let Some(artifacts) = task.artifacts {
            self.artifacts = artifacts;
        }
    }

    /// Take in a `SendMessage` answer: a task, or a message that is the
    /// whole answer.
    pub(crate) fn sent(&mut self, response: SendMessageResponse) {
        match response {
            SendMessageResponse::Task(task) => self.task(task),
            SendMessageResponse::Message(message) => self.answered(message),
        }
    }

    fn answered(&mut self, message: Message) {
        if message.context_id.is_some() {
            self.context = message.context_id.clone();
        }
        self.state = TaskState::Completed;
        self.message = Some(message);
    }

    /// Take in one streamed update.
    pub(crate) fn update(&mut self, update: StreamResponse) {
        match update {
            StreamResponse::Task(task) => self.task(task),
            StreamResponse::Message(message) => self.answered(message),
            StreamResponse::StatusUpdate(status) => {
                self.task = Some(status.task_id);
                self.context = Some(status.context_id);
                self.state = status.status.state;
                if status.status.message.is_some() {
                    self.message = status.status.message;
                }
            }
            StreamResponse::ArtifactUpdate(update) => {
                let id = update.artifact.artifact_id.clone();
                match self.artifacts.iter_mut().find(|a| a.artifact_id == id) {
                    Some(known) if update.append == Some(true) => known.parts.extend(update.artifact.parts),
                    Some(known) => *known = update.artifact,
                    None => self.artifacts.push(update.artifact),
                }
            }
        }
    }

    /// The status message's text.
    pub(crate) fn said(&self) -> String {
        self.message
            .as_ref()
            .map(|m| texts(&m.parts.iter().map(|p| &p.content).collect::<Vec<_>>()))
            .unwrap_or_default()
    }

    /// The answer: the artifacts' text (else the status message's), and
    /// their data parts.
    pub(crate) fn answer(&self) -> (String, Vec<Value>) {
        let contents: Vec<&PartContent> = self
            .artifacts
            .iter()
            .flat_map(|a| a.parts.iter().map(|p| &p.content))
            .collect();
        let text = texts(&contents);
        let data = contents
            .iter()
            .filter_map(|c| match c {
                PartContent::Data(d) => Some(d.clone()),
                _ => None,
            })
            .collect();
        if text.is_empty() {
            (self.said(), data)
        } else {
            (text, data)
        }
    }
}

fn texts(contents: &[&PartContent]) -> String {
    contents
        .iter()
        .filter_map(|c| match c {
            PartContent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// The state's name as the protocol writes it (`TASK_STATE_FAILED`).
pub(crate) fn state_name(state: &TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_append_to_their_artifact_and_a_fresh_chunk_replaces_it() {
        let mut tracked = Tracked::default();
        let updates = [
            json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "Let me"}]}}}),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": true, "artifact": {"artifactId": "a", "parts": [{"text": " look."}]}}}),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "Sunny."}]}}}),
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "b", "parts": [{"data": {"temp": 21}}]}}}),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ];
        for update in updates {
            tracked.update(serde_json::from_value(update).unwrap());
        }
        assert!(tracked.settled());
        assert_eq!(tracked.answer(), ("Sunny.".to_owned(), vec![json!({"temp": 21})]));
    }
}
