//! This README's configuration example means what its prose says.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The lines of the first fenced block after `heading` in `readme`.
fn block(readme: &str, heading: &str) -> Vec<String> {
    let after = &readme[readme.find(heading).expect("heading")..];
    let body = after.split("```").nth(1).expect("a fenced block");
    body.lines().skip(1).map(str::to_owned).collect()
}

#[test]
fn the_mcp_readme_configuration_means_what_its_prose_says() {
    let text = block(include_str!("../README.md"), "## Config formats").join("\n");
    let value: serde_json::Value = serde_json::from_str(&text).expect("loopwright-mcp README's JSON");
    let servers = loopwright_mcp::parse_mcp_servers(&value).expect("loopwright-mcp README's servers");
    let kind = |name: &str| {
        let server = servers.iter().find(|s| s.name == name).expect(name);
        (server.transport.kind(), server.enabled)
    };
    assert_eq!(kind("fs"), ("stdio", true));
    assert_eq!(kind("github"), ("stdio", true));
    assert_eq!(kind("api"), ("http", true));
    assert_eq!(kind("old"), ("sse", true));
    assert_eq!(kind("time"), ("stdio", false));
    assert_eq!(kind("remote"), ("http", true));
    let with_resources: Vec<_> = servers
        .iter()
        .filter(|s| s.resources)
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(with_resources, ["api"]);
    assert_eq!(servers.len(), 6);
}

#[test]
fn the_mcp_readme_oauth_configuration_means_what_its_prose_says() {
    use loopwright_mcp::oauth::{JwtAlgorithm, OAuthGrant};
    let text = block(include_str!("../README.md"), "### From the config").join("\n");
    let value: serde_json::Value = serde_json::from_str(&text).expect("the OAuth example's JSON");
    let servers = loopwright_mcp::parse_mcp_servers(&value).expect("the OAuth example's servers");
    let oauth = |name: &str| servers.iter().find(|s| s.name == name).expect(name).oauth.clone();
    assert!(oauth("linear").is_none());
    let jira = oauth("jira").unwrap();
    assert_eq!(jira.client_id.as_deref(), Some("my-app"));
    assert_eq!(jira.client_secret.as_deref(), Some("${JIRA_CLIENT_SECRET}"));
    assert_eq!(
        (jira.scopes.len(), jira.redirect_port, jira.grant),
        (1, Some(8765), OAuthGrant::AuthorizationCode)
    );
    let ci = oauth("ci").unwrap();
    assert_eq!(
        (ci.grant, ci.signing_algorithm),
        (OAuthGrant::ClientCredentials, JwtAlgorithm::Es256)
    );
}
