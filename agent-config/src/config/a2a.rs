//! `a2aAgents`: remote A2A agents the command's agent calls as tools
//! (loopwright-a2a), each `{"url", "headers"?, "timeout"?}`.
//!
//! Invariants: an entry with a `${VAR}` that is not set is left out with a
//! warning naming the key and the variable (the other agents stay); any
//! other mistake is an error naming the key.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::expand::{expand, join};
use super::{AgentConfig, ConfigFileError};

/// The keys of one entry.
pub(super) const KEYS: &[&str] = &["url", "headers", "timeout"];

/// One remote A2A agent of `a2aAgents`, variables expanded.
///
/// ```
/// let text = r#"{"a2aAgents": {"weather": {"url": "https://agents.example/weather",
///     "headers": {"Authorization": "Bearer ${KEY}"}, "timeout": "10m"}}}"#;
/// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|v| (v == "KEY").then(|| "k".into())).unwrap();
/// let weather = &config.a2a_agents[0];
/// assert_eq!((weather.name.as_str(), weather.headers["Authorization"].as_str()), ("weather", "Bearer k"));
/// assert_eq!(weather.timeout, Some(std::time::Duration::from_secs(600)));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct A2aAgentConfig {
    /// The name (its tool is `a2a__{name}`).
    pub name: String,
    /// Where its card is (or the card's own URL).
    pub url: String,
    /// Headers every request carries.
    pub headers: BTreeMap<String, String>,
    /// How long one call may take.
    pub timeout: Option<Duration>,
}

impl AgentConfig {
    /// `a2aAgents`, expanded.
    pub(super) fn read_a2a_agents(
        &mut self,
        agents: Map<String, Value>,
        lookup: &dyn Fn(&str) -> Option<String>,
        invalid: &dyn Fn(&str, String) -> ConfigFileError,
    ) -> Result<(), ConfigFileError> {
        for (name, mut value) in agents {
            let key = join("a2aAgents", &name);
            if let Err(missing) = expand(&mut value, &key, &|_| false, lookup) {
                self.warnings.push(format!(
                    "{}: environment variable {} is not set; the A2A agent {name} is left out",
                    missing.key, missing.variable
                ));
                continue;
            }
            let Value::Object(entry) = value else {
                return Err(invalid(
                    &key,
                    "expected an object {\"url\", \"headers\"?, \"timeout\"?}".into(),
                ));
            };
            let url = match entry.get("url") {
                Some(Value::String(url)) if !url.trim().is_empty() => url.trim().to_owned(),
                _ => {
                    return Err(invalid(
                        &join(&key, "url"),
                        "expected the agent's URL (a string)".into(),
                    ));
                }
            };
            let mut headers = BTreeMap::new();
            match entry.get("headers") {
                None | Some(Value::Null) => {}
                Some(Value::Object(given)) => {
                    for (header, value) in given {
                        let Some(value) = value.as_str() else {
                            return Err(invalid(
                                &join(&join(&key, "headers"), header),
                                "expected a string".into(),
                            ));
                        };
                        headers.insert(header.clone(), value.to_owned());
                    }
                }
                Some(_) => {
                    return Err(invalid(
                        &join(&key, "headers"),
                        "expected an object of strings".into(),
                    ));
                }
            }
            let timeout = match entry.get("timeout") {
                None | Some(Value::Null) => None,
                Some(given) => Some(
                    super::parse_duration(given)
                        .map_err(|e| invalid(&join(&key, "timeout"), e.to_string()))?,
                ),
            };
            self.a2a_agents.push(A2aAgentConfig {
                name,
                url,
                headers,
                timeout,
            });
        }
        Ok(())
    }

    /// The configured A2A agents as one tool source (`a2a`), or `None`
    /// without any.
    ///
    /// ```
    /// let text = r#"{"a2aAgents": {"weather": {"url": "http://127.0.0.1:8090/weather"}}}"#;
    /// let config = loopwright_config::config::AgentConfig::parse(text, "a.json", &|_| None).unwrap();
    /// assert!(config.a2a_source().is_some());
    /// ```
    pub fn a2a_source(&self) -> Option<loopwright_a2a::A2aAgents> {
        if self.a2a_agents.is_empty() {
            return None;
        }
        let source = self
            .a2a_agents
            .iter()
            .fold(loopwright_a2a::A2aAgents::new(), |source, agent| {
                let mut remote = loopwright_a2a::A2aAgent::new(&agent.name, &agent.url);
                for (name, value) in &agent.headers {
                    remote = remote.header(name, value);
                }
                if let Some(timeout) = agent.timeout {
                    remote = remote.timeout(timeout);
                }
                source.agent(remote)
            });
        Some(source)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::AgentConfig;

    #[test]
    fn mistakes_name_their_key_and_a_missing_variable_leaves_the_agent_out() {
        let parse = |text: &str| AgentConfig::parse(text, "a.json", &|_| None);
        let e = parse(r#"{"a2aAgents": {"w": {"headers": {}}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a2aAgents.w.url"), "{e}");
        let e = parse(r#"{"a2aAgents": {"w": {"url": "http://h", "headers": {"X": 1}}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a2aAgents.w.headers.X"), "{e}");
        let e = parse(r#"{"a2aAgents": {"w": {"url": "http://h", "timeout": "soon"}}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a2aAgents.w.timeout"), "{e}");
        let config = parse(r#"{"a2aAgents": {"w": {"url": "http://h", "headers": {"K": "${NOPE}"}}, "v": {"url": "http://v", "colour": 1}}}"#).unwrap();
        assert_eq!(config.a2a_agents.len(), 1);
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.contains("NOPE") && w.contains("A2A agent w")),
            "{:?}",
            config.warnings
        );
        assert!(
            config.warnings.iter().any(|w| w.contains("a2aAgents.v.colour")),
            "{:?}",
            config.warnings
        );
    }
}
