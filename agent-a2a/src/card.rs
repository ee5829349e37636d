//! A remote agent's card: read from its well-known path, its JSON-RPC v1.0
//! endpoint picked, and its origin checked.
//!
//! Invariant: the endpoint used has the configured URL's origin (scheme,
//! host and port): a card that names another is refused, so the configured
//! headers (a key, say) never go anywhere the configuration did not name.

use a2a::{AgentCard, AgentInterface};
use reqwest::Url;

use crate::A2aError;
use crate::rpc::Remote;

/// Where a card is, from the configured URL: the URL itself when it names a
/// card, else `.well-known/agent-card.json` under it.
pub(crate) fn card_url(agent: &str, url: &str) -> Result<Url, A2aError> {
    let bad = |e: String| A2aError::Config {
        agent: agent.to_owned(),
        message: format!("url {url:?}: {e}"),
    };
    let parsed = Url::parse(url).map_err(|e| bad(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("give an http or https URL".to_owned()));
    }
    if parsed.path().ends_with(".json") {
        return Ok(parsed);
    }
    let base = if parsed.path().ends_with('/') {
        parsed
    } else {
        let mut with_slash = parsed.clone();
        with_slash.set_path(&format!("{}/", parsed.path()));
        with_slash
    };
    base.join(".well-known/agent-card.json")
        .map_err(|e| bad(e.to_string()))
}

/// The card at `remote`'s URL, and the endpoint to send to.
pub(crate) async fn fetch(remote: &Remote) -> Result<(AgentCard, Url), A2aError> {
    let url = card_url(&remote.name, &remote.url)?;
    let what = format!("its card at {url}");
    let response = remote
        .request(reqwest::Method::GET, url.clone())
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|source| remote.http(&what, source))?;
    let body = response
        .bytes()
        .await
        .map_err(|source| remote.http(&what, source))?;
    let card: AgentCard = serde_json::from_slice(&body)
        .map_err(|e| remote.protocol(&what, format!("not an A2A v1.0 card: {e}")))?;
    let endpoint = endpoint(remote, &card)?;
    Ok((card, endpoint))
}

/// The card's JSON-RPC v1.0 interface, of the configured origin.
fn endpoint(remote: &Remote, card: &AgentCard) -> Result<Url, A2aError> {
    let chosen: Option<&AgentInterface> = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding.eq_ignore_ascii_case("JSONRPC") && i.protocol_version.starts_with("1."));
    let Some(interface) = chosen else {
        let offered: Vec<String> = card
            .supported_interfaces
            .iter()
            .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
            .collect();
        return Err(remote.protocol(
            "its card",
            format!("no JSON-RPC v1.0 interface (it offers: {})", offered.join(", ")),
        ));
    };
    let endpoint = Url::parse(&interface.url)
        .map_err(|e| remote.protocol("its card", format!("interface url {:?}: {e}", interface.url)))?;
    let configured = card_url(&remote.name, &remote.url)?;
    if endpoint.origin() != configured.origin() {
        return Err(A2aError::Origin {
            agent: remote.name.clone(),
            configured: remote.url.clone(),
            card: interface.url.clone(),
        });
    }
    Ok(endpoint)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_card_is_under_the_agents_url_unless_the_url_names_it() {
        let at = |u: &str| card_url("a", u).unwrap().to_string();
        assert_eq!(
            at("http://h:1/assistant"),
            "http://h:1/assistant/.well-known/agent-card.json"
        );
        assert_eq!(at("http://h:1/"), "http://h:1/.well-known/agent-card.json");
        assert_eq!(at("http://h:1/x/card.json"), "http://h:1/x/card.json");
        assert!(
            card_url("a", "ftp://h/")
                .unwrap_err()
                .to_string()
                .contains("http or https")
        );
    }
}
