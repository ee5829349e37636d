#!/usr/bin/env python3
"""Run the test executables cargo built, several at once.

Reads the JSON messages of `cargo test --no-run --message-format=json-render-diagnostics`
from the file named on the command line and runs every test executable in it
as `cargo test` would (in its package's directory, with CARGO_MANIFEST_DIR
set), up to JOBS at a time, the longest first. `cargo test` runs one
executable at a time, and the largest ones (the CLI's, the server's) spend
most of their time waiting on the processes, servers and stores they start:
run side by side, the machine's cores do the others' work meanwhile.

A command given after `--` (the doctests, which cargo compiles and runs)
takes a place in the same pool. Each executable's output is printed whole
when it ends, with how long it
took. The exit status is 1 when any executable failed (all of them run).
The MCP conformance suite runs first, beside the longest executable only
(the CLI's, which mostly waits on the processes it starts): it runs its own
scenarios in parallel against timeouts of its own, which a machine busy
with three executables failed. The others start when it is done.
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

JOBS = int(os.environ.get("LOOPWRIGHT_TEST_JOBS", "3"))
# Test targets that run first, beside the first of the others only.
QUIET = {"conformance"}
# The longest executables (package, target), measured in CI, start first;
# then the others, the largest first.
LONGEST = [
    ("loopwright-cli", "integration"),
    # Arize Phoenix's start (about 100 s on a busy machine): started as soon
    # as the conformance suite leaves a place, it no longer ends last.
    ("loopwright-cli", "phoenix"),
    ("loopwright-mcp", "integration"),
    ("loopwright-serve", "integration"),
]


def executables(path):
    """(package, target, executable, package directory) of each test executable."""
    found = []
    seen = set()
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.startswith("{"):
                continue
            message = json.loads(line)
            if message.get("reason") != "compiler-artifact":
                continue
            if not message["profile"]["test"] or not message.get("executable"):
                continue
            exe = message["executable"]
            if exe in seen:
                continue
            seen.add(exe)
            package = message["package_id"]
            name = message["target"]["name"]
            directory = os.path.dirname(message["manifest_path"])
            found.append((package, name, exe, directory))
    return found


def cargo_env(package, name, directory):
    """What `cargo test` sets for a test executable it runs."""
    pkg_name, _, version = package.split("#")[-1].rpartition("@")
    core = version.split("-")[0].split("+")[0].split(".")
    env = dict(
        os.environ,
        CARGO_MANIFEST_DIR=directory,
        CARGO_MANIFEST_PATH=os.path.join(directory, "Cargo.toml"),
        CARGO_PKG_NAME=pkg_name,
        CARGO_PKG_VERSION=version,
        CARGO_PKG_VERSION_MAJOR=core[0],
        CARGO_PKG_VERSION_MINOR=core[1] if len(core) > 1 else "0",
        CARGO_PKG_VERSION_PATCH=core[2] if len(core) > 2 else "0",
        CARGO_CRATE_NAME=name.replace("-", "_"),
    )
    env.setdefault("CARGO", "cargo")
    return env


def run(entry):
    package, name, exe, directory = entry
    if isinstance(exe, list):
        # A command given after `--` (the doctests): as it is, from here.
        argv, env = exe, dict(os.environ)
    else:
        argv, env = [exe], cargo_env(package, name, directory)
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    took = time.monotonic() - start
    return entry, done.returncode, done.stdout.decode("utf-8", "replace"), took


def main():
    entries = executables(sys.argv[1])
    if not entries:
        print("run-tests: no test executables in the build's messages", file=sys.stderr)
        return 1
    # A command after `--` runs in the pool too, after the longest.
    command = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []

    def order(entry):
        key = (entry[0].split("#")[-1].rpartition("@")[0], entry[1])
        rank = LONGEST.index(key) if key in LONGEST else len(LONGEST)
        return (rank, -os.path.getsize(entry[2]))

    entries.sort(key=order)
    if command:
        entries.insert(len(LONGEST), ("command", " ".join(command), command, os.getcwd()))
    failed = []
    timings = []

    def report(result):
        (package, name, exe, _), code, output, took = result
        short = " ".join(exe) if isinstance(exe, list) else os.path.basename(exe)
        print(f"\n     Running {name} ({short}, {package.split('#')[-1]})", flush=True)
        print(output, end="", flush=True)
        print(f"run-tests: {short} took {took:.1f} s, exit {code}", flush=True)
        timings.append((took, short))
        if code != 0:
            failed.append(f"{name} ({exe})")

    quiet = [e for e in entries if e[1] in QUIET]
    rest = [e for e in entries if e[1] not in QUIET]
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        first = [pool.submit(run, e) for e in quiet]
        beside = [pool.submit(run, e) for e in rest[:1]]
        for future in first:
            report(future.result())
        others = [pool.submit(run, e) for e in rest[1:]]
        for future in as_completed(beside + others):
            report(future.result())
    print("\nrun-tests: the slowest executables:")
    for took, short in sorted(timings, reverse=True)[:5]:
        print(f"  {took:7.1f} s  {short}")
    if failed:
        print("\nrun-tests: failed:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    print(f"run-tests: {len(entries)} test executables passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
