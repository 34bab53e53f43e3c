#!/usr/bin/env bash
# Live-traffic benchmarks on loopback (needs root for capture):
#   1. the reference host's ack latency at 1,000 frames/s from 100 controllers,
#      measured independently from a libpcap capture (ack time − trigger frame time);
#   2. capture at 10,000 frames/s for 30 s: kernel drops must be zero.
# Usage: Benchmarks/live/run.sh [SECONDS_FOR_HOST_RUN] [SECONDS_FOR_CAPTURE_RUN]
#   KINETRACE_BIN  use this kinetrace binary instead of building one
# Prints a Markdown table for Benchmarks/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
host_seconds=${1:-30}
capture_seconds=${2:-30}
if [ -n "${KINETRACE_BIN:-}" ]; then
  bin=$KINETRACE_BIN
else
  swift build -c release --product kinetrace >/dev/null
  bin=$(swift build -c release --show-bin-path)/kinetrace
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$work"; }
trap cleanup EXIT

# Sets `port`. Not called in $(…): the subshell would keep the host's pid from `pids`, and
# the host would outlive the run.
start_host() {
  "$bin" host --port 0 > "$work/host.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
  port=$(grep -o '[0-9]*$' "$work/host.out" | head -1)
}

start_capture() {  # port name
  "$bin" capture -i lo --port "$1" --pcap "$work/$2.pcap" --trace "$work/$2.jsonl" --format json > "$work/$2.cap" 2>&1 &
  cap_pid=$!
  pids+=($cap_pid)
  for _ in $(seq 100); do grep -q "capturing on" "$work/$2.cap" && break; sleep 0.05; done
}

stop_capture() {  # name
  # Called in $(...), a subshell that cannot `wait` for the capture: poll until it has exited
  # (it drains the kernel's ring for a few hundred ms after the signal) before reading its summary.
  kill -INT "$cap_pid"
  while kill -0 "$cap_pid" 2>/dev/null; do sleep 0.05; done
  tail -1 "$work/$1.cap"
}

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# 1. Host latency: 100 controllers × 10 Hz, random jumps.
start_host
start_capture "$port" host
"$bin" simulate --to "127.0.0.1:$port" --controllers 100 --rate 10 --duration "$host_seconds" --script random --seed 1 --format json > "$work/sim.json"
capture_summary=$(stop_capture host)
delay=$("$bin" inspect --format json --port "$port" "$work/host.jsonl" | json 'd["reply_delay_ms"]')
rtt=$(json 'd["round_trip_ms"]' < "$work/sim.json")
frames=$(json 'd["frames_sent"]' < "$work/sim.json")
echo "| Host: ack after trigger frame, seen by capture on lo (100 controllers, 1,000 frames/s, ${host_seconds} s, ${frames} frames) | $(echo "$delay" | python3 -c "import ast,sys; d=ast.literal_eval(sys.stdin.read()); print(f\"p50 {d['p50']} ms, p99 {d['p99']} ms, max {d['max']} ms over {d['count']} acks\")") |"
echo "| Same run, round trip measured by the simulator | $(echo "$rtt" | python3 -c "import ast,sys; d=ast.literal_eval(sys.stdin.read()); print(f\"p50 {d['p50']:.3f} ms, p99 {d['p99']:.3f} ms, max {d['max']:.3f} ms\")") |"
late=$(json 'd["send_lateness_us"]' < "$work/sim.json")
echo "| Same run, simulator send time against its deadlines (sleep, then 200 µs spin) | $(echo "$late" | python3 -c "import ast,sys; d=ast.literal_eval(sys.stdin.read()); print(f\"late by p50 {d['p50']:.0f} µs, p99 {d['p99']:.0f} µs, max {d['max']:.0f} µs over {d['count']} frames\")") |"
echo "| Capture during that run | $(echo "$capture_summary" | json '"%d packets, kernel dropped %d" % (d["packets"], d["kernel_dropped"])') |"

# 2. Capture at 10,000 frames/s: 100 controllers × 100 Hz, no host needed (the port just has to match).
start_capture "$port" flood
"$bin" simulate --to "127.0.0.1:$port" --controllers 100 --rate 100 --duration "$capture_seconds" --script idle --format json > "$work/flood.json"
flood_summary=$(stop_capture flood)
sent=$(json 'd["frames_sent"]' < "$work/flood.json")
echo "| Capture at 10,000 frames/s for ${capture_seconds} s | $(echo "$flood_summary" | json '"%d of '"$sent"' frames captured, kernel dropped %d, interface dropped %d" % (d["messages"].get("c2h",0), d["kernel_dropped"], d["interface_dropped"])') |"
