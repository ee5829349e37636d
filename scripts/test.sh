#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine. Installs what the tests
# need first, so no test ever skips for a missing tool:
# - tests-deps/: third-party MCP servers (npm, pinned by package-lock.json)
#   that the agent-mcp tests run against.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --prefix tests-deps --no-audit --no-fund
cargo test --workspace --all-features
