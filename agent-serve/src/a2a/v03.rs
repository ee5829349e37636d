//! v0.3 over JSON-RPC, for peers that still speak it (ADK, LangGraph): its
//! method names, and its shapes translated to and from v1.0's, so one
//! implementation serves both.
//!
//! The translation, one rule each: `kind`-tagged parts (`text`, `data`,
//! `file`) are v1.0's field-tagged parts; roles `user`/`agent` are
//! `ROLE_USER`/`ROLE_AGENT`; states `completed`, `input-required`, ... are
//! `TASK_STATE_COMPLETED`, ...; a task, message and update carry `kind`; a
//! status update is `final` when its state ends or pauses the stream;
//! `configuration.blocking: false` is `returnImmediately`.

use a2a::A2AError;
use serde_json::{Map, Value, json};

use super::jsonrpc::parsed;
use super::ops::Op;

/// The v0.3 methods served.
pub(super) const METHODS: &[&str] = &[
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
];

/// A v0.3 method's operation, its params translated.
pub(super) fn op(method: &str, params: Value) -> Result<Op, A2AError> {
    Ok(match method {
        "message/send" => Op::Send(parsed(send_params(params)?, method)?),
        "message/stream" => Op::SendStreaming(parsed(send_params(params)?, method)?),
        "tasks/get" => Op::Get(parsed(task_params(params), method)?),
        "tasks/cancel" => Op::Cancel(parsed(task_params(params), method)?),
        "tasks/resubscribe" => Op::Subscribe(parsed(task_params(params), method)?),
        "agent/getAuthenticatedExtendedCard" => Op::ExtendedCard,
        _ => Op::Push,
    })
}

/// `{id, historyLength}` as v1.0's (the same, less `metadata`).
fn task_params(params: Value) -> Value {
    let mut out = Map::new();
    for key in ["id", "historyLength"] {
        if let Some(value) = params.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(out)
}

/// `MessageSendParams` as v1.0's `SendMessageRequest`.
fn send_params(params: Value) -> Result<Value, A2AError> {
    let message = params
        .get("message")
        .ok_or_else(|| A2AError::invalid_params("the params hold no message"))?;
    let mut out = json!({ "message": message_in(message)? });
    if let Some(configuration) = params.get("configuration").and_then(Value::as_object) {
        let mut c = Map::new();
        if let Some(modes) = configuration.get("acceptedOutputModes") {
            c.insert("acceptedOutputModes".into(), modes.clone());
        }
        if let Some(length) = configuration.get("historyLength") {
            c.insert("historyLength".into(), length.clone());
        }
        if configuration.get("blocking") == Some(&Value::Bool(false)) {
            c.insert("returnImmediately".into(), true.into());
        }
        if let Some(push) = configuration
            .get("pushNotificationConfig")
            .filter(|p| !p.is_null())
        {
            c.insert(
                "taskPushNotificationConfig".into(),
                json!({"url": push["url"], "taskId": ""}),
            );
        }
        out["configuration"] = Value::Object(c);
    }
    if let Some(metadata) = params.get("metadata") {
        out["metadata"] = metadata.clone();
    }
    Ok(out)
}

/// A v0.3 message as v1.0's.
fn message_in(message: &Value) -> Result<Value, A2AError> {
    let role = match message["role"].as_str() {
        Some("user") => "ROLE_USER",
        Some("agent") => "ROLE_AGENT",
        other => {
            return Err(A2AError::invalid_params(format!(
                "message.role {other:?}: give \"user\""
            )));
        }
    };
    let parts = message["parts"]
        .as_array()
        .ok_or_else(|| A2AError::invalid_params("message.parts must be a list"))?
        .iter()
        .enumerate()
        .map(|(i, p)| part_in(i, p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = json!({"role": role, "parts": parts, "messageId": message["messageId"]});
    for key in [
        "contextId",
        "taskId",
        "referenceTaskIds",
        "metadata",
        "extensions",
    ] {
        if let Some(value) = message.get(key).filter(|v| !v.is_null()) {
            out[key] = value.clone();
        }
    }
    Ok(out)
}

fn part_in(i: usize, part: &Value) -> Result<Value, A2AError> {
    let mut out = match part["kind"].as_str() {
        Some("text") => json!({"text": part["text"]}),
        Some("data") => json!({"data": part["data"]}),
        Some("file") => {
            let file = &part["file"];
            let mut out = if let Some(uri) = file.get("uri") {
                json!({"url": uri})
            } else {
                json!({"raw": file["bytes"]})
            };
            if let Some(name) = file.get("name") {
                out["filename"] = name.clone();
            }
            if let Some(mime) = file.get("mimeType") {
                out["mediaType"] = mime.clone();
            }
            out
        }
        other => {
            return Err(A2AError::invalid_params(format!(
                "message.parts[{i}].kind {other:?}: give \"text\", \"data\" or \"file\""
            )));
        }
    };
    if let Some(metadata) = part.get("metadata").filter(|m| !m.is_null()) {
        out["metadata"] = metadata.clone();
    }
    Ok(out)
}

/// A v1.0 result as v0.3's: `{"task": ...}` is the task itself.
pub(super) fn result(value: Value) -> Value {
    match value {
        Value::Object(mut object) if object.len() == 1 && object.contains_key("task") => {
            task_out(object.remove("task").unwrap_or_default())
        }
        Value::Object(mut object) if object.len() == 1 && object.contains_key("message") => {
            message_out(object.remove("message").unwrap_or_default())
        }
        Value::Object(object) if object.contains_key("status") && object.contains_key("contextId") => {
            task_out(Value::Object(object))
        }
        // A card, as it is.
        other => other,
    }
}

/// A v1.0 stream update as v0.3's event.
pub(super) fn update(value: Value) -> Value {
    let Value::Object(mut object) = value else {
        return value;
    };
    if let Some(task) = object.remove("task") {
        return task_out(task);
    }
    if let Some(message) = object.remove("message") {
        return message_out(message);
    }
    if let Some(mut status) = object.remove("statusUpdate") {
        let state = status["status"]["state"].as_str().unwrap_or_default().to_owned();
        status["status"] = status_out(status["status"].take());
        status["kind"] = "status-update".into();
        status["final"] = json!(matches!(
            state.as_str(),
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_REJECTED"
                | "TASK_STATE_INPUT_REQUIRED"
                | "TASK_STATE_AUTH_REQUIRED"
        ));
        return status;
    }
    if let Some(mut artifact) = object.remove("artifactUpdate") {
        artifact["artifact"] = artifact_out(artifact["artifact"].take());
        artifact["kind"] = "artifact-update".into();
        return artifact;
    }
    Value::Object(object)
}

fn task_out(mut task: Value) -> Value {
    task["kind"] = "task".into();
    task["status"] = status_out(task["status"].take());
    if let Some(artifacts) = task.get_mut("artifacts").and_then(Value::as_array_mut) {
        for artifact in artifacts {
            *artifact = artifact_out(artifact.take());
        }
    }
    if let Some(history) = task.get_mut("history").and_then(Value::as_array_mut) {
        for message in history {
            *message = message_out(message.take());
        }
    }
    task
}

fn status_out(mut status: Value) -> Value {
    let state = status["state"].as_str().unwrap_or("TASK_STATE_UNSPECIFIED");
    let state = match state.strip_prefix("TASK_STATE_") {
        Some("UNSPECIFIED") | None => "unknown".to_owned(),
        Some(name) => name.to_ascii_lowercase().replace('_', "-"),
    };
    status["state"] = state.into();
    if let Some(message) = status.get_mut("message").filter(|m| !m.is_null()) {
        *message = message_out(message.take());
    }
    status
}

fn message_out(mut message: Value) -> Value {
    message["kind"] = "message".into();
    message["role"] = match message["role"].as_str() {
        Some("ROLE_USER") => "user",
        _ => "agent",
    }
    .into();
    parts_out(&mut message);
    message
}

fn artifact_out(mut artifact: Value) -> Value {
    parts_out(&mut artifact);
    artifact
}

fn parts_out(holder: &mut Value) {
    let Some(parts) = holder.get_mut("parts").and_then(Value::as_array_mut) else {
        return;
    };
    for part in parts {
        let mut out = if let Some(text) = part.get("text") {
            json!({"kind": "text", "text": text})
        } else if let Some(data) = part.get("data") {
            json!({"kind": "data", "data": data})
        } else {
            let mut file = Map::new();
            if let Some(url) = part.get("url") {
                file.insert("uri".into(), url.clone());
            }
            if let Some(raw) = part.get("raw") {
                file.insert("bytes".into(), raw.clone());
            }
            if let Some(name) = part.get("filename") {
                file.insert("name".into(), name.clone());
            }
            if let Some(mime) = part.get("mediaType") {
                file.insert("mimeType".into(), mime.clone());
            }
            json!({"kind": "file", "file": file})
        };
        if let Some(metadata) = part.get("metadata") {
            out["metadata"] = metadata.clone();
        }
        *part = out;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_task_reads_as_v03() {
        let v1 = json!({"task": {"id": "run_1", "contextId": "ctx_1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"messageId": "m", "role": "ROLE_AGENT",
                "parts": [{"text": "Approve?"}, {"data": {"pending": []}}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "hi"}]}]}});
        let old = result(v1);
        assert_eq!(old["kind"], "task");
        assert_eq!(old["status"]["state"], "input-required");
        assert_eq!(old["status"]["message"]["role"], "agent");
        assert_eq!(
            old["status"]["message"]["parts"][1],
            json!({"kind": "data", "data": {"pending": []}})
        );
        assert_eq!(
            old["artifacts"][0]["parts"][0],
            json!({"kind": "text", "text": "hi"})
        );
    }

    #[test]
    fn a_v03_message_reads_as_v1() {
        let params = json!({"message": {"kind": "message", "messageId": "m", "role": "user",
            "parts": [{"kind": "text", "text": "hi"}, {"kind": "data", "data": {"approve": true}}], "taskId": "run_1"},
            "configuration": {"blocking": false}});
        let Op::Send(request) = op("message/send", params).unwrap() else {
            panic!("not a send")
        };
        assert_eq!(request.message.task_id.as_deref(), Some("run_1"));
        assert_eq!(request.message.parts.len(), 2);
        assert_eq!(request.configuration.unwrap().return_immediately, Some(true));
        let bad = op(
            "message/send",
            json!({"message": {"role": "user", "parts": [{"kind": "video"}]}}),
        );
        assert!(bad.err().unwrap().message.contains("parts[0].kind"));
    }

    #[test]
    fn a_final_status_update_says_so() {
        let v1 = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let old = update(v1);
        assert_eq!(
            (old["kind"].as_str(), old["final"].as_bool()),
            (Some("status-update"), Some(true))
        );
        assert_eq!(old["status"]["state"], "completed");
    }
}
