#!/usr/bin/env python3
"""Run the test executables cargo built, several at once.

Reads the JSON messages of `cargo test --no-run --message-format=json-render-diagnostics`
from the file named on the command line and runs every test executable in it
as `cargo test` would (in its package's directory, with CARGO_MANIFEST_DIR
set), up to JOBS at a time, the largest first. `cargo test` runs one
executable at a time, and the largest ones (the CLI's, the server's) spend
most of their time waiting on the processes, servers and stores they start:
run side by side, the machine's cores do the others' work meanwhile.

Each executable's output is printed whole when it ends, with how long it
took. The exit status is 1 when any executable failed (all of them run).
The MCP conformance suite runs alone at the end: it runs its own scenarios
in parallel against timeouts of its own, and a busy machine fails them.
"""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

JOBS = int(os.environ.get("LOOPWRIGHT_TEST_JOBS", "3"))
# Test targets that run alone, after the others.
ALONE = {"conformance"}


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
    env = cargo_env(package, name, directory)
    start = time.monotonic()
    done = subprocess.run(
        [exe], cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    took = time.monotonic() - start
    return entry, done.returncode, done.stdout.decode("utf-8", "replace"), took


def main():
    entries = executables(sys.argv[1])
    if not entries:
        print("run-tests: no test executables in the build's messages", file=sys.stderr)
        return 1
    entries.sort(key=lambda e: os.path.getsize(e[2]), reverse=True)
    failed = []
    timings = []

    def report(result):
        (package, name, exe, _), code, output, took = result
        short = os.path.basename(exe)
        print(f"\n     Running {name} ({short}, {package.split('#')[-1]})", flush=True)
        print(output, end="", flush=True)
        print(f"run-tests: {short} took {took:.1f} s, exit {code}", flush=True)
        timings.append((took, short))
        if code != 0:
            failed.append(f"{name} ({exe})")

    together = [e for e in entries if e[1] not in ALONE]
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        for future in as_completed([pool.submit(run, e) for e in together]):
            report(future.result())
    for entry in entries:
        if entry[1] in ALONE:
            report(run(entry))
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
