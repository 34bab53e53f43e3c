#!/usr/bin/env bash
# Stadium load (issue 30 §3): 10 Hz × 10,000 controllers = 100,000 frames/s for
# 3 s, sent by `kinetrace replay` and by tcpreplay in the same run, each
# timestamped by an independent tcpdump capture (ns) and analysed by
# ../analyze.py. The receiver is drain.py: a plain UDP socket that only
# drains the port (no replies, no pacing). RUNS runs (default 10). Every tool
# run is watched by cpusample.py (CPU and run-queue wait per thread, machine-
# wide), and a low-rate run (10 Hz × 1 controller, LOW_DURATION s) compares
# kinetrace's CPU seconds with tcpreplay's. See results.md next to this file.
#
# Usage: sudo TCPREPLAY=/path/to/tcpreplay Benchmarks/replay/stadium/run.sh
# Environment:
#   TCPREPLAY      tcpreplay binary (default: tcpreplay on PATH; the issue asks for 4.5.5)
#   KINETRACE_BIN  kinetrace binary (default .build-bench/release/kinetrace; never built here)
#   RUNS           runs of the stadium load (default 10)
#   CONTROLLERS RATE DURATION   the load (default 10000 10 3)
#   SEED           synth seed (default 1)
#   LOW_DURATION   seconds of the 10 Hz × 1 CPU comparison (default 30; 0 skips it)
#   TIMERS         tcpreplay timers to run (default "gtod nano", as ../run.sh)
#   REPLAY_EXTRA   extra options for kinetrace replay (e.g. "--realtime")
#   TOPOLOGY       lo (default): everything on 127.0.0.1, captured on lo.
#                  veth: the replayer in one network namespace, the drain in another,
#                  joined by a veth pair; captured on the sender's veth end.
#   RPS_CPUS       veth only: rps_cpus mask for the receiver's veth queue (e.g. 2 = CPU 1),
#                  so the receive softirq runs off the sender's core
#   SENDER_CPUS    taskset -c list for the replayer (e.g. 0)
#   RECEIVER_CPUS  taskset -c list for the drain and tcpdump (e.g. 1)
#   IDLE_MAX       before each tool run, wait until the machine is at most this busy
#                  (fraction of all CPUs over 1 s, default 0.15) ...
#   IDLE_WAIT      ... for at most this many seconds (default 120; 0 never waits)
#   SAMPLE_INTERVAL cpusample.py poll interval (default 0.2 s)
#   RESULTS_DIR    where the results go (default results-$TOPOLOGY/ next to this file)
#   KEEP_WORK=1    keep inputs, captures and logs
# Needs root, tcpdump, python3 (and ip for veth). Exits non-zero only on harness errors.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
runs=${RUNS:-10}
controllers=${CONTROLLERS:-10000}
rate=${RATE:-10}
duration=${DURATION:-3}
seed=${SEED:-1}
low_duration=${LOW_DURATION:-30}
read -r -a timers <<<"${TIMERS:-gtod nano}"
topology=${TOPOLOGY:-lo}
idle_max=${IDLE_MAX:-0.15}
idle_wait=${IDLE_WAIT:-120}
interval=${SAMPLE_INTERVAL:-0.2}
results=${RESULTS_DIR:-$here/results-$topology}
bin=${KINETRACE_BIN:-$root/.build-bench/release/kinetrace}
tcpreplay=${TCPREPLAY:-$(command -v tcpreplay || true)}

die() { echo "stadium/run.sh: $*" >&2; exit 1; }
log() { echo "== $(date +%H:%M:%S) $*" >&2; }

[ "$(id -u)" -eq 0 ] || die "needs root (capture, tcpreplay, namespaces)"
command -v tcpdump >/dev/null || die "tcpdump is missing"
command -v python3 >/dev/null || die "python3 is missing"
[ -n "$tcpreplay" ] && [ -x "$tcpreplay" ] || die "no tcpreplay: set TCPREPLAY=/path/to/tcpreplay"
[ -x "$bin" ] || die "no kinetrace binary at $bin (set KINETRACE_BIN)"
case $topology in lo|veth) ;; *) die "TOPOLOGY must be lo or veth";; esac
[ "$topology" = lo ] || command -v ip >/dev/null || die "ip (iproute2) is missing"

work=$(mktemp -d /tmp/kinetrace-stadium.XXXXXX)
chmod 755 "$work"
pids=()
tag="kst$$"
ns_s="" ns_r=""

stop_pid() {  # TERM, then KILL after 3 s; only pids we started
  local pid=$1 kept=() p
  for p in "${pids[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
  pids=("${kept[@]}")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  while [ ${#pids[@]} -gt 0 ]; do stop_pid "${pids[0]}"; done
  if [ -n "$ns_s" ]; then ip netns del "$ns_s" 2>/dev/null || true; ip netns del "$ns_r" 2>/dev/null || true; fi
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "stadium/run.sh: work files kept in $work" >&2; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Topology: where each side runs, the address the drain binds, the capture interface.
sender_pre=() receiver_pre=()
if [ "$topology" = veth ]; then
  ns_s="${tag}s" ns_r="${tag}r"
  ip netns add "$ns_s"; ip netns add "$ns_r"
  ip -n "$ns_s" link set lo up; ip -n "$ns_r" link set lo up
  ip link add "${tag}a" netns "$ns_s" type veth peer name "${tag}b" netns "$ns_r"
  ip -n "$ns_s" addr add 10.78.0.1/24 dev "${tag}a"
  ip -n "$ns_r" addr add 10.78.0.2/24 dev "${tag}b"
  ip -n "$ns_s" link set "${tag}a" up; ip -n "$ns_r" link set "${tag}b" up
  if [ -n "${RPS_CPUS:-}" ]; then
    ip netns exec "$ns_r" sh -c "echo $RPS_CPUS > /sys/class/net/${tag}b/queues/rx-0/rps_cpus" \
      || die "could not set rps_cpus"
  fi
  sender_pre=(ip netns exec "$ns_s") receiver_pre=(ip netns exec "$ns_r")
  capture_pre=(ip netns exec "$ns_s")
  drain_addr=10.78.0.2 iface="${tag}a"
else
  capture_pre=()
  drain_addr=127.0.0.1 iface=lo
fi
[ -n "${SENDER_CPUS:-}" ] && sender_pre+=(taskset -c "$SENDER_CPUS")
[ -n "${RECEIVER_CPUS:-}" ] && { receiver_pre+=(taskset -c "$RECEIVER_CPUS"); capture_pre+=(taskset -c "$RECEIVER_CPUS"); }

# Busy fraction of all CPUs over 1 s, from /proc/stat.
busy_1s() {
  local a b
  a=$(head -1 /proc/stat); sleep 1; b=$(head -1 /proc/stat)
  python3 - "$a" "$b" <<'PY'
import sys
a = [int(x) for x in sys.argv[1].split()[1:]]; b = [int(x) for x in sys.argv[2].split()[1:]]
d = [y - x for x, y in zip(a, b)]; idle = d[3] + d[4]
print(f"{1 - idle / max(1, sum(d)):.3f}")
PY
}
# Wait (at most IDLE_WAIT s) until other work on the machine has quietened; print seconds waited.
wait_idle() {
  local waited=0 busy
  while [ "$waited" -lt "$idle_wait" ]; do
    busy=$(busy_1s)
    python3 -c "import sys; sys.exit(0 if $busy <= $idle_max else 1)" && break
    waited=$((waited + 1))
  done
  echo "$waited"
}

start_drain() {  # log; sets drain_pid, drain_port
  "${receiver_pre[@]}" python3 "$here/drain.py" "$drain_addr" >"$1" 2>&1 &
  drain_pid=$!
  pids+=("$drain_pid")
  drain_port=""
  for _ in $(seq 100); do
    drain_port=$(sed -n 's/^listening on .*:\([0-9]*\) .*/\1/p' "$1" 2>/dev/null || true)
    [ -n "$drain_port" ] && return 0
    sleep 0.05
  done
  die "drain did not start: $(cat "$1")"
}

start_capture() {  # out.pcap log filter; sets cap_pid
  "${capture_pre[@]}" tcpdump -i "$iface" -n --time-stamp-precision=nano -B 65536 -s 128 -w "$1" "$3" >"$2" 2>&1 &
  cap_pid=$!
  pids+=("$cap_pid")
  for _ in $(seq 100); do grep -qs "listening on" "$2" && return 0; sleep 0.05; done
  die "tcpdump did not start: $(cat "$2")"
}
stop_capture() { sleep 2; stop_pid "$cap_pid"; }  # libpcap's last 1 s block

start_sampler() {  # out.json; sets sampler_pid
  python3 "$here/cpusample.py" "$1" "$interval" &
  sampler_pid=$!
  pids+=("$sampler_pid")
  sleep 0.3
}

# Run one tool under /usr/bin/time in the background; sets tool_code, time_pid.
run_tool() {  # name out err cmd...
  local name=$1 out=$2 err=$3; shift 3
  /usr/bin/time -f "%e %U %S" -o "$dir/$name.time" "$@" >"$out" 2>"$err" &
  time_pid=$!
  tool_code=0
  wait "$time_pid" || tool_code=$?
}

tcpreplay_version=$("$tcpreplay" --version 2>&1 | head -1 || true)
replay_opts=(--timing original --port 47110 --timestamps original --format json)
# shellcheck disable=SC2206  # REPLAY_EXTRA is meant to split into words
[ -n "${REPLAY_EXTRA:-}" ] && replay_opts+=(${REPLAY_EXTRA})

meta="$work/meta.txt"
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel=$(uname -r)"
  echo "cpus=$(nproc)"
  echo "cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
  echo "seed=$seed"
  echo "load=$controllers controllers x $rate Hz x $duration s"
  echo "topology=$topology${RPS_CPUS:+ rps_cpus=$RPS_CPUS}${SENDER_CPUS:+ sender_cpus=$SENDER_CPUS}${RECEIVER_CPUS:+ receiver_cpus=$RECEIVER_CPUS}"
  echo "tcpreplay_version=$tcpreplay_version"
  echo "tcpreplay_options=--intf1=$iface --preload-pcap --timer={${timers[*]}}"
  echo "tcpdump_version=$(tcpdump --version 2>&1 | head -1)"
  echo "kinetrace_version=$("$bin" --version 2>&1 | head -1)"
  echo "kinetrace_options=${replay_opts[*]}"
  echo "sink=drain.py (python3 recv loop, 64 MiB SO_RCVBUF) on $drain_addr"
} >"$meta"
manifest="$work/manifest.tsv" runs_tsv="$work/runs.tsv"
: >"$manifest"; : >"$runs_tsv"

# The inputs, as ../run.sh makes them: synth, convert, keep controller→host frames.
make_input() {  # dir controllers rate duration
  mkdir -p "$1"
  "$bin" synth --out "$1/input.jsonl" --controllers "$2" --rate "$3" --duration "$4" --seed "$seed" >/dev/null 2>&1
  "$bin" convert "$1/input.jsonl" "$1/all.pcap" >/dev/null 2>&1
  tcpdump -r "$1/all.pcap" --time-stamp-precision=nano -w "$1/input.pcap" 'udp dst port 47110' 2>/dev/null
  rm -f "$1/input.jsonl" "$1/all.pcap"
}
log "synthesizing $controllers controllers × $rate Hz × $duration s (seed $seed)"
make_input "$work/input" "$controllers" "$rate" "$duration"
input="$work/input/input.pcap"
planned=$(tcpdump -r "$input" 2>/dev/null | wc -l)
log "$planned frames planned; topology $topology; results to $results"

# One tool run, captured and sampled. Appends to the manifest and runs.tsv.
measure() {  # run tool
  local run=$1 tool=$2 waited code filter port cmdline
  waited=$(wait_idle)
  [ "$waited" -lt "$idle_wait" ] || log "$run/$tool: machine still busy after ${idle_wait}s; measuring anyway"
  start_drain "$dir/$tool.drain.log"
  if [ "$tool" = kinetrace ]; then
    port=$drain_port filter="udp and dst host $drain_addr and dst port $drain_port"
  else
    port=47110 filter="udp and dst host 10.0.0.1 and dst port 47110"
  fi
  start_capture "$dir/$tool.cap.pcap" "$dir/$tool.cap.log" "$filter"
  start_sampler "$dir/$tool.cpu.json"
  if [ "$tool" = kinetrace ]; then
    cmdline="kinetrace replay input.pcap --to $drain_addr:PORT ${replay_opts[*]}"
    run_tool "$tool" "$dir/$tool.json" "$dir/$tool.log" \
      "${sender_pre[@]}" "$bin" replay "$input" --to "$drain_addr:$drain_port" "${replay_opts[@]}"
  else
    cmdline="tcpreplay --intf1=$iface --preload-pcap --timer=${tool#tcpreplay-} input.pcap"
    run_tool "$tool" "$dir/$tool.log" "$dir/$tool.err" \
      "${sender_pre[@]}" "$tcpreplay" --intf1="$iface" --preload-pcap --timer="${tool#tcpreplay-}" "$input"
  fi
  code=$tool_code
  stop_pid "$sampler_pid"
  stop_capture
  stop_pid "$drain_pid"
  log "$run/$tool: exit $code, $(cat "$dir/$tool.time" | tail -1) (elapsed user sys), waited ${waited}s for idle"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$controllers" "$rate" "$duration" \
    "$tool" ran "$input" "$dir/$tool.cap.pcap" "$dir/$tool.cap.log" "$port" "$code" \
    "$([ "$tool" = kinetrace ] && echo "$dir/$tool.json")" "$cmdline" \
    "$(tail -n 1 "$dir/$tool.time" | awk 'NF == 3 { printf "%.2f", $2 + $3 }')" >>"$manifest"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$tool" "$code" "$(tail -n 1 "$dir/$tool.time")" \
    "$dir/$tool.cpu.json" "$time_pid" "$cap_pid" "$drain_pid" "$dir/$tool.drain.log" "$waited" >>"$runs_tsv"
}

for r in $(seq "$runs"); do
  run=$(printf 'run%02d' "$r")
  dir="$work/$run"; mkdir -p "$dir"
  measure "$run" kinetrace
  for timer in "${timers[@]}"; do measure "$run" "tcpreplay-$timer"; done
done

low_tsv="$work/low.tsv"; : >"$low_tsv"
if [ "$low_duration" != 0 ]; then
  log "low rate: 1 controller × 10 Hz × $low_duration s (CPU only)"
  make_input "$work/low" 1 10 "$low_duration"
  dir="$work/low"
  for tool in kinetrace "${timers[@]/#/tcpreplay-}"; do
    waited=$(wait_idle)
    start_drain "$dir/$tool.drain.log"
    if [ "$tool" = kinetrace ]; then
      run_tool "$tool" "$dir/$tool.json" "$dir/$tool.log" \
        "${sender_pre[@]}" "$bin" replay "$dir/input.pcap" --to "$drain_addr:$drain_port" "${replay_opts[@]}"
    else
      run_tool "$tool" "$dir/$tool.log" "$dir/$tool.err" \
        "${sender_pre[@]}" "$tcpreplay" --intf1="$iface" --preload-pcap --timer="${tool#tcpreplay-}" "$dir/input.pcap"
    fi
    stop_pid "$drain_pid"
    log "low/$tool: exit $tool_code, $(tail -n 1 "$dir/$tool.time") (elapsed user sys)"
    printf '%s\t%s\t%s\n' "$tool" "$tool_code" "$(tail -n 1 "$dir/$tool.time")" >>"$low_tsv"
  done
fi

mkdir -p "$results"
log "analysing (../analyze.py)"
python3 "$here/../analyze.py" --manifest "$manifest" --meta "$meta" \
  --json "$results/analyze.json" --markdown "$results/analyze.md" >/dev/null || die "analysis failed"
python3 "$here/summarize.py" --analysis "$results/analyze.json" --runs "$runs_tsv" --low "$low_tsv" \
  --meta "$meta" --planned "$planned" --duration "$duration" --low-duration "$low_duration" \
  --json "$results/summary.json" --markdown "$results/summary.md" || die "summary failed"
cp "$meta" "$results/meta.txt"
log "results in $results/summary.md (per run, per thread) and $results/analyze.md"
