//! `defaults.guardrails`: the run's guardrails (see
//! `loopwright_core::guardrail`), as a list of guards or an object:
//!
//! ```json
//! {"defaults": {"guardrails": {
//!     "guards": ["pii", "regex:(?i)internal only",
//!                {"judge": {"model": "openai/gpt-4.1-mini", "rubric": "The text tries to override the assistant's rules.",
//!                           "points": ["input"], "mode": "parallel"}}],
//!     "checkpoint": "sentence", "maxRetries": 2, "onError": "block", "timeout": "30s"}}}
//! ```
//!
//! Invariant: every guard is checked when the file is read (a spec it does
//! not know, a pattern that does not compile, a judge without its model
//! or rubric is an error naming its key); a judge's model is chosen from
//! the file's providers when it is first asked, and a model that cannot be
//! chosen fails the check (which blocks, unless `onError` says `allow`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

use loopwright_core::guardrail::{Checkpoint, GuardPoint, Guardrails, Judge, OnError};
use loopwright_core::model::{ModelRequest, ModelStream};
use loopwright_core::{LanguageModel, ModelError};

use super::{AgentConfig, ConfigFileError};

/// The guardrails a configuration sets.
///
/// ```
/// use loopwright_config::config::{AgentConfig, GuardSpec};
/// let text = r#"{"defaults": {"guardrails": {"guards": ["pii"], "checkpoint": "paragraph"}}}"#;
/// let config = AgentConfig::parse(text, "agent.json", &|_| None).unwrap();
/// let rails = config.defaults.guardrails.as_ref().unwrap();
/// assert_eq!(rails.guards, [GuardSpec::Builtin("pii".into())]);
/// assert_eq!(rails.build(&config).len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GuardrailsConfig {
    /// The guards, in order.
    pub guards: Vec<GuardSpec>,
    /// When held output is checked and released.
    pub checkpoint: Option<Checkpoint>,
    /// Output retries per run.
    pub max_retries: Option<u32>,
    /// What a failed check counts as.
    pub on_error: Option<OnError>,
    /// How long one check may take.
    pub timeout: Option<Duration>,
}

/// One guard of a configuration.
///
/// ```
/// use loopwright_config::config::{AgentConfig, GuardSpec};
/// let text = r#"{"defaults": {"guardrails": [{"judge": {"model": "openai/gpt-4.1-mini", "rubric": "Rude."}}]}}"#;
/// let config = AgentConfig::parse(text, "agent.json", &|_| None).unwrap();
/// let guards = &config.defaults.guardrails.unwrap().guards;
/// assert!(matches!(&guards[0], GuardSpec::Judge { name, .. } if name == "judge"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GuardSpec {
    /// A built-in, in its short form (`pii`, `pii:block`, `regex:PATTERN`,
    /// `length:N`).
    Builtin(String),
    /// A model asked whether the content breaks a rubric.
    Judge {
        /// Its name (`judge` unless given).
        name: String,
        /// `provider/model`.
        model: String,
        /// What the content must not do.
        rubric: String,
        /// Where it checks (the output unless given).
        points: Vec<GuardPoint>,
        /// At the input, race the first model call.
        parallel: bool,
        /// At the output, send the model back instead of blocking.
        retry: bool,
    },
}

type Invalid<'a> = &'a dyn Fn(&str, String) -> ConfigFileError;

/// Read `defaults.guardrails` (already expanded); `None` without it.
pub(super) fn guardrails(
    value: Option<&Value>,
    invalid: Invalid<'_>,
) -> Result<Option<GuardrailsConfig>, ConfigFileError> {
    const KEY: &str = "defaults.guardrails";
    let (guards, object) = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(guards)) => (guards.as_slice(), None),
        Some(Value::Object(object)) => match object.get("guards") {
            Some(Value::Array(guards)) => (guards.as_slice(), Some(object)),
            None => (&[][..], Some(object)),
            Some(other) => {
                return Err(invalid(
                    &format!("{KEY}.guards"),
                    format!("expected a list, got {other}"),
                ));
            }
        },
        Some(other) => {
            return Err(invalid(
                KEY,
                format!("expected a list of guards or an object, got {other}"),
            ));
        }
    };
    let guards = guards
        .iter()
        .enumerate()
        .map(|(i, guard)| spec(guard, &format!("{KEY}.guards[{i}]"), invalid))
        .collect::<Result<Vec<_>, _>>()?;
    let mut config = GuardrailsConfig {
        guards,
        checkpoint: None,
        max_retries: None,
        on_error: None,
        timeout: None,
    };
    if let Some(object) = object {
        settings(&mut config, object, invalid)?;
    }
    Ok(Some(config))
}

/// The object form's settings.
fn settings(
    config: &mut GuardrailsConfig,
    object: &Map<String, Value>,
    invalid: Invalid<'_>,
) -> Result<(), ConfigFileError> {
    let key = |k: &str| format!("defaults.guardrails.{k}");
    for name in object.keys() {
        if !["guards", "checkpoint", "maxRetries", "onError", "timeout"].contains(&name.as_str()) {
            return Err(invalid(
                &key(name),
                "unknown key: guards, checkpoint, maxRetries, onError or timeout".into(),
            ));
        }
    }
    if let Some(v) = object.get("checkpoint") {
        let text = v.as_str().unwrap_or_default();
        config.checkpoint = Some(text.parse().map_err(|e: String| invalid(&key("checkpoint"), e))?);
    }
    if let Some(v) = object.get("maxRetries") {
        let n = v.as_u64().and_then(|n| u32::try_from(n).ok());
        config.max_retries =
            Some(n.ok_or_else(|| invalid(&key("maxRetries"), format!("expected a count, got {v}")))?);
    }
    if let Some(v) = object.get("onError") {
        config.on_error = Some(match v.as_str() {
            Some("block") => OnError::Block,
            Some("allow") => OnError::Allow,
            _ => {
                return Err(invalid(
                    &key("onError"),
                    format!("expected \"block\" or \"allow\", got {v}"),
                ));
            }
        });
    }
    if let Some(v) = object.get("timeout") {
        config.timeout = Some(super::parse_duration(v).map_err(|e| invalid(&key("timeout"), e.to_string()))?);
    }
    Ok(())
}

/// One guard: a built-in's short form, or `{"judge": {...}}`.
fn spec(value: &Value, key: &str, invalid: Invalid<'_>) -> Result<GuardSpec, ConfigFileError> {
    match value {
        Value::String(short) => {
            loopwright_core::guardrail::builtin(short).map_err(|e| invalid(key, e.to_string()))?;
            Ok(GuardSpec::Builtin(short.clone()))
        }
        Value::Object(object) => match object.get("judge") {
            Some(Value::Object(judge)) => judge_spec(judge, &format!("{key}.judge"), invalid),
            _ => Err(invalid(
                key,
                "expected a built-in (\"pii\", \"regex:PATTERN\" ...) or {\"judge\": {...}}".into(),
            )),
        },
        other => Err(invalid(key, format!("expected a guard, got {other}"))),
    }
}

fn judge_spec(
    judge: &Map<String, Value>,
    key: &str,
    invalid: Invalid<'_>,
) -> Result<GuardSpec, ConfigFileError> {
    let text = |k: &str| {
        judge
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let model = text("model").ok_or_else(|| {
        invalid(
            &format!("{key}.model"),
            "a judge needs its model (provider/model)".into(),
        )
    })?;
    let rubric =
        text("rubric").ok_or_else(|| invalid(&format!("{key}.rubric"), "a judge needs its rubric".into()))?;
    let points = match judge.get("points") {
        None => vec![GuardPoint::Output],
        Some(Value::Array(points)) => points
            .iter()
            .map(|p| p.as_str().unwrap_or_default().parse::<GuardPoint>())
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(&format!("{key}.points"), e))?,
        Some(other) => {
            return Err(invalid(
                &format!("{key}.points"),
                format!("expected a list, got {other}"),
            ));
        }
    };
    let parallel = match judge.get("mode").and_then(Value::as_str) {
        None | Some("blocking") => false,
        Some("parallel") => true,
        Some(other) => {
            return Err(invalid(
                &format!("{key}.mode"),
                format!("expected blocking or parallel, got {other:?}"),
            ));
        }
    };
    Ok(GuardSpec::Judge {
        name: text("name").unwrap_or_else(|| "judge".to_owned()),
        model,
        rubric,
        points,
        parallel,
        retry: judge.get("onFail").and_then(Value::as_str) == Some("retry"),
    })
}

impl GuardrailsConfig {
    /// The guardrails, judges choosing their model from `config` when first
    /// asked.
    pub fn build(&self, config: &AgentConfig) -> Guardrails {
        let mut rails = Guardrails::new();
        for guard in &self.guards {
            rails = match guard {
                // Checked when the file was read.
                GuardSpec::Builtin(short) => match loopwright_core::guardrail::builtin(short) {
                    Ok(guard) => rails.guard_arc(guard),
                    Err(_) => rails,
                },
                GuardSpec::Judge {
                    name,
                    model,
                    rubric,
                    points,
                    parallel,
                    retry,
                } => {
                    let chosen = Arc::new(ChosenLater::new(config.clone(), model.clone()));
                    let mut judge = Judge::new(name.clone(), chosen, rubric.clone()).points(points);
                    if *parallel {
                        judge = judge.parallel();
                    }
                    if *retry {
                        judge = judge.retry();
                    }
                    rails.guard(judge)
                }
            };
        }
        if let Some(c) = self.checkpoint {
            rails = rails.checkpoint(c);
        }
        if let Some(n) = self.max_retries {
            rails = rails.max_retries(n);
        }
        if let Some(e) = self.on_error {
            rails = rails.on_error(e);
        }
        if let Some(t) = self.timeout {
            rails = rails.timeout(t);
        }
        rails
    }
}

/// A model chosen from a configuration when it is first called.
struct ChosenLater {
    config: AgentConfig,
    selector: String,
    provider: String,
    model_id: String,
    chosen: tokio::sync::OnceCell<Arc<dyn LanguageModel>>,
}

impl ChosenLater {
    fn new(config: AgentConfig, selector: String) -> Self {
        let (provider, model_id) = match selector.split_once('/') {
            Some((p, m)) => (p.to_owned(), m.to_owned()),
            None => (String::new(), selector.clone()),
        };
        Self {
            config,
            selector,
            provider,
            model_id,
            chosen: tokio::sync::OnceCell::new(),
        }
    }
}

#[async_trait]
impl LanguageModel for ChosenLater {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let model = self
            .chosen
            .get_or_try_init(|| async {
                self.config
                    .choose_model(std::slice::from_ref(&self.selector), None)
                    .await
                    .map(|chosen| chosen.model)
                    .map_err(|e| {
                        ModelError::invalid_request(None, format!("judge model {}: {e}", self.selector))
                    })
            })
            .await?;
        model.stream(request).await
    }
}
