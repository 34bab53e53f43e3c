#!/usr/bin/env bash
# What `kinetrace phone` costs beside its anchor, `kinetrace host --transport wss --path /stream`,
# under the same load in one run, turn by turn (phone, host, phone, host…): N MotionLink
# controllers at 10 Hz over wss:// (N = 100 and 500), per run the server's CPU time per sample
# received, its peak RSS, the controllers' ack round-trip p99, and the c2h records in its trace,
# which must equal what the simulator sent.
# Usage: Benchmarks/phone/run.sh
#   KINETRACE_BIN    use this kinetrace binary instead of building one (release, in .build-bench)
#   REPEATS          turns of each pair (default 3); SECONDS_PER_RUN per run (default 10)
# Prints a Markdown table, also written to Benchmarks/phone/results/phone.md.
# Exits non-zero when a trace's c2h records and the simulator's sent count disagree.
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${REPEATS:-3}
seconds=${SECONDS_PER_RUN:-10}
if [ -n "${KINETRACE_BIN:-}" ]; then
  bin=$KINETRACE_BIN
else
  swift build -c release --product kinetrace --scratch-path .build-bench >/dev/null
  bin=$(swift build -c release --scratch-path .build-bench --show-bin-path)/kinetrace
fi
work=$(mktemp -d)
# A private data home: both servers make and keep their self-signed certificate here, not in ~.
export XDG_DATA_HOME=$work/xdg
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill -INT "$server_pid" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$server_pid" 2>/dev/null || true   # a server that ignores SIGINT must not outlive us
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # Ctrl-C: leave through the EXIT trap
tick=$(getconf CLK_TCK)

server_cmd() {   # kind → the server's command line in the array `cmd`
  case $1 in
    phone) cmd=("$bin" phone --bind 127.0.0.1 --port 0 --no-qr --format json --max-phones 1024 --trace "$work/phone.jsonl") ;;
    host)  cmd=("$bin" host --protocol motionlink-v1 --transport wss --path /stream --port 0 --format json --max-connections 4096 --trace "$work/host.jsonl") ;;
  esac
}
start_server() {   # kind → server_pid and port, once it says it is listening
  server_cmd "$1"
  rm -f "$work/$1.jsonl"
  "${cmd[@]}" > "$work/server.out" 2> "$work/server.err" &
  server_pid=$!
  port=
  for _ in $(seq 200); do
    port=$(grep -o 'listening on .*' "$work/server.out" | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && return
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "$1 did not start:" >&2; cat "$work/server.err" >&2; exit 1
}
stop_server() {   # phone exits 1 when no *phone* streamed (simulate opens no side channel): not a failure
  kill -INT "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
}

# Warm-up: the first wss start makes the certificate (key generation), which no timed run should pay for.
start_server host; stop_server

# One run: kind N → a JSON line of the figures.
run_one() {
  local kind=$1 n=$2
  start_server "$kind"
  "$bin" simulate --protocol motionlink-v1 --to "wss://127.0.0.1:$port/stream" --insecure --controllers "$n" \
    --rate 10 --duration "$seconds" --format json > "$work/sim.json"
  # CPU and peak RSS just before SIGINT: the load's cost, not the shutdown's.
  local stat hwm
  kill -0 "$server_pid" 2>/dev/null || { echo "$kind exited under load:" >&2; cat "$work/server.err" >&2; exit 1; }
  stat=$(sed 's/^.*) //' "/proc/$server_pid/stat")   # past "pid (comm) ": field 3 first
  hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status")
  stop_server
  local records
  records=$(grep -c '"dir":"c2h"' "$work/$kind.jsonl" || true)
  python3 - "$work/sim.json" "$work/server.out" "$kind" "$n" "$stat" "$hwm" "$tick" "$records" <<'PY'
import json, sys
sim = json.load(open(sys.argv[1]))
out = [l for l in open(sys.argv[2]).read().splitlines() if l.startswith("{")]
stats = json.loads(out[-1])
kind, n, stat, hwm, tick, records = sys.argv[3], int(sys.argv[4]), sys.argv[5].split(), int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
cpu_s = (int(stat[11]) + int(stat[12])) / tick   # utime + stime (fields 14, 15)
samples = stats.get("valid_frames", stats.get("valid"))   # host names it valid_frames, phone valid
sent = sim["frames_sent"]
if records != sent:
    print(f"MISMATCH: {kind} N={n}: trace holds {records} c2h records, simulator sent {sent}", file=sys.stderr)
rtt = sim.get("round_trip_ms", {})
print(json.dumps({"kind": kind, "n": n, "sent": sent, "records": records, "samples": samples,
                  "cpu_us_per_sample": cpu_s * 1e6 / samples if samples else None, "rss_mib": hwm / 1024,
                  "rtt_p99": rtt.get("p99"), "acks": rtt.get("count")}))
PY
}

: > "$work/runs.jsonl"
start=$(date +%s)
for turn in $(seq "$repeats"); do
  for n in 100 500; do
    for kind in phone host; do run_one "$kind" "$n" >> "$work/runs.jsonl"; done
  done
  echo "turn $turn of $repeats done" >&2
done

mkdir -p Benchmarks/phone/results
show() { local s; s=$(printf '%q ' "$@"); echo "${s% }"; }   # a command line as it would be typed
{
  echo "# kinetrace phone vs host --transport wss"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $repeats turns of $seconds s, $(( $(date +%s) - start )) s of runs."
  echo
  echo '```'
  for kind in phone host; do server_cmd "$kind"; show "${cmd[@]}"; done
  show "$bin" simulate --protocol motionlink-v1 --to "wss://127.0.0.1:PORT/stream" --insecure --controllers N \
    --rate 10 --duration "$seconds" --format json
  echo '```'
  echo
} > "$work/header.md"
status=0
python3 - "$work/runs.jsonl" <<'PY' > "$work/table.md" || status=$?
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(kind, n, key):
    xs = [r[key] for r in runs if r["kind"] == kind and r["n"] == n and r[key] is not None]
    return statistics.median(xs) if xs else None
fmt = lambda v, d=2: "–" if v is None else f"{v:.{d}f}"
ratio = lambda a, b: f"{a / b:.2f}" if a is not None and b else "–"
print("| N | sent/run | CPU µs/sample phone | host | phone/host | peak RSS MiB phone | host | phone/host | ack RTT p99 ms phone | host | acks/run |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n in sorted({r["n"] for r in runs}):
    c = {k: med(k, n, "cpu_us_per_sample") for k in ("phone", "host")}
    m = {k: med(k, n, "rss_mib") for k in ("phone", "host")}
    p = {k: med(k, n, "rtt_p99") for k in ("phone", "host")}
    print(f"| {n} | {med('phone', n, 'sent'):.0f} | {fmt(c['phone'])} | {fmt(c['host'])} | {ratio(c['phone'], c['host'])} "
          f"| {fmt(m['phone'], 1)} | {fmt(m['host'], 1)} | {ratio(m['phone'], m['host'])} "
          f"| {fmt(p['phone'], 3)} | {fmt(p['host'], 3)} | {fmt(med('host', n, 'acks'), 0)} |")
print("\nMedians over the turns. The ratio phone/host, not the absolute figure, is the claim; the anchor "
      "(host --transport wss) is measured in the same run, alternating with phone. CPU is user+sys up to SIGINT "
      "over the samples the server counted valid; the ack RTT p99 is over the acks only (the host answers decisions).")
bad = [r for r in runs if r["records"] != r["sent"]]
for r in bad:
    print(f"\n**MISMATCH**: {r['kind']} N={r['n']}: trace holds {r['records']} c2h records, simulator sent {r['sent']}.")
sys.exit(1 if bad else 0)
PY
cat "$work/header.md" "$work/table.md" | tee Benchmarks/phone/results/phone.md
[ "$status" -eq 0 ] || { echo "c2h records and sent counts disagree (see above)" >&2; exit 1; }
