//! A served agent's agent card: the public one at the well-known path, and
//! the extended one (`GetExtendedAgentCard`) that names every tool, for a
//! client holding one of the server's keys.
//!
//! Invariants: the interfaces are listed in order of preference (JSON-RPC
//! v1.0, HTTP+JSON v1.0, then JSON-RPC v0.3 for older peers), each at the
//! address the client reached; a server with keys says so with a bearer
//! scheme that every operation requires; the public card names no tool.

use std::collections::HashMap;

use a2a::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme, SecurityScheme};

use crate::agents::ServedAgent;

/// The older protocol version served beside 1.0 (JSON-RPC only).
pub(super) const V03: &str = "0.3";

/// The card of `served`, reached at `url`, a bearer key asked for when
/// `keys`.
///
/// `tools` (name and description) become skills on the extended card; the
/// public card has one skill, the agent itself.
pub(super) fn card(
    served: &ServedAgent,
    url: &str,
    keys: bool,
    tools: Option<Vec<(String, String)>>,
) -> AgentCard {
    let (security_schemes, security_requirements) = security(keys);
    let mut skills = vec![skill(served.name(), served.description(), "agent")];
    if let Some(tools) = tools {
        skills.extend(
            tools
                .iter()
                .map(|(name, description)| skill(name, description, "tool")),
        );
    }
    let mut older = AgentInterface::new(url, "JSONRPC");
    older.protocol_version = V03.to_owned();
    AgentCard {
        name: served.name().to_owned(),
        description: served.description().to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        supported_interfaces: vec![
            AgentInterface::new(url, "JSONRPC"),
            AgentInterface::new(url, "HTTP+JSON"),
            older,
        ],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: Some(keys),
        },
        default_input_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        default_output_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        skills,
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    }
}

type Schemes = Option<HashMap<String, SecurityScheme>>;
type Requirements = Option<Vec<HashMap<String, Vec<String>>>>;

fn security(keys: bool) -> (Schemes, Requirements) {
    if !keys {
        return (None, None);
    }
    let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
        scheme: "bearer".to_owned(),
        description: Some("The server's API key, as `Authorization: Bearer <key>`.".to_owned()),
        bearer_format: None,
    });
    (
        Some(HashMap::from([("bearer".to_owned(), scheme)])),
        Some(vec![HashMap::from([("bearer".to_owned(), Vec::new())])]),
    )
}

fn skill(name: &str, description: &str, tag: &str) -> AgentSkill {
    AgentSkill {
        id: name.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        tags: vec![tag.to_owned()],
        examples: None,
        input_modes: None,
        output_modes: None,
        security_requirements: None,
    }
}

/// The card as served: the v1.0 card, plus the fields a v0.3 client reads
/// (`url`, `protocolVersion`, `preferredTransport`), so that one card
/// serves both.
pub(super) fn hybrid(card: &AgentCard, url: &str) -> serde_json::Value {
    let mut value = serde_json::to_value(card).unwrap_or_else(|_| serde_json::json!({}));
    if let Some(object) = value.as_object_mut() {
        object.insert("url".to_owned(), url.into());
        object.insert("protocolVersion".to_owned(), "0.3.0".into());
        object.insert("preferredTransport".to_owned(), "JSONRPC".into());
    }
    value
}
