//! The model's own chat template (from its file) rendered with minijinja:
//! the conversation as the template expects it (OpenAI-shaped messages,
//! tool calls with their arguments as objects), the tools as
//! `{"type": "function", "function": {name, description, parameters}}`,
//! and the generation prompt.
//!
//! Invariant: what Hugging Face's Jinja renders, this renders too: Python's
//! string methods (minijinja-contrib's pycompat), `tojson` as Python's
//! `json.dumps` writes it (no HTML escaping), `raise_exception` an error
//! naming the template's message.

use minijinja::value::Serde;
use minijinja::{Environment, Error, ErrorKind, Value as Jinja};
use serde_json::{Value, json};

use loopwright_types::{ContentPart, ModelRequest, Role};

/// The prompt for `request`: its system text, messages and tools.
pub(crate) fn render(template: &str, request: &ModelRequest) -> Result<String, String> {
    let mut env = Environment::new();
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
        .map_err(|e| e.to_string())?;
    env.set_syntax(syntax);
    env.add_filter("tojson", tojson);
    env.add_function("raise_exception", |message: String| -> Result<Jinja, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, message))
    });
    env.add_template("chat", template)
        .map_err(|e| format!("the model's chat template: {e}"))?;
    let tools: Vec<Tool<'_>> = request
        .tools
        .iter()
        .map(|t| Tool {
            kind: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.input_schema,
            },
        })
        .collect();
    let mut messages = messages(request);
    // A template that does not render tools (SmolLM2's) gets them in the
    // system message, in the Hermes format the model's calls are read in.
    if !tools.is_empty() && !template.contains("tools") {
        let listed = tools
            .iter()
            .map(|t| python_json(&Jinja::from(Serde(t))))
            .collect::<Vec<_>>()
            .join("\n");
        let listed = format!("{HERMES_TOOLS}\n<tools>\n{listed}\n</tools>");
        match messages.first_mut() {
            Some(first) if first["role"] == "system" => {
                let system = first["content"].as_str().unwrap_or_default();
                first["content"] = json!(format!("{system}\n\n{listed}"));
            }
            _ => messages.insert(0, json!({"role": "system", "content": listed})),
        }
    }
    // Tools keep their fields' order (a map built here would sort them).
    let tools = (!tools.is_empty()).then(|| Jinja::from(Serde(&tools)));
    let context = minijinja::context! {
        messages => Serde(&messages),
        tools => tools,
        add_generation_prompt => true,
        enable_thinking => false,
        bos_token => "",
        eos_token => "",
    };
    env.get_template("chat")
        .and_then(|t| t.render(context))
        .map_err(|e| format!("the model's chat template: {e}"))
}

/// How the tools are offered to a model whose template has no place for
/// them.
const HERMES_TOOLS: &str = "You may call one or more functions to assist with the user query. The functions are listed \
within <tools></tools> XML tags. For each function call, return a JSON object with the function name and arguments \
within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>";

/// A tool as templates read it, its fields in the order models were
/// trained on.
#[derive(serde::Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(serde::Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// `json.dumps(value)`: `", "` and `": "` separators, nothing escaped.
fn tojson(value: Jinja) -> Result<Jinja, Error> {
    Ok(Jinja::from_safe_string(python_json(&value)))
}

/// `value` as Python's `json.dumps` writes it, maps in their order.
fn python_json(value: &Jinja) -> String {
    use minijinja::value::ValueKind;
    match value.kind() {
        ValueKind::Map => {
            let fields: Vec<String> = value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|key| {
                    let item = value.get_item(&key).unwrap_or_default();
                    format!("{}: {}", python_json(&key), python_json(&item))
                })
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<String> = value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|v| python_json(&v))
                .collect();
            format!("[{}]", items.join(", "))
        }
        ValueKind::String => Value::String(value.to_string()).to_string(),
        ValueKind::Undefined | ValueKind::None => "null".to_owned(),
        _ => serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned()),
    }
}

/// The conversation as chat templates read it.
fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::new();
    let system = crate::body::system_texts(request).join("\n\n");
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages.iter() {
        match message.role {
            Role::System => {
                out.push(json!({"role": "system", "content": crate::body::message_text(message)}))
            }
            Role::User => out.push(json!({"role": "user", "content": crate::body::message_text(message)})),
            Role::Assistant => {
                let calls: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(call) => Some(json!({"type": "function", "id": call.id,
                            "function": {"name": call.name, "arguments": call.input}})),
                        _ => None,
                    })
                    .collect();
                let mut said = json!({"role": "assistant", "content": crate::body::message_text(message)});
                let reasoning: String = message
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Reasoning(r) => Some(r.text.as_str()),
                        _ => None,
                    })
                    .collect();
                // Templates that show the current turn's thinking (Qwen3's) read it here.
                if !reasoning.is_empty() {
                    said["reasoning_content"] = json!(reasoning);
                }
                if !calls.is_empty() {
                    said["tool_calls"] = json!(calls);
                }
                out.push(said);
            }
            Role::Tool => {
                for part in &message.content {
                    if let ContentPart::ToolResult(result) = part {
                        out.push(json!({"role": "tool", "tool_call_id": result.call_id,
                            "content": crate::body::result_text(result)}));
                    }
                }
            }
        }
    }
    out
}
