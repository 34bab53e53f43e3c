#!/usr/bin/env bash
# Sharded replay on one machine: N shards, each in its own network namespace
# on a veth link to the host's namespace, started by GNU parallel on one
# instant, merged, and compared with one process replaying the same seed
# (Tests/Scripts/sharded_replay_netns.sh). Prints, per load, whether the
# merged record equals the single replay and each one's send lateness p99.
#
# Usage: Benchmarks/shard/run.sh [KINETRACE]   (default .build/release/kinetrace)
#   LOADS  "SHARDS CONTROLLERS NETWORK SECONDS;..." (default below)
# Needs root, ip, GNU parallel, python3. Writes Benchmarks/shard/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
kinetrace=$(realpath "${1:-.build/release/kinetrace}")
[ -x "$kinetrace" ] || { echo "Benchmarks/shard/run.sh: build first: swift build -c release" >&2; exit 66; }
loads=${LOADS:-"3 9 harsh 4;2 3000 perfect 5;3 3000 perfect 5;3 3000 crowded-event 5"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=Benchmarks/shard/results.md
{
  echo "# Sharded replay on one machine"
  echo
  echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, \`Benchmarks/shard/run.sh\` (LOADS=\"$loads\")."
  echo
  echo "| shards | controllers | network | s | merged = one process | sends | impairment decisions | lateness p99 per shard, µs | one process, µs |"
  echo "|---:|---:|---|---:|---|---:|---:|---|---:|"
} >"$out"
IFS=';' read -ra rows <<<"$loads"
for row in "${rows[@]}"; do
  read -r shards controllers network seconds <<<"$row"
  dir="$work/$shards-$controllers-$network"
  if result=$(START_AHEAD=4 CONTROLLERS=$controllers NETWORK=$network END=$seconds \
      bash Tests/Scripts/sharded_replay_netns.sh "$kinetrace" captures/synthetic-session.jsonl "$dir" "$shards" 17 2>&1); then
    same=yes
  else
    same="NO: $(echo "$result" | tail -1)"
  fi
  echo "$result" >&2
  sends=$(echo "$result" | sed -n 's/.* controllers, \([0-9]*\) sends.*/\1/p')
  decisions=$(echo "$result" | sed -n 's/.* \([0-9]*\) impairment decisions.*/\1/p')
  shard_p99=$(echo "$result" | sed -n 's/^send lateness p99, µs: shards \(.*\); one process .*/\1/p')
  single_p99=$(echo "$result" | sed -n 's/^send lateness p99, µs: .*; one process \(.*\)/\1/p')
  echo "| $shards | $controllers | $network | $seconds | $same | ${sends:--} | ${decisions:--} | ${shard_p99:--} | ${single_p99:--} |" >>"$out"
done
cat "$out"
