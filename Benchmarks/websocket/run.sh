#!/usr/bin/env bash
# What WebSocket costs beside the protocol's own transport, measured in one run, turn by turn:
#   1. MotionLink acks: 100 controllers at 10 Hz to the reference host over udp:// and over
#      ws://, the controllers' own round-trip p50/p99 (frame sent → ack read) and send lateness p99;
#   2. a byte stream: attitude-stream, 100 controllers at 60 Hz over tcp:// and ws://, send
#      lateness p99 and what the host received.
# Usage: Benchmarks/websocket/run.sh
#   KINETRACE_BIN  use this kinetrace binary instead of building one (release, in .build-bench)
#   REPEATS        turns of each pair (default 3); SECONDS per run (default 20)
# Prints a Markdown table, also written to Benchmarks/websocket/results/websocket.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${REPEATS:-3}
seconds=${SECONDS_PER_RUN:-20}
if [ -n "${KINETRACE_BIN:-}" ]; then
  bin=$KINETRACE_BIN
else
  swift build -c release --product kinetrace --scratch-path .build-bench >/dev/null
  bin=$(swift build -c release --scratch-path .build-bench --show-bin-path)/kinetrace
fi
work=$(mktemp -d)
host_pid=
cleanup() { [ -n "$host_pid" ] && kill -INT "$host_pid" 2>/dev/null || true; sleep 0.3; rm -rf "$work"; }
trap cleanup EXIT

# One run: protocol scheme rate → a JSON line of the figures.
run_pair() {
  local protocol=$1 scheme=$2 rate=$3 path=""
  [ "$scheme" = ws ] && path=/bench
  "$bin" host --protocol "$protocol" --transport "$scheme" --port 0 ${path:+--path $path} --format json > "$work/host.out" 2>&1 &
  host_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
  local port
  port=$(grep -o 'listening on .*' "$work/host.out" | grep -o '[0-9]*$')
  "$bin" simulate --protocol "$protocol" --to "$scheme://127.0.0.1:$port$path" --controllers 100 --rate "$rate" \
    --duration "$seconds" --format json > "$work/sim.json"
  kill -INT "$host_pid"; wait "$host_pid" 2>/dev/null || true; host_pid=
  python3 - "$work/sim.json" "$work/host.out" "$protocol" "$scheme" <<'PY'
import json, sys
sim = json.load(open(sys.argv[1]))
host = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
rtt = sim.get("round_trip_ms", {})
print(json.dumps({"protocol": sys.argv[3], "scheme": sys.argv[4], "sent": sim.get("frames_sent", sim.get("records_written")),
                  "received": host.get("valid_frames"), "rtt_p50": rtt.get("p50"), "rtt_p99": rtt.get("p99"), "rtt_n": rtt.get("count"),
                  "late_p99_us": sim["send_lateness_us"]["p99"]}))
PY
}

: > "$work/runs.jsonl"
for turn in $(seq "$repeats"); do
  for scheme in udp ws; do run_pair motionlink-v1 "$scheme" 10 >> "$work/runs.jsonl"; done
  for scheme in tcp ws; do run_pair attitude-stream "$scheme" 60 >> "$work/runs.jsonl"; done
  echo "turn $turn of $repeats done" >&2
done

mkdir -p Benchmarks/websocket/results
python3 - "$work/runs.jsonl" "$repeats" "$seconds" <<'PY' | tee Benchmarks/websocket/results/websocket.md
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
print(f"100 controllers, {sys.argv[3]} s per run, {sys.argv[2]} turns alternating the carriers; medians over turns.\n")
print("| protocol | carrier | sent | host received | ack RTT p50 ms | ack RTT p99 ms | acks | send lateness p99 µs |")
print("|---|---|---|---|---|---|---|---|")
for protocol, schemes in (("motionlink-v1", ("udp", "ws")), ("attitude-stream", ("tcp", "ws"))):
    for scheme in schemes:
        rs = [r for r in runs if r["protocol"] == protocol and r["scheme"] == scheme]
        f = lambda k: med([r[k] for r in rs])
        fmt = lambda v, d=3: "–" if v is None else f"{v:.{d}f}"
        print(f"| {protocol} | {scheme}:// | {f('sent'):.0f} | {f('received'):.0f} | {fmt(f('rtt_p50'))} | {fmt(f('rtt_p99'))} | {fmt(f('rtt_n'), 0)} | {fmt(f('late_p99_us'), 1)} |")
for protocol, base in (("motionlink-v1", "udp"), ("attitude-stream", "tcp")):
    b = [r for r in runs if r["protocol"] == protocol and r["scheme"] == base]
    w = [r for r in runs if r["protocol"] == protocol and r["scheme"] == "ws"]
    ratios = []
    for key in ("rtt_p99", "late_p99_us"):
        bb, ww = med([r[key] for r in b]), med([r[key] for r in w])
        if bb and ww: ratios.append(f"{key} ws/{base} {ww / bb:.2f}")
    print(f"\n{protocol}: " + ", ".join(ratios))
PY
