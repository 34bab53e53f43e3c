#!/usr/bin/env bash
# Re-creates a bundled loopback capture: the reference host and simulated
# controllers of one protocol on loopback, captured live by `kinetrace
# capture` to a pcap and a trace at once. Needs root (capture).
#
#   sudo captures/make-loopback-session.sh                  # motionlink-v1: loopback-session.{pcap,jsonl}
#   sudo captures/make-loopback-session.sh keepcalm-json    # keepcalm-session.{pcap,jsonl}
#   sudo captures/make-loopback-session.sh attitude-stream  # attitude-session.{pcap,jsonl}
#
# The controllers' motion is seeded; timestamps and ports are whatever the
# run gets, so a re-run gives an equivalent, not identical, capture.
set -euo pipefail
cd "$(dirname "$0")/.."
protocol=${1:-motionlink-v1}
case "$protocol" in
    motionlink-v1) name=loopback-session; simulate=(--controllers 3 --duration 60 --script random --seed 2026) ;;
    keepcalm-json) name=keepcalm-session; simulate=(--controllers 3 --duration 30 --script random --seed 2026) ;;
    attitude-stream) name=attitude-session; simulate=(--controllers 2 --duration 20 --persona steering --seed 2026) ;;
    *) echo "usage: $0 [motionlink-v1|keepcalm-json|attitude-stream]" >&2; exit 64 ;;
esac
swift build --product kinetrace >/dev/null
bin=$(swift build --show-bin-path)/kinetrace
work=$(mktemp -d)
"$bin" host --protocol "$protocol" --port 0 > "$work/host.out" 2>&1 & host=$!
for _ in $(seq 100); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
port=$(grep -o '[0-9]*$' "$work/host.out" | head -1)
"$bin" capture --protocol "$protocol" -i lo --port "$port" --pcap "captures/$name.pcap" --trace "captures/$name.jsonl" > "$work/cap.out" 2>&1 & cap=$!
for _ in $(seq 100); do grep -q "capturing on" "$work/cap.out" && break; sleep 0.05; done
"$bin" simulate --protocol "$protocol" --to "127.0.0.1:$port" "${simulate[@]}"
kill -INT "$cap"; wait "$cap"
kill -INT "$host"; wait "$host"
cat "$work/cap.out" "$work/host.out"
echo "host port: $port"
rm -rf "$work"
