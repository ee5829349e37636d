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
