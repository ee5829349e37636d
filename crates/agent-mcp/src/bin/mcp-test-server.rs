//! A deliberately misbehaving MCP server for the integration tests.

fn main() {}
