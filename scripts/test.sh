#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine. Installs what the tests
# need first (nothing outside cargo yet), so no test ever skips for a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-features
