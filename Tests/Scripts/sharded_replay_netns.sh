#!/usr/bin/env bash
# Sharded replay across "machines" on one box: one network namespace per shard,
# each joined to a host namespace by a veth pair, GNU parallel starting the
# shards on one agreed instant, their records merged and compared with a
# single-process replay of the same seed (compare_shard_records.py).
#
# Usage: sharded_replay_netns.sh KINETRACE INPUT WORKDIR [SHARDS] [SEED]
# CONTROLLERS (9), NETWORK (harsh) and END (4 s of the input) set the replay's size;
# START_AHEAD (8 s) how far ahead the shards' common start lies.
# Needs root, ip (iproute2), GNU parallel and python3. Removes every namespace
# and process it made, also when it fails or is interrupted.
set -euo pipefail
kinetrace="$1" input="$2" work="$3" shards="${4:-3}" seed="${5:-17}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work"
# When each phase ended, seconds since the start: the test prints them if it fails or runs long.
phase() { echo "$SECONDS s: $*" >>"$work/phases.log"; }

# Names unique to this run (a crashed run's leftovers never collide), at most 15 bytes for interfaces.
tag="kt$$"
hostns="${tag}h"
host_pid=""
cleanup() {
  [ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null && wait "$host_pid" 2>/dev/null || true
  for k in $(seq 1 "$shards"); do ip netns del "${tag}s$k" 2>/dev/null || true; done
  ip netns del "$hostns" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

phase "start"
ip netns add "$hostns"
ip -n "$hostns" link set lo up
for k in $(seq 1 "$shards"); do
  ns="${tag}s$k"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # Shard k's link: 10.77.k.2 in its namespace, 10.77.k.1 on the host's side.
  ip link add "${tag}a$k" netns "$ns" type veth peer name "${tag}b$k" netns "$hostns"
  ip -n "$ns" addr add "10.77.$k.2/24" dev "${tag}a$k"
  ip -n "$hostns" addr add "10.77.$k.1/24" dev "${tag}b$k"
  ip -n "$ns" link set "${tag}a$k" up
  ip -n "$hostns" link set "${tag}b$k" up
done

phase "namespaces ready"
# The reference host in its namespace, on every address, any free port.
ip netns exec "$hostns" "$kinetrace" host --bind 0.0.0.0 --port 0 >"$work/host.out" 2>"$work/host.err" &
host_pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/host.out" 2>/dev/null && break; sleep 0.05; done
port="$(sed -n 's/.*listening on .*:\([0-9]*\).*/\1/p' "$work/host.out" | head -1)"
[ -n "$port" ] || { echo "sharded_replay_netns: the host did not start: $(cat "$work/host.err")" >&2; exit 1; }

phase "host listening on $port"
common=(--controllers "${CONTROLLERS:-9}" --network "${NETWORK:-harsh}" --end "${END:-4}" --seed "$seed" --settle-ms 300)
# Every shard starts on one instant, START_AHEAD (8) s from now, in RFC 3339 with nanoseconds:
# room for GNU parallel, ip netns exec and the planning on a loaded machine (a shard that is not
# ready by then refuses to start, exit 64).
start="$(date -u -d "@$(( $(date +%s) + ${START_AHEAD:-8} ))" +%Y-%m-%dT%H:%M:%S.%NZ)"
echo "$start" >"$work/start-at"
# GNU parallel sets PARALLEL_SEQ (1..N) for each job: --shard auto/N reads it.
parallel --jobs "$shards" --halt now,fail=1 \
  ip netns exec "${tag}s{}" "$kinetrace" replay "$input" --to "10.77.{}.1:$port" "${common[@]}" \
  --shard "auto/$shards" --start-at "$start" --record "$work/shard{}.jsonl" --format json '>' "$work/shard{}.json" \
  ::: $(seq 1 "$shards")

phase "shards done"
"$kinetrace" merge "$work"/shard*.jsonl -w "$work/merged.jsonl" >"$work/merge.out"

phase "merged"
# The same replay in one process, from shard 1's namespace.
ip netns exec "${tag}s1" "$kinetrace" replay "$input" --to "10.77.1.1:$port" "${common[@]}" \
  --record "$work/single.jsonl" --format json >"$work/single.json"

phase "single replay done"
python3 "$here/compare_shard_records.py" "$work/merged.jsonl" "$work/single.jsonl" "$start" "$work"/shard*.json
