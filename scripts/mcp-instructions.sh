#!/usr/bin/env bash
# Instructions the client process executes per MCP echo call over stdio,
# through loopwright-mcp's tool object and through a bare rmcp client, counted by
# callgrind (repeatable, unlike time on a shared machine). The server runs
# in its own process and is not counted. Per call = (count with N calls -
# count with none) / N, so connecting and closing cancel out.
# Usage: bash scripts/mcp-instructions.sh [N]   (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-2000}"
bin=$(cargo bench -p loopwright-benches --bench mcp_calls --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -n 1)
[ -x "$bin" ] || { echo "bench binary not found" >&2; exit 1; }
count() {
    LOOPWRIGHT_BENCH_MCP_COUNT="$1:$2" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for how in agent bare; do
    none=$(count "$how" 0)
    many=$(count "$how" "$n")
    echo "$how: $(( (many - none) / n )) instructions per call ($n calls: $many, none: $none)"
done
