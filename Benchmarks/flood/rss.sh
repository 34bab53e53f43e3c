#!/usr/bin/env bash
# Peak RSS of replay, conform and gestures --live against hostile hosts (issue 15, finding 4).
#
#   Benchmarks/flood/rss.sh [seconds]    (default 60; needs a built kinetrace: swift build -c release)
#
# Hosts (Tests/FaultyHosts/reply_flood_host.py): "big" answers every datagram with 65,507 bytes;
# "many" with nine acks nobody asked for (under the flood limits: the run goes its whole length);
# "flood" sends valid acks to every controller it has heard, without pause (the run stops, 76 or FAIL). Each run's peak RSS
# comes from getrusage(RUSAGE_CHILDREN) of a fresh Python parent, so it is the kinetrace process's own.
# The bound the runs are held to is documented in Benchmarks/RESULTS.md (64 MB).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
bin=${KINETRACE:-$(swift build -c release --show-bin-path)/kinetrace}
[ -x "$bin" ] || { echo "rss.sh: no kinetrace at $bin (swift build -c release)" >&2; exit 69; }
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" synth --out "$work/session.jsonl" --controllers 20 --duration "$seconds" --seed 7 >/dev/null
"$bin" synth --out "$work/labelled.jsonl" --controllers 4 --duration "$seconds" --seed 8 >/dev/null  # jumps are labelled

start_host() {  # mode -> sets host_pid, host_port
    python3 Tests/FaultyHosts/reply_flood_host.py --mode "$1" >"$work/host.out" &
    host_pid=$!
    for _ in $(seq 100); do grep -q listening "$work/host.out" 2>/dev/null && break; sleep 0.05; done
    host_port=$(sed -n 's/.*://p' "$work/host.out")
}

measure() {  # label, command...
    local label=$1; shift
    python3 - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
label, command = sys.argv[1], sys.argv[2:]
start = time.monotonic()
done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=900)
seconds = time.monotonic() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
import re
last = (done.stderr.strip().splitlines() or [""])[-1]
last = re.sub(r"/tmp/[^ :]*", "TRACE", last.replace("kinetrace: error: ", ""))
last = last[:80] + ("…" if len(last) > 80 else "")
print(f"| {label} | {done.returncode} | {seconds:.1f} | {peak:.1f} | {last} |")
PY
}

echo "| run | exit | seconds | peak RSS (MB) | what it said last (stderr) |"
echo "|---|---|---|---|---|"
for mode in big many flood; do
    start_host "$mode"
    measure "replay, $mode host, ${seconds} s trace × 20 controllers" "$bin" replay "$work/session.jsonl" --to "127.0.0.1:$host_port"
    measure "conform --host, $mode host" "$bin" conform --host "127.0.0.1:$host_port"
    measure "gestures eval --live, $mode host" "$bin" gestures eval --live "127.0.0.1:$host_port" "$work/labelled.jsonl"
    kill "$host_pid"; wait "$host_pid" 2>/dev/null || true
done
# Through the stdio adapter: a child that writes valid acks nonstop.
flood_exec="python3 Tests/FaultyHosts/ack_flood_host.py"
measure "replay --exec, nonstop acks" "$bin" replay "$work/session.jsonl" --exec "$flood_exec"
measure "conform --exec, nonstop acks" "$bin" conform --exec "$flood_exec"
