//! What each provider's models can do, from the model id: native structured
//! output (and with tools in the same request), and reasoning settings.
//! The agent's `auto` output mode and the reasoning mapping rely on it; a
//! model the tables do not know gets the conservative answer (no native
//! output, no reasoning settings), never a request its API refuses.
//!
//! The rules follow each provider's documentation of its model families, as
//! of late 2025: OpenAI reasoning models are the `o` series and `gpt-5`
//! (not `gpt-5-chat`); Anthropic structured output is on Claude 4.5 models
//! and Opus 4.1, thinking on Claude 3.7 and every Claude 4; Gemini takes a
//! JSON schema from 1.5 on, together with function declarations from
//! Gemini 3, and thinks from 2.5; Ollama constrains output to a schema
//! (`format`) for every model, and thinks on the models listed in
//! [`OLLAMA_THINKING_MODELS`].

use loopwright_types::ModelCapabilities;

/// Ollama model names (prefixes) that accept `think`; others refuse it.
pub const OLLAMA_THINKING_MODELS: [&str; 7] = [
    "qwen3",
    "deepseek-r1",
    "deepseek-v3.1",
    "gpt-oss",
    "magistral",
    "phi4-reasoning",
    "cogito",
];

/// The model id without a `models/` or `provider/` prefix, lowercased.
fn bare(model: &str) -> String {
    model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase()
}

/// Whether an OpenAI model is of the `o` series (`o1`, `o3-mini`, `o4-mini`, ...).
pub(crate) fn openai_o_series(model: &str) -> bool {
    let m = bare(model);
    m.len() > 1 && m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit())
}

/// Whether an OpenAI model reasons (`o1`, `o3`, `o4-mini`, `gpt-5`, ...).
pub fn openai_reasons(model: &str) -> bool {
    let m = bare(model);
    openai_o_series(&m) || (m.starts_with("gpt-5") && !m.starts_with("gpt-5-chat"))
}

/// OpenAI Chat Completions and Responses models.
///
/// ```
/// use loopwright_providers::capabilities::openai;
/// assert!(openai("gpt-4.1").structured_output_with_tools);
/// assert!(!openai("gpt-4.1").reasoning);
/// assert!(openai("o4-mini").reasoning && openai("gpt-5-mini").reasoning);
/// assert!(!openai("gpt-3.5-turbo").structured_output);
/// ```
pub fn openai(model: &str) -> ModelCapabilities {
    let m = bare(model);
    let old = m.starts_with("gpt-3.5")
        || m == "gpt-4"
        || m.starts_with("gpt-4-")
        || m.starts_with("o1-mini")
        || m.starts_with("o1-preview");
    ModelCapabilities::default()
        .structured_output(!old, true)
        .reasoning(openai_reasons(&m))
}

/// Anthropic models.
///
/// ```
/// use loopwright_providers::capabilities::anthropic;
/// assert!(anthropic("claude-sonnet-4-5").structured_output);
/// assert!(anthropic("claude-sonnet-4-20250514").reasoning);
/// assert!(!anthropic("claude-sonnet-4-20250514").structured_output);
/// assert!(!anthropic("claude-3-5-haiku-latest").reasoning);
/// assert!(anthropic("claude-3-7-sonnet-20250219").reasoning);
/// assert!(!anthropic("claude-3-7-sonnet-20250219").structured_output);
/// ```
pub fn anthropic(model: &str) -> ModelCapabilities {
    let m = bare(model);
    let version = claude_version(&m);
    let structured = version.is_some_and(|v| v >= (4, 5)) || m.contains("opus-4-1");
    let thinking = version.is_some_and(|v| v >= (4, 0)) || m.contains("3-7");
    ModelCapabilities::default()
        .structured_output(structured, true)
        .reasoning(thinking)
}

/// (major, minor) of a Claude 4+ model id (`claude-sonnet-4-5`,
/// `claude-opus-4-1-20250805`, `claude-sonnet-4-20250514`).
fn claude_version(model: &str) -> Option<(u32, u32)> {
    let rest = ["opus-", "sonnet-", "haiku-"]
        .iter()
        .find_map(|family| model.split_once(family).map(|(_, r)| r))?;
    let mut parts = rest.split('-');
    // `claude-3-7-sonnet-20250219` has its version before the family; what
    // follows the family there is a date.
    let major: u32 = parts.next().filter(|p| p.len() <= 2)?.parse().ok()?;
    if major < 4 {
        return None;
    }
    // A minor version is one or two digits; a date (8 digits) is not one.
    let minor = parts
        .next()
        .filter(|p| p.len() <= 2)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    Some((major, minor))
}

/// The (major, minor) of a Gemini model id (`gemini-2.5-flash` is (2, 5)).
fn gemini_version(model: &str) -> Option<(u32, u32)> {
    let rest = bare(model).strip_prefix("gemini-")?.to_owned();
    let number = rest.split('-').next()?;
    let mut parts = number.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Whether a Gemini model takes `responseJsonSchema` (2.5 on; earlier ones
/// take only the OpenAPI-subset `responseSchema`).
pub fn gemini_json_schema(model: &str) -> bool {
    gemini_version(model).is_some_and(|v| v >= (2, 5))
}

/// Whether a Gemini model is of the 3 series (thinking levels, structured
/// output with tools).
pub fn gemini_3(model: &str) -> bool {
    gemini_version(model).is_some_and(|v| v.0 >= 3)
}

/// Google Gemini models.
///
/// ```
/// use loopwright_providers::capabilities::gemini;
/// assert!(gemini("gemini-2.5-flash").reasoning && gemini("gemini-2.5-flash").structured_output);
/// assert!(!gemini("gemini-2.5-flash").structured_output_with_tools);
/// assert!(gemini("gemini-3-pro-preview").structured_output_with_tools);
/// assert!(!gemini("gemini-2.0-flash").reasoning);
/// ```
pub fn gemini(model: &str) -> ModelCapabilities {
    let version = gemini_version(model);
    ModelCapabilities::default()
        .structured_output(
            version.is_some_and(|v| v >= (1, 5)),
            version.is_some_and(|v| v.0 >= 3),
        )
        .reasoning(version.is_some_and(|v| v >= (2, 5)))
}

/// Ollama models.
///
/// ```
/// use loopwright_providers::capabilities::ollama;
/// assert!(ollama("qwen3:8b").reasoning);
/// assert!(!ollama("llama3.2").reasoning);
/// assert!(ollama("llama3.2").structured_output);
/// ```
pub fn ollama(model: &str) -> ModelCapabilities {
    let m = model.to_ascii_lowercase();
    let thinks = OLLAMA_THINKING_MODELS.iter().any(|p| m.starts_with(p));
    ModelCapabilities::default()
        .structured_output(true, false)
        .reasoning(thinks)
}
