#!/usr/bin/env bash
# `kinetrace latency` of two builds on the same trace in the same run: a direct before/after.
#   inspect   each build's trace reader feeding a constant-memory summary (the anchor, as in
#             run.sh); both are run, since the reader may differ between the builds too
#   OLD       `latency --format json` of the build before the change
#   NEW       `latency --format json` of the build after it
# The four take turns round by round, RUNS rounds, so load from elsewhere falls on all of them
# (the old build first in odd rounds, the new one first in even rounds).
# The best and the median wall time are reported, with peak RSS, each against NEW's inspect,
# latency against its own build's inspect, and NEW against OLD. The two latency reports are
# compared too (same bytes, or the JSON members that differ).
#
#   Benchmarks/latency/compare.sh OLD_KINETRACE NEW_KINETRACE [FRAMES] [RUNS]   (defaults 1000000, 3)
#
# The trace is written by NEW's `synth` (21 controllers at 10 Hz, seed 6, as run.sh). Writes
# OUT/compare.txt (OUT default Benchmarks/latency/results): per-run figures and the table.
set -euo pipefail
cd "$(dirname "$0")/../.."
(( $# >= 2 )) || { echo "usage: $0 OLD_KINETRACE NEW_KINETRACE [FRAMES] [RUNS]" >&2; exit 64; }
old=$1 new=$2
frames=${3:-1000000}
runs=${4:-3}
[[ $frames =~ ^[0-9]+$ && $frames -ge 1000 ]] || { echo "compare.sh: FRAMES must be a number ≥ 1000" >&2; exit 64; }
[[ $runs =~ ^[0-9]+$ && $runs -ge 1 ]] || { echo "compare.sh: RUNS must be a number ≥ 1" >&2; exit 64; }
for k in "$old" "$new"; do [[ -x $k ]] || { echo "compare.sh: no executable at $k" >&2; exit 66; }; done
[[ -x /usr/bin/time ]] || { echo "compare.sh: needs /usr/bin/time (GNU time)" >&2; exit 69; }
out=${OUT:-Benchmarks/latency/results}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
raw="$work/raw.txt"
: > "$raw"
log() { echo "$*" | tee -a "$raw" >&2; }

controllers=21
duration=$(( (frames + controllers * 10 - 1) / (controllers * 10) ))
trace="$work/session.jsonl"
"$new" synth --out "$trace" --controllers "$controllers" --duration "$duration" --script random --seed 6 >/dev/null
[[ -s $trace ]] || { echo "compare.sh: synth wrote nothing" >&2; exit 1; }
records=$(( $(wc -l < "$trace") - 1 ))
bytes=$(stat -c %s "$trace")

# One run: appends "seconds kb" to $work/NAME.times; its stdout goes to $work/NAME.out and must not be empty.
run_once() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/$name.out" 2>"$work/stderr" \
    || { echo "compare.sh: $name failed:" >&2; cat "$work/stderr" >&2; exit 1; }
  [[ -s $work/time && -s $work/$name.out ]] || { echo "compare.sh: $name produced nothing" >&2; exit 1; }
  cat "$work/time" >> "$work/$name.times"
  log "  $name: $(cat "$work/time") (s, KB)"
}
summarize() {
  local rss
  rss=$(awk 'BEGIN { m = 0 } { if ($2 > m) m = $2 } END { print m }' "$work/$1.times")
  cut -d' ' -f1 "$work/$1.times" | sort -g | awk -v rss="$rss" '{ t[NR] = $1 } END { if (NR == 0) exit 1; printf "%s %s %.0f\n", t[1], t[int((NR + 1) / 2)], rss / 1024 }'
}

log "trace: $records records ($frames+ frames requested, $controllers controllers), $((bytes / 1048576)) MiB; $runs rounds"
log "old: $old ($(stat -c '%y' "$old" | cut -c1-19), $(stat -c %s "$old") bytes)"
log "new: $new ($(stat -c '%y' "$new" | cut -c1-19), $(stat -c %s "$new") bytes)"
for round in $(seq "$runs"); do
  log "round $round"
  # Old first in odd rounds, new first in even ones: neither always follows the other.
  if (( round % 2 )); then
    run_once inspect-old "$old" inspect "$trace"
    run_once inspect "$new" inspect "$trace"
    run_once old "$old" latency "$trace" --format json
    run_once new "$new" latency "$trace" --format json
  else
    run_once inspect "$new" inspect "$trace"
    run_once inspect-old "$old" inspect "$trace"
    run_once new "$new" latency "$trace" --format json
    run_once old "$old" latency "$trace" --format json
  fi
done
if cmp -s "$work/old.out" "$work/new.out"; then
  log "reports: identical ($(stat -c %s "$work/new.out") bytes)"
else
  log "reports: differ; old $(stat -c %s "$work/old.out") bytes, new $(stat -c %s "$work/new.out") bytes"
  python3 - "$work/old.out" "$work/new.out" <<'EOF' | tee -a "$raw" >&2
import json, sys
def walk(a, b, path, out):
    if type(a) != type(b):
        out.append(f"{path}: {type(a).__name__} -> {type(b).__name__}"); return
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a: out.append(f"{path}.{k}: only new")
            elif k not in b: out.append(f"{path}.{k}: only old")
            else: walk(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list):
        if len(a) != len(b): out.append(f"{path}: {len(a)} items -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)): walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")
old, new = (json.load(open(p)) for p in sys.argv[1:3])
diffs = []
walk(old, new, "", diffs)
print(f"  {len(diffs)} JSON differences; the first 20:")
for d in diffs[:20]: print("   ", d[:200])
EOF
fi

inspect=$(summarize inspect)
# NAME ROW OWN_INSPECT_ROW OLD_ROW: a table row; an empty OWN_INSPECT_ROW or OLD_ROW leaves its column empty.
report() {
  local name=$1 row=$2 own=$3 base=$4
  read -r best median rss <<< "$row"
  read -r ib im _ <<< "$inspect"
  local ob=0 om=0 bb=0 bm=0
  [[ -n $own ]] && read -r ob om _ <<< "$own"
  [[ -n $base ]] && read -r bb bm _ <<< "$base"
  awk -v n="$name" -v b="$best" -v m="$median" -v r="$rss" -v ib="$ib" -v im="$im" -v ob="$ob" -v om="$om" -v bb="$bb" -v bm="$bm" \
    'BEGIN { printf "| %s | %.2f s | %.2f s | %d MB | %.2f× / %.2f× | ", n, b, m, r, b / ib, m / im
             if (ob > 0) printf "%.2f× / %.2f× | ", b / ob, m / om; else printf " | "
             if (bb > 0) printf "%.2f× / %.2f× |\n", b / bb, m / bm; else print " |" }'
}
{
  echo
  echo "# kinetrace latency, before/after: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) vCPU, $records records, $((bytes / 1048576)) MiB"
  echo
  echo "| Command | best | median | peak RSS | vs new inspect (best / median) | vs own build's inspect | vs old (best / median) |"
  echo "|---|---|---|---|---|---|---|"
  report "new: kinetrace inspect (the anchor)" "$inspect" "" "$(summarize inspect-old)"
  report "old: kinetrace inspect" "$(summarize inspect-old)" "" ""
  report "old: kinetrace latency --format json" "$(summarize old)" "$(summarize inspect-old)" ""
  report "new: kinetrace latency --format json" "$(summarize new)" "$inspect" "$(summarize old)"
} | tee -a "$raw"
cp "$raw" "$out/compare.txt"
