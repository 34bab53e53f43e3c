#!/usr/bin/env bash
# Re-creates captures/loopback-session.{pcap,jsonl}: the reference host and
# three simulated controllers playing a KeepCalm-like session (random jumps)
# on loopback, captured live by `kinetrace capture`. Needs root (capture).
# The controllers' motion is seeded; timestamps and ports are whatever the
# run gets, so a re-run gives an equivalent, not identical, capture.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product kinetrace >/dev/null
bin=$(swift build --show-bin-path)/kinetrace
work=$(mktemp -d)
"$bin" host --port 0 > "$work/host.out" 2>&1 & host=$!
for _ in $(seq 100); do grep -q "listening on" "$work/host.out" && break; sleep 0.05; done
port=$(grep -o '[0-9]*$' "$work/host.out" | head -1)
"$bin" capture -i lo --port "$port" --pcap captures/loopback-session.pcap --trace captures/loopback-session.jsonl > "$work/cap.out" 2>&1 & cap=$!
for _ in $(seq 100); do grep -q "capturing on" "$work/cap.out" && break; sleep 0.05; done
"$bin" simulate --to "127.0.0.1:$port" --controllers 3 --duration 60 --script random --seed 2026
kill -INT "$cap"; wait "$cap"
kill -INT "$host"; wait "$host"
cat "$work/cap.out" "$work/host.out"
echo "host port: $port"
rm -rf "$work"
