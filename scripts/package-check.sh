#!/usr/bin/env bash
# The package check: what a publish would do, and what an application sees.
# - `cargo package --workspace` builds every package from its .crate file
#   (the workspace's own crates resolved from those files, as crates.io would
#   resolve them), so a file left out of a package's `include`, or a path
#   outside it, fails here;
# - tests-consumer/ (not a workspace member, no committed lockfile) depends on
#   the facade by path beside the newest `rmcp = "3"` and `reqwest = "0.13"`,
#   passes its own reqwest client to a provider, and must build and run;
# - `cargo tree -d` must show no second reqwest, rustls, hyper or sse-stream.
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo unpacks the packaged crates of its local overlay registry under
# ~/.cargo/registry/src/-HASH/ (the hash of target/package/tmp-registry's
# path) and reuses an unpacked crate of the same name and version: a second
# check from the same checkout would verify against the first one's sources.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/loopwright-*
# Tests, benches and examples stay out of the packages (they need tests-deps/
# and the fixtures); cargo names each one it leaves out, which says nothing.
cargo package --workspace 2>&1 | grep -v '^warning: ignoring \(test\|bench\|example\) '
cargo run --manifest-path tests-consumer/Cargo.toml --target-dir target
# `cargo tree -d` also prints every crate on the way to a duplicate (one
# version of reqwest that depends on a duplicated crate is listed): a name
# counts only with two different versions.
dups=$(cargo tree -d --workspace --all-features -e normal --prefix none --format '{p}' \
    | grep -E '^(reqwest|rustls|hyper|sse-stream) ' | awk '{print $1, $2}' | sort -u \
    | awk '{print $1}' | uniq -d || true)
if [ -n "$dups" ]; then
    echo "duplicate versions in the dependency graph:" >&2
    echo "$dups" >&2
    exit 1
fi
echo "package check: ok"
