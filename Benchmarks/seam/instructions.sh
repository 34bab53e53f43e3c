#!/usr/bin/env bash
# Instructions per message on the two paths the transport seam touched, counted by
# callgrind (machine load does not move them), for two kinetrace binaries:
#   replay: the replayer sending a trace to a live host (the host runs natively);
#   host:   the reference host answering a replay of the same trace (the replayer natively).
# Each figure is the whole process's instruction count divided by the messages it
# sent or received, so planning, start-up and the receive thread count too; the
# same trace, seed and host make the two binaries do the same work.
#
# Usage: Benchmarks/seam/instructions.sh BASE_KINETRACE NEW_KINETRACE [SECONDS]
# Prints a Markdown table. Needs valgrind.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BASE_KINETRACE NEW_KINETRACE [SECONDS]" >&2; exit 64; }
base=$1 new=$2 seconds=${3:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
trace="$root/captures/loopback-session.jsonl"
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is missing" >&2; exit 1; }
work=$(mktemp -d /tmp/kinetrace-seam-ir.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

start_host() {  # binary prefix... ; prints the port
  "$@" host --port 0 --format json >"$work/host.out" 2>"$work/host.err" &
  host_pid=$!
  pids+=("$host_pid")
  for _ in $(seq 600); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
  grep -o '[0-9]*$' "$work/host.out" | head -1
}
stop_host() {
  kill -INT "$host_pid"
  while kill -0 "$host_pid" 2>/dev/null; do sleep 0.1; done
}
total_ir() { grep -m1 '^summary:' "$1" | awk '{print $2}'; }

echo "| Path | base Ir/message | seam Ir/message | seam / base |"
echo "|---|---|---|---|"
declare -A figure
for which in base new; do
  bin=$base; [ "$which" = new ] && bin=$new
  # The replayer under callgrind, the host native.
  port=$(start_host "$new")
  valgrind --tool=callgrind --callgrind-out-file="$work/replay-$which.out" \
    "$bin" replay "$trace" --to "127.0.0.1:$port" --duration "$seconds" --seed 1 --format json >"$work/replay-$which.json" 2>"$work/replay-$which.err"
  stop_host
  sent=$(python3 -c "import json; print(json.load(open('$work/replay-$which.json'))['sent'])")
  figure[replay-$which]=$(( $(total_ir "$work/replay-$which.out") / sent ))
  # The host under callgrind, the replayer native.
  port=$(start_host valgrind --tool=callgrind --callgrind-out-file="$work/host-$which.out" "$bin")
  "$new" replay "$trace" --to "127.0.0.1:$port" --duration "$seconds" --seed 1 --format json >"$work/driver-$which.json" 2>/dev/null
  stop_host
  received=$(python3 -c "import json; print(json.loads(open('$work/host.out').read().splitlines()[-1])['datagrams'])")
  figure[host-$which]=$(( $(total_ir "$work/host-$which.out") / received ))
done
for path in replay host; do
  b=${figure[$path-base]} n=${figure[$path-new]}
  echo "| $path | $b | $n | $(python3 -c "print(f'{$n / $b:.3f}')") |"
done
