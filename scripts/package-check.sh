#!/usr/bin/env bash
# The package check: what a publish would do, and what an application sees.
# - `cargo package --workspace --no-verify` makes every package's .crate
#   file (its include list, README, licenses and manifest as published);
# - the packages are then documented from their .crate files alone: the
#   files are unpacked under target/package-check/, the workspace's own
#   crates resolve to those unpacked copies (as crates.io would resolve
#   them), and `cargo doc --no-deps --workspace --all-features` with
#   warnings denied builds their docs as docs.rs would. rustdoc compiles
#   each package's dependencies among them, and resolves every module of
#   each, so a file left out of an `include` or a path outside the
#   package fails here, as does a broken doc link. (Clippy, all features,
#   all targets, ran on the same sources in the tests' build. Lints on
#   code only the default features compile, behind
#   `cfg(not(feature = ..))`, and a dependency feature a package uses
#   without asking for it while another package asks for it are left to
#   the publish's verification, which builds each package alone.)
#   The unpacked workspace gets the workspace's profiles.
# - tests-consumer/ (not a workspace member, no committed lockfile) depends on
#   the facade by path beside `rmcp = "3"` and `reqwest = "0.13"` (on
#   rustls, as loopwright's) and passes its own reqwest client to a
#   provider: it is checked as a member of the unpacked workspace (with its
#   versions and all features: its dependencies are the docs' own, checked
#   once), and its own graph, resolved alone with the newest rmcp and
#   reqwest, must have one reqwest, one rmcp and no aws-lc-sys. (Default
#   features alone are no longer compiled here: the code only they compile,
#   behind `cfg(not(feature = ..))`, is left to the publish's verification,
#   which builds each package alone.)
# - `cargo tree -d` must show no second reqwest, rustls, hyper or sse-stream.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f target/package/*.crate
# Tests, benches and examples stay out of the packages (they need tests-deps/
# and the fixtures); cargo names each one it leaves out, which says nothing.
# The benches and the test support are not published (publish = false).
# Offline: the index entries Cargo.lock names are in cargo's cache once the
# tests' build (before this in .ci/run) resolved them; updating the index
# again would cost half a minute and change nothing.
cargo package --workspace --exclude loopwright-benches --exclude loopwright-test-support --no-verify --offline 2>&1 | grep -v '^warning: ignoring \(test\|bench\|example\) '
root=target/package-check
rm -rf "$root"
mkdir -p "$root"
names=()
for crate in target/package/*.crate; do
    tar -xzf "$crate" -C "$root"
    dir=$(basename "$crate" .crate)
    names+=("${dir%-*}")
done
{
    echo '# Made by scripts/package-check.sh: the packages as published.'
    echo '[workspace]'
    echo 'resolver = "3"'
    echo 'members = ['
    for crate in target/package/*.crate; do echo "    \"$(basename "$crate" .crate)\","; done
    echo '    "consumer",'
    echo ']'
    echo
    echo '[patch.crates-io]'
    for crate in target/package/*.crate; do
        dir=$(basename "$crate" .crate)
        echo "${dir%-*} = { path = \"$dir\" }"
    done
    echo
    # The workspace's profiles (a profile is part of what cargo reuses a
    # build by).
    awk '/^\[/{p=($0 ~ /^\[profile/)} p && !/^#/' Cargo.toml
} > "$root/Cargo.toml"
# The versions CI tests, for the dependencies from crates.io.
cp Cargo.lock "$root/"
# tests-consumer as a member, on the unpacked facade (its own workspace
# section and profiles are the unpacked workspace's).
facade=$(cd "$root" && ls -d loopwright-[0-9]*)
mkdir -p "$root/consumer"
cp -r tests-consumer/src "$root/consumer/"
awk '/^\[/{skip=($0 ~ /^\[(workspace|profile)/)} !skip' tests-consumer/Cargo.toml \
    | sed "s|^loopwright = { path = \"..\" }|loopwright = { path = \"../$facade\" }|" > "$root/consumer/Cargo.toml"
echo "package check: ${names[*]}, from their .crate files, and the consumer"
# One check of everything (the consumer too: an application's own reqwest
# and rmcp passed to loopwright compile), then the docs from the same
# dependency checks (rustdoc needs their metadata; the two commands select
# the same packages and features, so cargo checks each dependency once).
cargo check --quiet --manifest-path "$root/Cargo.toml" --target-dir target --workspace --all-features
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --manifest-path "$root/Cargo.toml" --target-dir target --no-deps --workspace --all-features
# Its graph: one reqwest and one rmcp (the application's are loopwright's),
# and no aws-lc-sys (the README promises no C toolchain beyond ring's).
consumer=$(cargo tree --manifest-path tests-consumer/Cargo.toml -e normal --prefix none --format '{p}')
for name in reqwest rmcp; do
    versions=$(echo "$consumer" | grep -E "^$name v" | awk '{print $2}' | sort -u | wc -l)
    if [ "$versions" -ne 1 ]; then
        echo "the consumer's graph has $versions versions of $name" >&2
        exit 1
    fi
done
if echo "$consumer" | grep -q '^aws-lc-sys '; then
    echo "aws-lc-sys is in the consumer's graph: a C toolchain beyond ring's" >&2
    exit 1
fi
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
