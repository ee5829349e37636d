//! The test server's Tasks extension (`--modern`, for a client that
//! declares `io.modelcontextprotocol/tasks`): the tool `job` answers with a
//! task handle, works `steps` steps of `ms` milliseconds in the background
//! (its status message says which), optionally asks a question on the way
//! (`ask: true`: the task turns `input_required` until `tasks/update`
//! brings the answer), and completes with a text result. `tasks/cancel`
//! cancels it (logged as `task cancelled ID`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, GetTaskResult, InputRequest, InputRequests, InputResponses, Task, TaskPayload,
};
use serde_json::Value;

use crate::server::log;

/// The poll interval the server asks for.
const POLL_MS: u64 = 20;

#[derive(Default)]
struct Job {
    payload: Option<TaskPayload>,
    message: Option<String>,
    answers: Option<InputResponses>,
}

/// Every task of the server.
#[derive(Default, Clone)]
pub struct Jobs {
    jobs: Arc<Mutex<HashMap<String, Job>>>,
}

fn now() -> String {
    "2026-01-01T00:00:00Z".to_owned()
}

impl Jobs {
    fn set(&self, id: &str, payload: TaskPayload, message: Option<String>) {
        if let Ok(mut jobs) = self.jobs.lock()
            && let Some(job) = jobs.get_mut(id)
            && !matches!(job.payload, Some(TaskPayload::Cancelled))
        {
            job.payload = Some(payload);
            job.message = message;
        }
    }

    fn cancelled(&self, id: &str) -> bool {
        self.jobs.lock().is_ok_and(|jobs| {
            matches!(
                jobs.get(id).and_then(|j| j.payload.as_ref()),
                Some(TaskPayload::Cancelled)
            )
        })
    }

    /// Start a job; its handle.
    pub fn start(&self, steps: u64, ms: u64, ask: bool) -> CreateTaskResult {
        let id = format!("task-{}", rand_id());
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.insert(
                id.clone(),
                Job {
                    payload: Some(TaskPayload::Working),
                    ..Job::default()
                },
            );
        }
        let jobs = self.clone();
        let task_id = id.clone();
        tokio::spawn(async move {
            for i in 1..=steps {
                if jobs.cancelled(&task_id) {
                    return;
                }
                jobs.set(
                    &task_id,
                    TaskPayload::Working,
                    Some(format!("step {i} of {steps}")),
                );
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            let mut answer = String::new();
            if ask {
                let Ok(schema) = serde_json::from_value::<ElicitationSchema>(serde_json::json!({
                    "type": "object", "properties": {"color": {"type": "string", "default": "blue"}}
                })) else {
                    return;
                };
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: "Which color?".into(),
                    requested_schema: schema,
                };
                let requests: InputRequests = [(
                    "color".to_owned(),
                    InputRequest::Elicitation(ElicitRequest::new(params)),
                )]
                .into();
                jobs.set(
                    &task_id,
                    TaskPayload::InputRequired {
                        input_requests: requests,
                    },
                    None,
                );
                loop {
                    if jobs.cancelled(&task_id) {
                        return;
                    }
                    let got = jobs
                        .jobs
                        .lock()
                        .ok()
                        .and_then(|mut j| j.get_mut(&task_id).and_then(|j| j.answers.take()));
                    if let Some(answers) = got {
                        let color = answers
                            .get("color")
                            .and_then(|r| r.get("content"))
                            .and_then(|c| c.get("color"));
                        answer = format!(", color {}", color.map(Value::to_string).unwrap_or_default());
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            let result = CallToolResult::success(vec![ContentBlock::text(format!(
                "done after {steps} steps{answer}"
            ))]);
            let object = match serde_json::to_value(result) {
                Ok(Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            };
            jobs.set(
                &task_id,
                TaskPayload::Completed { result: object },
                Some("finished".into()),
            );
        });
        CreateTaskResult::new(
            Task::new(id, rmcp::model::TaskStatus::Working, now(), now())
                .with_poll_interval_ms(POLL_MS)
                .with_status_message("started"),
        )
    }

    pub fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let jobs = self
            .jobs
            .lock()
            .map_err(|_| ErrorData::internal_error("poisoned", None))?;
        let job = jobs
            .get(id)
            .ok_or_else(|| ErrorData::invalid_params(format!("no task {id}"), None))?;
        let payload = job.payload.clone().unwrap_or(TaskPayload::Working);
        let mut task = Task::new(id, payload.status(), now(), now()).with_poll_interval_ms(POLL_MS);
        if let Some(message) = &job.message {
            task = task.with_status_message(message.clone());
        }
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    pub fn update(&self, id: &str, answers: InputResponses) {
        if let Ok(mut jobs) = self.jobs.lock()
            && let Some(job) = jobs.get_mut(id)
        {
            job.answers = Some(answers);
            job.payload = Some(TaskPayload::Working);
        }
    }

    pub fn cancel(&self, id: &str) {
        log(&format!("task cancelled {id}"));
        if let Ok(mut jobs) = self.jobs.lock()
            && let Some(job) = jobs.get_mut(id)
        {
            job.payload = Some(TaskPayload::Cancelled);
        }
    }
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::SeqCst)
}
