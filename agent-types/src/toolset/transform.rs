//! Shaping a source's tools before they join a catalog: renaming, a new or
//! wrapped description, provider options, always-on, or dropping a tool.
//!
//! Invariant: a reshaped tool is the same tool under another definition:
//! its calls go to the tool as it was (an MCP server still gets the tool's
//! raw name), so only what the model is told changes. Overrides match the
//! tool's raw name (the name its source gives it) with `*` wildcards, as
//! [`NameFilter`](super::NameFilter) does; a later, more specific rule wins
//! over an earlier wildcard one.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::filter::wildcard_match;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// A change to tool definitions: the new definition, or `None` to drop the
/// tool. Given to [`SourceOptions::transform`](super::SourceOptions::transform).
pub type ToolTransform = dyn Fn(&ToolDefinition) -> Option<ToolDefinition> + Send + Sync;

/// What an override changes in a tool's definition (each field left
/// `None` keeps the tool's own).
///
/// ```
/// use loopwright_types::toolset::ToolOverride;
/// let o = ToolOverride::default().name("fs_read").description("[Filesystem] {description}");
/// # let _ = o;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolOverride {
    /// The name the tool is known by (before the source's naming prefix).
    pub name: Option<String>,
    /// The description; `{description}` in it stands for the tool's own,
    /// `{name}` for its raw name.
    pub description: Option<String>,
    /// Options merged into the tool's definition per provider (see
    /// [`ToolDefinition::provider_options`]).
    pub provider_options: BTreeMap<String, Value>,
    /// Offered on every step under tool search.
    pub always_on: Option<bool>,
}

impl ToolOverride {
    /// Rename the tool.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Replace (or wrap, with `{description}`) the description.
    pub fn description(mut self, template: impl Into<String>) -> Self {
        self.description = Some(template.into());
        self
    }

    /// Merge `options` into the tool's definition in `provider`'s requests.
    pub fn provider_options(mut self, provider: impl Into<String>, options: Value) -> Self {
        self.provider_options.insert(provider.into(), options);
        self
    }

    /// Offer the tool on every step under tool search (or not).
    pub fn always_on(mut self, on: bool) -> Self {
        self.always_on = Some(on);
        self
    }

    fn apply(&self, raw: &str, def: &mut ToolDefinition) {
        if let Some(template) = &self.description {
            def.description = template
                .replace("{description}", &def.description)
                .replace("{name}", raw);
        }
        if let Some(name) = &self.name {
            def.name.clone_from(name);
        }
        for (provider, options) in &self.provider_options {
            crate::util::merge_provider_options(&mut def.provider_options, provider.clone(), options.clone());
        }
        if let Some(on) = self.always_on {
            def.always_on = on;
        }
    }
}

/// Overrides by raw tool name (with `*` wildcards): the `toolOverrides` of
/// a configured MCP server, or any source's through
/// [`ToolOverrides::transform`].
///
/// ```
/// use loopwright_types::ToolDefinition;
/// use loopwright_types::toolset::{ToolOverride, ToolOverrides};
/// let overrides = ToolOverrides::default()
///     .rule("*", ToolOverride::default().description("[Filesystem] {description}"))
///     .rule("read_file", ToolOverride::default().name("fs_read"));
/// let def = overrides.apply(ToolDefinition::new("read_file", "Read a file.", serde_json::json!({"type": "object"})));
/// assert_eq!((def.name.as_str(), def.description.as_str()), ("fs_read", "[Filesystem] Read a file."));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolOverrides {
    /// (pattern, override), in the order given.
    rules: Vec<(String, ToolOverride)>,
}

impl ToolOverrides {
    /// Add a rule for the tools whose raw names match `pattern`.
    pub fn rule(mut self, pattern: impl Into<String>, change: ToolOverride) -> Self {
        self.rules.push((pattern.into(), change));
        self
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The definition with every matching rule applied: wildcard rules
    /// first, then exact ones, each in the order given.
    pub fn apply(&self, mut def: ToolDefinition) -> ToolDefinition {
        let raw = def.name.clone();
        let name = raw.as_str();
        let matching = |wild: bool| {
            self.rules
                .iter()
                .filter(move |(p, _)| p.contains('*') == wild && wildcard_match(p, name))
        };
        let rules: Vec<&ToolOverride> = matching(true).chain(matching(false)).map(|(_, o)| o).collect();
        for change in rules {
            change.apply(&raw, &mut def);
        }
        def
    }

    /// Overrides from their JSON form (the `toolOverrides` of a
    /// configuration file): an object whose keys are raw-name patterns and
    /// whose values hold any of `name`, `description` (with
    /// `{description}`, `{name}`), `providerOptions` (an object per
    /// provider) and `alwaysOn`. The error names the key that is wrong.
    ///
    /// ```
    /// use loopwright_types::toolset::ToolOverrides;
    /// let json = serde_json::json!({"read_*": {"description": "[FS] {description}", "alwaysOn": true}});
    /// assert!(!ToolOverrides::from_json(&json).unwrap().is_empty());
    /// let err = ToolOverrides::from_json(&serde_json::json!({"x": {"name": 3}})).unwrap_err();
    /// assert_eq!(err.path, "toolOverrides.x.name");
    /// assert_eq!(err.to_string(), "toolOverrides.x.name: expected a string, got 3");
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, crate::util::InvalidValue> {
        let at = |path: &str, message: String| {
            crate::util::InvalidValue::new(format!("toolOverrides{path}"), message)
        };
        let Some(rules) = value.as_object() else {
            return Err(at("", format!("expected an object of tool names, got {value}")));
        };
        let mut out = Self::default();
        for (pattern, entry) in rules {
            let Some(entry) = entry.as_object() else {
                return Err(at(
                    &format!(".{pattern}"),
                    format!("expected an object, got {entry}"),
                ));
            };
            let mut change = ToolOverride::default();
            for (key, v) in entry {
                let path = format!(".{pattern}.{key}");
                let text = || {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| at(&path, format!("expected a string, got {v}")))
                };
                match key.as_str() {
                    "name" => change.name = Some(text()?),
                    "description" => change.description = Some(text()?),
                    "alwaysOn" => {
                        change.always_on = Some(
                            v.as_bool()
                                .ok_or_else(|| at(&path, format!("expected true or false, got {v}")))?,
                        );
                    }
                    "providerOptions" => {
                        let Some(map) = v.as_object() else {
                            return Err(at(&path, format!("expected an object per provider, got {v}")));
                        };
                        for (provider, options) in map {
                            if !options.is_object() {
                                return Err(at(
                                    &format!("{path}.{provider}"),
                                    format!("expected an object, got {options}"),
                                ));
                            }
                            change.provider_options.insert(provider.clone(), options.clone());
                        }
                    }
                    other => {
                        return Err(at(
                            &path,
                            format!(
                                "unknown key `{other}` (known: name, description, providerOptions, alwaysOn)"
                            ),
                        ));
                    }
                }
            }
            out.rules.push((pattern.clone(), change));
        }
        Ok(out)
    }

    /// These overrides as a transform for
    /// [`SourceOptions::transform`](super::SourceOptions::transform).
    pub fn transform(self) -> Arc<ToolTransform> {
        Arc::new(move |def: &ToolDefinition| Some(self.apply(def.clone())))
    }
}

/// A tool under another definition; everything else is the tool's own.
pub(crate) struct Reshaped {
    inner: Arc<dyn Tool>,
    definition: ToolDefinition,
}

/// `tool` as `transform` shapes it: itself when nothing changes, `None`
/// when the transform drops it.
pub(crate) fn reshape(tool: Arc<dyn Tool>, transform: &ToolTransform) -> Option<Arc<dyn Tool>> {
    let definition = transform(tool.definition())?;
    if &definition == tool.definition() {
        return Some(tool);
    }
    Some(Arc::new(Reshaped {
        inner: tool,
        definition,
    }))
}

#[async_trait]
impl Tool for Reshaped {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, input: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.inner.call(input, ctx).await
    }

    fn timeout_for(&self, input: &Value) -> Option<std::time::Duration> {
        self.inner.timeout_for(input)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.inner.as_any()
    }
}
