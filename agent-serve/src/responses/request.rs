//! A `POST /v1/responses` body, checked into what a run needs.
//!
//! Invariants:
//! - `input` becomes the turn's messages: message items of role `user` and
//!   `assistant` in order, `system` and `developer` items (with
//!   `instructions`) as system texts after the agent's own prompt;
//!   `function_call` / `function_call_output` items from an earlier turn are
//!   history only when each call has exactly one output before the next
//!   message, else the request is refused naming the item (`input[3]`);
//! - what would change the answer and cannot be honoured is refused with a
//!   400 naming it (client `tools`, `conversation`, `prompt`, an unknown
//!   `text.format` or `reasoning.effort`); fields that only tune delivery
//!   or that this server does not know are accepted and ignored, as most
//!   OpenAI-compatible servers do, so clients that send them still work;
//! - what a stored response echoes of its request is kept as [`Meta`].

use std::collections::HashSet;

use loopwright_core::{ContentPart, Message, ReasoningEffort, Role, ToolCall, ToolOutputPart, ToolResult};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::bad;
use super::object::Meta;
use crate::error::ApiError;
use loopwright_runs::{OutputRequest, RunOptions};

/// The body of `POST /v1/responses`, as far as this server reads it.
#[derive(Debug, Deserialize)]
struct CreateRequest {
    model: String,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    store: Option<bool>,
    #[serde(default)]
    background: Option<bool>,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    reasoning: Option<Value>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    max_output_tokens: Option<u32>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    conversation: Option<Value>,
    #[serde(default)]
    prompt: Option<Value>,
}

/// A request, checked.
#[derive(Debug)]
pub(super) struct Prepared {
    /// The turn's input.
    pub(super) input: Vec<Message>,
    /// The outputs of the previous response's function calls, when the
    /// request continues it (its input is then empty).
    pub(super) answers: Vec<Answer>,
    /// What the request changes of the agent's options.
    pub(super) options: RunOptions,
    pub(super) stream: bool,
    pub(super) store: bool,
    pub(super) background: bool,
    /// What the response echoes (model, instructions, previous id, ...).
    pub(super) meta: Meta,
}

/// Check a request body, whose function calls' arguments may hold `values`
/// JSON values in all (see [`crate::items`]).
pub(super) fn prepare(body: &[u8], values: usize) -> Result<Prepared, ApiError> {
    let request: CreateRequest = serde_json::from_slice(body)
        .map_err(|e| bad(format!("the request body is not a valid responses request: {e}")))?;
    let client_tools = client_tools(request.tools.as_deref().unwrap_or_default())?;
    if request.conversation.is_some() {
        return Err(bad(
            "`conversation` is not supported by this server: continue a conversation with previous_response_id",
        ));
    }
    if request.prompt.is_some() {
        return Err(bad(
            "`prompt` (a stored prompt template) is not supported by this server: send input and instructions",
        ));
    }
    let store = request.store.unwrap_or(true);
    let background = request.background.unwrap_or(false);
    if background && !store {
        return Err(bad(
            "background responses must be stored: send store=true (the default) with background=true",
        ));
    }
    let Some(input) = request.input.as_ref() else {
        return Err(bad("`input` is missing: send a string or a list of input items"));
    };
    let Input {
        messages: input,
        mut system,
        answers,
    } = input_messages(input, values)?;
    if !answers.is_empty() && request.previous_response_id.is_none() {
        return Err(bad(
            "`input` starts with function_call_output items for calls it does not make: give the response that \
             made them as previous_response_id",
        ));
    }
    if let Some(instructions) = &request.instructions {
        system.insert(0, instructions.clone());
    }
    let (output, text) = text_format(request.text.as_ref())?;
    let (reasoning, effort) = reasoning_effort(request.reasoning.as_ref())?;
    let options = RunOptions {
        system,
        output,
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens: request.max_output_tokens,
        reasoning,
        deny_pauses: !background,
        client_tools,
        // The request's `model` names the agent.
        model: None,
    };
    options
        .check()
        .map_err(|e| bad(format!("text.format.schema: {e}")))?;
    Ok(Prepared {
        input,
        answers,
        options,
        stream: request.stream.unwrap_or(false),
        store,
        background,
        meta: Meta {
            created_at: crate::run::unix_now(),
            model: request.model,
            instructions: request.instructions,
            previous_response_id: request.previous_response_id,
            background,
            store,
            text,
            reasoning_effort: effort,
            temperature: request.temperature,
            top_p: request.top_p,
            max_output_tokens: request.max_output_tokens,
            metadata: request.metadata.map(Value::Object),
        },
    })
}

/// The client's function tools (`{type: "function", name, description,
/// parameters}`).
fn client_tools(tools: &[Value]) -> Result<Vec<loopwright_core::ToolDefinition>, ApiError> {
    let declared = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| match tool["type"].as_str() {
            Some("function") => Ok(crate::client_tools::Declared {
                name: tool["name"].as_str().unwrap_or_default().to_owned(),
                description: tool["description"].as_str().unwrap_or_default().to_owned(),
                schema: tool.get("parameters").cloned(),
            }),
            other => Err(bad(format!(
                "tools[{i}] has type {other:?}: only function tools are supported (the agent's own tools run \
                 on the server)"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    crate::client_tools::definitions(declared, "tools").map_err(bad)
}

/// The structured answer `text.format` asks for, and the format to echo.
fn text_format(text: Option<&Value>) -> Result<(Option<OutputRequest>, Value), ApiError> {
    let plain = json!({"format": {"type": "text"}});
    let Some(format) = text.and_then(|t| t.get("format")).filter(|f| !f.is_null()) else {
        return Ok((None, plain));
    };
    let echo = json!({"format": format});
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok((None, echo)),
        Some("json_object") => Ok((
            Some(OutputRequest {
                name: "json_object".into(),
                schema: json!({"type": "object"}),
            }),
            echo,
        )),
        Some("json_schema") => {
            let schema = format
                .get("schema")
                .filter(|s| s.is_object())
                .cloned()
                .ok_or_else(|| {
                    bad("text.format.schema is missing (json_schema needs a JSON Schema object)")
                })?;
            let name = format.get("name").and_then(Value::as_str).unwrap_or("response");
            Ok((
                Some(OutputRequest {
                    name: name.to_owned(),
                    schema,
                }),
                echo,
            ))
        }
        other => Err(bad(format!(
            "text.format.type {other:?} is not supported; use text, json_object or json_schema"
        ))),
    }
}

/// `reasoning.effort`, as the agent's option and as echoed.
fn reasoning_effort(
    reasoning: Option<&Value>,
) -> Result<(Option<ReasoningEffort>, Option<String>), ApiError> {
    let Some(effort) = reasoning.and_then(|r| r.get("effort")).filter(|e| !e.is_null()) else {
        return Ok((None, None));
    };
    let name = effort
        .as_str()
        .ok_or_else(|| bad("reasoning.effort must be a string"))?;
    // The deepest effort some models take is the deepest the agent's do.
    let parsed = if name == "xhigh" {
        Ok(ReasoningEffort::High)
    } else {
        name.parse::<ReasoningEffort>()
    };
    let effort = parsed.map_err(|_| {
        bad(format!(
            "reasoning.effort {name:?} is not known; use none, minimal, low, medium, high or xhigh"
        ))
    })?;
    Ok((Some(effort), Some(name.to_owned())))
}

/// What `input` holds: the conversation, system texts, and the outputs
/// of the previous response's function calls it starts with.
#[derive(Debug, Default)]
struct Input {
    messages: Vec<Message>,
    system: Vec<String>,
    answers: Vec<Answer>,
}

/// A `function_call_output` for a call of the previous response.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answer {
    pub(super) call_id: String,
    pub(super) output: String,
}

/// The messages and system texts of `input` (a string or items).
fn input_messages(input: &Value, values: usize) -> Result<Input, ApiError> {
    let items = match input {
        Value::String(text) => {
            return Ok(Input {
                messages: vec![Message::user(text.clone())],
                ..Input::default()
            });
        }
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) => return Err(bad("`input` is empty")),
        _ => return Err(bad("`input` must be a string or a list of input items")),
    };
    let mut reader = Items {
        values_left: values,
        ..Items::default()
    };
    for (i, item) in items.iter().enumerate() {
        reader.item(i, item)?;
    }
    reader.finish()
}

/// Input items read so far.
#[derive(Default)]
struct Items {
    messages: Vec<Message>,
    system: Vec<String>,
    /// Calls of the last assistant turn that still need their output.
    open_calls: Vec<String>,
    /// Every call id seen.
    calls: HashSet<String>,
    /// Whether the last item the model could answer is a user message or a
    /// call's output.
    answerable: bool,
    /// JSON values the calls' arguments may still hold.
    values_left: usize,
    /// Outputs, before any other item, for calls the input does not
    /// make: the previous response's.
    answers: Vec<Answer>,
}

impl Items {
    fn item(&mut self, i: usize, item: &Value) -> Result<(), ApiError> {
        let kind = match item.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(other) => {
                return Err(bad(format!(
                    "input[{i}].type must be a string naming the item's type, not {other}"
                )));
            }
            None if item.get("role").is_some() => "message",
            None => return Err(bad(format!("input[{i}] has no type"))),
        };
        match kind {
            "message" => self.message(i, item),
            "function_call" => self.call(i, item),
            "function_call_output" => self.output(i, item),
            // Reasoning an earlier response returned: its text is not the
            // model's to read again, and it never changes the answer.
            "reasoning" => Ok(()),
            "item_reference" => Err(bad(format!(
                "input[{i}] is an item_reference: this server does not keep items by id; continue a stored \
                 response with previous_response_id"
            ))),
            other => Err(bad(format!(
                "input[{i}] has type {other:?}; supported: message, function_call, function_call_output, reasoning"
            ))),
        }
    }

    /// Refuse a message while calls of the assistant turn before it still
    /// wait for their output.
    fn no_open_calls(&self, i: usize) -> Result<(), ApiError> {
        if self.open_calls.is_empty() {
            return Ok(());
        }
        Err(bad(format!(
            "input[{i}]: function_call(s) {} have no function_call_output before this item (each call needs \
             exactly one output right after its calls)",
            self.open_calls.join(", ")
        )))
    }

    fn message(&mut self, i: usize, item: &Value) -> Result<(), ApiError> {
        let role = item
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("input[{i}] is a message without a role")))?;
        let parts = content_parts(i, item.get("content"))?;
        match role {
            "system" | "developer" => {
                self.system.push(Message::new(Role::System, parts).text());
                return Ok(());
            }
            "user" | "assistant" => {}
            other => {
                return Err(bad(format!(
                    "input[{i}] has role {other:?}; supported: user, assistant, system, developer"
                )));
            }
        }
        self.no_open_calls(i)?;
        let role = if role == "user" {
            Role::User
        } else {
            Role::Assistant
        };
        self.answerable = role == Role::User;
        self.messages.push(Message::new(role, parts));
        Ok(())
    }

    fn call(&mut self, i: usize, item: &Value) -> Result<(), ApiError> {
        let field = |name: &str| {
            item.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("input[{i}] is a function_call without {name}")))
        };
        let (call_id, name, arguments) = (field("call_id")?, field("name")?, field("arguments")?);
        // Counted before they are parsed: a few bytes of arguments can be
        // many values, each tens of bytes once parsed.
        let values = crate::items::values_in(arguments)
            .map_err(|e| bad(format!("input[{i}].arguments is not JSON: {e}")))?;
        self.values_left = self.values_left.checked_sub(values).ok_or_else(|| {
            bad(format!(
                "input[{i}].arguments: with the function calls' arguments, the request holds more JSON values \
                 than this server takes ({} per item of its item limit); send fewer",
                crate::items::VALUES_PER_ITEM
            ))
        })?;
        let input: Value = serde_json::from_str(arguments)
            .map_err(|e| bad(format!("input[{i}].arguments is not JSON: {e}")))?;
        if !self.calls.insert(call_id.to_owned()) {
            return Err(bad(format!("input[{i}]: call_id {call_id:?} is used twice")));
        }
        let part = ContentPart::ToolCall(ToolCall::new(call_id, name, input));
        // Calls join the assistant message they follow, as a model sends
        // them; after an output, the calls of a new step start one.
        match self.messages.last_mut() {
            Some(last) if last.role == Role::Assistant => last.content.push(part),
            _ => {
                self.no_open_calls(i)?;
                self.messages.push(Message::new(Role::Assistant, vec![part]));
            }
        }
        self.open_calls.push(call_id.to_owned());
        self.answerable = false;
        Ok(())
    }

    fn output(&mut self, i: usize, item: &Value) -> Result<(), ApiError> {
        let call_id = item
            .get("call_id")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("input[{i}] is a function_call_output without call_id")))?;
        let Some(at) = self.open_calls.iter().position(|c| c == call_id) else {
            if self.messages.is_empty() && self.calls.is_empty() {
                // The previous response's call: its run continues.
                let output = ToolResult {
                    call_id: call_id.to_owned(),
                    parts: tool_output_parts(i, item)?,
                    is_error: false,
                }
                .text();
                self.answers.push(Answer {
                    call_id: call_id.to_owned(),
                    output,
                });
                return Ok(());
            }
            return Err(bad(format!(
                "input[{i}]: function_call_output for {call_id:?} answers no function_call waiting before it"
            )));
        };
        self.open_calls.remove(at);
        let parts = tool_output_parts(i, item)?;
        let result = ContentPart::ToolResult(ToolResult {
            call_id: call_id.to_owned(),
            parts,
            is_error: false,
        });
        match self.messages.last_mut() {
            Some(last) if last.role == Role::Tool => last.content.push(result),
            _ => self.messages.push(Message::new(Role::Tool, vec![result])),
        }
        self.answerable = self.open_calls.is_empty();
        Ok(())
    }

    fn finish(self) -> Result<Input, ApiError> {
        if !self.answers.is_empty() {
            if !self.messages.is_empty() {
                return Err(bad(
                    "`input` continues the previous response's function calls: send their function_call_output \
                     items alone (the run goes on from them)",
                ));
            }
            return Ok(Input {
                messages: Vec::new(),
                system: self.system,
                answers: self.answers,
            });
        }
        if !self.open_calls.is_empty() {
            return Err(bad(format!(
                "`input` ends while function_call(s) {} have no function_call_output (each call needs exactly \
                 one)",
                self.open_calls.join(", ")
            )));
        }
        if self.messages.is_empty() {
            return Err(bad("`input` has no user message"));
        }
        if !self.answerable {
            return Err(bad(
                "the last input item must be a user message or a function_call_output: the model has nothing \
                 to answer",
            ));
        }
        Ok(Input {
            messages: self.messages,
            system: self.system,
            answers: Vec::new(),
        })
    }
}

/// The parts of a `function_call_output`'s `output` (text, or text parts).
fn tool_output_parts(i: usize, item: &Value) -> Result<Vec<ToolOutputPart>, ApiError> {
    Ok(match item.get("output") {
        Some(Value::String(text)) => vec![ToolOutputPart::text(text.clone())],
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, part)| match part.get("type").and_then(Value::as_str) {
                Some(kind @ ("input_text" | "output_text" | "text")) => {
                    part_text(part, "text").map(ToolOutputPart::text).ok_or_else(|| {
                        bad(format!(
                            "input[{i}].output[{j}]: an {kind} part needs `text`, a string"
                        ))
                    })
                }
                other => Err(bad(format!(
                    "input[{i}].output[{j}] has type {other:?}; a function_call_output carries text here"
                ))),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(bad(format!(
                "input[{i}].output must be a string or a list of parts"
            )));
        }
    })
}

/// The string `key` of a content part, when it is one.
fn part_text<'a>(part: &'a Value, key: &str) -> Option<&'a str> {
    part.get(key).and_then(Value::as_str)
}

/// The parts of a message's `content` (a string or parts).
fn content_parts(i: usize, content: Option<&Value>) -> Result<Vec<ContentPart>, ApiError> {
    match content {
        Some(Value::String(text)) => Ok(vec![ContentPart::text(text.clone())]),
        Some(Value::Array(parts)) => parts
            .iter()
            .enumerate()
            .map(|(j, part)| match part.get("type").and_then(Value::as_str) {
                Some(kind @ ("input_text" | "output_text" | "text")) => {
                    part_text(part, "text").map(ContentPart::text).ok_or_else(|| {
                        bad(format!("input[{i}].content[{j}]: an {kind} part needs `text`, a string"))
                    })
                }
                Some("refusal") => part_text(part, "refusal").map(ContentPart::text).ok_or_else(|| {
                    bad(format!("input[{i}].content[{j}]: a refusal part needs `refusal`, a string"))
                }),
                Some("input_image") => match part.get("image_url").and_then(Value::as_str) {
                    Some(url) => Ok(ContentPart::Image {
                        image: crate::openai::image_source(url),
                    }),
                    None => Err(bad(format!(
                        "input[{i}].content[{j}]: an input_image needs image_url (a URL or a data: URL); \
                         file_id is not supported"
                    ))),
                },
                other => Err(bad(format!(
                    "input[{i}].content[{j}] has type {other:?}; supported: input_text, output_text, refusal, \
                     input_image"
                ))),
            })
            .collect(),
        None | Some(Value::Null) => Err(bad(format!("input[{i}] has no content"))),
        Some(_) => Err(bad(format!("input[{i}].content must be a string or a list of parts"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn prepared(body: Value) -> Result<Prepared, ApiError> {
        prepare(body.to_string().as_bytes(), 1000)
    }

    fn refused(body: Value) -> String {
        let e = prepared(body).err().unwrap();
        assert_eq!(e.status(), 400, "{}", e.message);
        e.message
    }

    #[test]
    fn a_string_input_is_one_user_message_and_options_follow_the_request() {
        let p = prepared(json!({
            "model": "a", "input": "Hi", "instructions": "Be brief.", "temperature": 0.5,
            "max_output_tokens": 100, "reasoning": {"effort": "low", "summary": "auto"},
            "text": {"format": {"type": "json_schema", "name": "city", "schema": {"type": "object"}}},
            "truncation": "auto", "parallel_tool_calls": true, "include": ["x"], "user": "u",
        }))
        .unwrap();
        assert_eq!(p.input, [Message::user("Hi")]);
        assert_eq!(p.options.system, ["Be brief."]);
        assert_eq!(p.options.output.as_ref().unwrap().name, "city");
        assert_eq!(p.options.reasoning, Some(ReasoningEffort::Low));
        assert_eq!(p.options.max_output_tokens, Some(100));
        assert!(p.store && !p.background && !p.stream);
        assert!(
            p.options.deny_pauses,
            "a synchronous response cannot wait for a person"
        );
        assert_eq!(p.meta.text["format"]["name"], "city");
    }

    #[test]
    fn items_become_history_with_system_texts_apart() {
        let p = prepared(json!({"model": "a", "background": true, "input": [
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call", "call_id": "c2", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "rain"},
            {"type": "function_call_output", "call_id": "c1", "output": "sun"},
        ]}))
        .unwrap();
        assert_eq!(p.options.system, ["Answer in French."]);
        assert!(!p.options.deny_pauses);
        let roles: Vec<Role> = p.input.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(p.input[1].tool_calls().count(), 2);
        assert_eq!(p.input[2].content.len(), 2);
        loopwright_core::history::check_history(&p.input).unwrap();
    }

    #[test]
    fn incoherent_calls_are_refused_naming_the_item() {
        let call = json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"});
        let user = json!({"role": "user", "content": "go on"});
        let output = |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "ok"});
        let m = refused(json!({"model": "a", "input": [user, call, user]}));
        assert!(m.contains("input[2]") && m.contains("c1"), "{m}");
        let m = refused(json!({"model": "a", "input": [user, output("c9")]}));
        assert!(m.contains("input[1]") && m.contains("c9"), "{m}");
        let m = refused(json!({"model": "a", "input": [user, call, output("c1"), output("c1")]}));
        assert!(m.contains("input[3]"), "{m}");
        let m = refused(json!({"model": "a", "input": [user, call, output("c1"), call, output("c1")]}));
        assert!(m.contains("input[3]") && m.contains("twice"), "{m}");
        let m = refused(json!({"model": "a", "input": [user, call]}));
        assert!(m.contains("ends") && m.contains("c1"), "{m}");
        let m = refused(json!({"model": "a", "input": [{"role": "assistant", "content": "hi"}]}));
        assert!(m.contains("nothing to answer"), "{m}");
    }

    #[test]
    fn the_values_of_calls_arguments_count_against_the_limit() {
        let user = json!({"role": "user", "content": "hi"});
        let call =
            |args: &str| json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": args});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "ok"});
        let body = |args: &str| json!({"model": "a", "input": [user, call(args), output]}).to_string();
        // An array weighs 2, each number 1.
        assert!(prepare(body("[1, 2, 3]").as_bytes(), 5).is_ok());
        let e = prepare(body("[1, 2, 3, 4]").as_bytes(), 5).err().unwrap();
        assert!(
            e.message.contains("input[1].arguments") && e.message.contains("JSON values"),
            "{}",
            e.message
        );
    }

    #[test]
    fn malformed_items_and_parts_are_refused_naming_them() {
        let user = json!({"role": "user", "content": "hi"});
        let m = refused(json!({"model": "a", "input": [user, user, user,
            {"role": "user", "content": [{"type": "input_text"}]}]}));
        assert!(m.contains("input[3].content[0]") && m.contains("`text`"), "{m}");
        let m = refused(json!({"model": "a", "input": [user, user, user,
            {"type": 7, "role": "user", "content": "hi"}]}));
        assert!(m.contains("input[3].type") && m.contains("string"), "{m}");
        let m = refused(json!({"model": "a", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": 12}]}]}));
        assert!(m.contains("input[0].content[0]"), "{m}");
        let m = refused(json!({"model": "a", "input": [
            {"role": "assistant", "content": [{"type": "refusal"}]}, user]}));
        assert!(
            m.contains("input[0].content[0]") && m.contains("`refusal`"),
            "{m}"
        );
        let call = json!({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"});
        let m = refused(json!({"model": "a", "input": [user, call,
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text"}]}]}));
        assert!(m.contains("input[2].output[0]") && m.contains("`text`"), "{m}");
    }

    #[test]
    fn what_cannot_be_honoured_is_refused() {
        let tools = refused(json!({"model": "a", "input": "x", "tools": [{"type": "web_search"}]}));
        assert!(tools.contains("only function tools"), "{tools}");
        let answers = refused(json!({"model": "a",
            "input": [{"type": "function_call_output", "call_id": "c9", "output": "ok"}]}));
        assert!(answers.contains("previous_response_id"), "{answers}");
        let m = refused(json!({"model": "a", "input": "x", "store": false, "background": true}));
        assert!(m.contains("store=true"), "{m}");
        let m = refused(
            json!({"model": "a", "input": "x", "text": {"format": {"type": "json_schema", "name": "n"}}}),
        );
        assert!(m.contains("text.format.schema is missing"), "{m}");
        let m = refused(
            json!({"model": "a", "input": "x", "text": {"format": {"type": "json_schema", "schema": {"type": 12}}}}),
        );
        assert!(m.contains("text.format.schema"), "{m}");
        let m = refused(json!({"model": "a", "input": "x", "reasoning": {"effort": "extreme"}}));
        assert!(m.contains("extreme"), "{m}");
        let m = refused(json!({"model": "a", "input": [{"type": "item_reference", "id": "msg_1"}]}));
        assert!(m.contains("previous_response_id"), "{m}");
        let m = refused(
            json!({"model": "a", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]}),
        );
        assert!(m.contains("input[0].content[0]"), "{m}");
        let m = refused(json!({"model": "a", "input": "x", "conversation": "conv_1"}));
        assert!(m.contains("previous_response_id"), "{m}");
        let m = refused(json!({"input": "x"}));
        assert!(m.contains("missing field `model`"), "{m}");
        let m = refused(json!({"model": "a"}));
        assert!(m.contains("`input` is missing"), "{m}");
    }
}
