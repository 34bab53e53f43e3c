#!/usr/bin/env bash
# One profiled kinetrace replay at the stadium load (10 Hz × 10,000 for 3 s,
# 100,000 frames/s) into drain.py on 127.0.0.1, with tcpdump capturing on lo as
# in run.sh: `perf record -g` system-wide (-a, so tcpdump, the drain and the
# kernel's softirq work are in it too), then the top symbols per process/thread.
#
# Usage: sudo Benchmarks/replay/stadium/profile.sh [OUT_DIR]   (default /tmp/kinetrace-stadium-perf)
#   KINETRACE_BIN (default .build-bench/release/kinetrace), SEED (1), REPLAY_EXTRA, PERF_FREQ (4999)
# Writes OUT_DIR/perf.data, perf-by-thread.txt (thread id:comm, symbol) and perf-by-process.txt (comm,dso,symbol).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bin=${KINETRACE_BIN:-$root/.build-bench/release/kinetrace}
out=${1:-/tmp/kinetrace-stadium-perf}
[ "$(id -u)" -eq 0 ] || { echo "profile.sh: needs root" >&2; exit 1; }
command -v perf >/dev/null || { echo "profile.sh: perf is missing" >&2; exit 1; }
mkdir -p "$out"; chmod 755 "$out"
pids=()
cleanup() { local p; for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

"$bin" synth --out "$out/input.jsonl" --controllers 10000 --rate 10 --duration 3 --seed "${SEED:-1}" >/dev/null 2>&1
"$bin" convert "$out/input.jsonl" "$out/all.pcap" >/dev/null 2>&1
tcpdump -r "$out/all.pcap" --time-stamp-precision=nano -w "$out/input.pcap" 'udp dst port 47110' 2>/dev/null
rm -f "$out/input.jsonl" "$out/all.pcap"

python3 "$here/drain.py" 127.0.0.1 >"$out/drain.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do port=$(sed -n 's/^listening on .*:\([0-9]*\) .*/\1/p' "$out/drain.log" 2>/dev/null || true); [ -n "$port" ] && break; sleep 0.05; done
tcpdump -i lo -n --time-stamp-precision=nano -B 65536 -s 128 -w "$out/cap.pcap" "udp and dst port $port" >"$out/cap.log" 2>&1 &
cap=$!; pids+=($cap)
for _ in $(seq 100); do grep -qs "listening on" "$out/cap.log" && break; sleep 0.05; done

# shellcheck disable=SC2086  # REPLAY_EXTRA is meant to split into words
perf record -a -g -F "${PERF_FREQ:-4999}" -o "$out/perf.data" -- \
  "$bin" replay "$out/input.pcap" --to "127.0.0.1:$port" --timing original --port 47110 \
  --timestamps original --format json ${REPLAY_EXTRA:-} >"$out/replay.json" 2>"$out/replay.log" || true
sleep 2
perf report -i "$out/perf.data" --no-children --sort pid,sym --percent-limit 0.5 --stdio -g none \
  >"$out/perf-by-thread.txt" 2>/dev/null
perf report -i "$out/perf.data" --no-children --sort comm,dso,sym --percent-limit 0.5 --stdio -g none \
  >"$out/perf-by-process.txt" 2>/dev/null
perf report -i "$out/perf.data" --no-children --sort pid --stdio -g none >"$out/perf-threads.txt" 2>/dev/null
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('sent', r['sent'], 'of', r['scheduled'], 'self lateness', r['lateness_us'])" "$out/replay.json"
echo "profile in $out (perf-threads.txt, perf-by-thread.txt, perf-by-process.txt)"
