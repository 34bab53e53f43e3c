#!/usr/bin/env bash
# `kinetrace plot timeline` on a large trace, against an anchor measured in the same run:
#   inspect   the same trace reader feeding a constant-memory summary (the floor for one pass;
#             plot timeline reads the trace twice: once for the controllers, samples and
#             detections, once for the marks)
# and the size of what it draws: the SVG's bytes, the points the command says it drew and the
# label spans in the SVG (one element per label), at FRAMES and at FRAMES/10, and for one
# controller that sends all FRAMES itself (the most one panel can be given), to show whether
# the figure grows with the trace.
#
#   Benchmarks/plot/run.sh [FRAMES] [RUNS]     (defaults: 1000000 frames, 3 runs)
#
# Each command runs RUNS times, the commands taking turns round by round (so a burst of load
# from elsewhere falls on all of them); the best and the median wall time are reported, with
# the peak RSS over the runs. The controllers are the trace's first ones in order of appearance
# (the first is the one plot timeline draws by default on a trace of more than 3 controllers).
#
# Environment: KINETRACE=PATH (default .build/release/kinetrace), OUT=DIR (default
# Benchmarks/plot/results). Writes OUT/latest.txt: the per-run figures, each command's printed
# summary, and the Markdown table that is also printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
frames=${1:-1000000}
runs=${2:-3}
[[ $frames =~ ^[0-9]+$ && $frames -ge 10000 ]] || { echo "run.sh: FRAMES must be a number ≥ 10000" >&2; exit 64; }
[[ $runs =~ ^[0-9]+$ && $runs -ge 1 ]] || { echo "run.sh: RUNS must be a number ≥ 1" >&2; exit 64; }
kinetrace=${KINETRACE:-.build/release/kinetrace}
[[ -x $kinetrace ]] || { echo "run.sh: no kinetrace at $kinetrace (build it: swift build -c release)" >&2; exit 66; }
[[ -x /usr/bin/time ]] || { echo "run.sh: needs /usr/bin/time (GNU time)" >&2; exit 69; }
out=${OUT:-Benchmarks/plot/results}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
raw="$work/raw.txt"
: > "$raw"
log() { echo "$*" | tee -a "$raw" >&2; }

# 21 controllers, as in the paper's public deployment, at 10 Hz (as Benchmarks/latency/run.sh).
controllers=21
synthesize() {  # FRAMES FILE [CONTROLLERS]
  local n=${3:-$controllers}
  local duration=$(( ($1 + n * 10 - 1) / (n * 10) ))
  "$kinetrace" synth --out "$2" --controllers "$n" --duration "$duration" --script random --seed 6 >/dev/null
  [[ -s $2 ]] || { echo "run.sh: synth wrote nothing to $2" >&2; exit 1; }
}
trace="$work/session.jsonl"
synthesize "$frames" "$trace"
records=$(( $(wc -l < "$trace") - 1 ))
bytes=$(stat -c %s "$trace")

# The first three controllers to send, in the order the trace has them.
mapfile -t chosen < <(head -n 20000 "$trace" | grep -o '"dir":"c2h","src":"[^"]*"' | sed 's/.*"src":"//; s/"$//' | awk '!seen[$0]++' | head -n 3)
(( ${#chosen[@]} == 3 )) || { echo "run.sh: found ${#chosen[@]} controllers in the trace's first records, wanted 3" >&2; exit 1; }

# One run of a named command: appends "seconds kb" to $work/NAME.times, keeps its stdout in $work/NAME.out.
run_once() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/$name.out" 2>"$work/stderr" \
    || { echo "run.sh: $name failed:" >&2; cat "$work/stderr" >&2; exit 1; }
  [[ -s $work/time ]] || { echo "run.sh: no timing for $name" >&2; exit 1; }
  cat "$work/time" >> "$work/$name.times"
  log "  $name: $(cat "$work/time") (s, KB)"
}
# Prints "best median peak_rss_mb" of NAME's runs.
summarize() {
  local rss
  rss=$(awk 'BEGIN { m = 0 } { if ($2 > m) m = $2 } END { print m }' "$work/$1.times")
  cut -d' ' -f1 "$work/$1.times" | sort -g | awk -v rss="$rss" '{ t[NR] = $1 } END { if (NR == 0) exit 1; printf "%s %s %.0f\n", t[1], t[int((NR + 1) / 2)], rss / 1024 }'
}
# The SVG NAME wrote must be there, non-empty and well-formed XML; its summary line must name the points.
check_svg() {
  local name=$1 svg=$2
  [[ -s $svg ]] || { echo "run.sh: $name wrote no SVG ($svg)" >&2; exit 1; }
  python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$svg" \
    || { echo "run.sh: $name wrote an SVG that is not well-formed XML" >&2; exit 1; }
  grep -Eq 'drawn as [0-9]+ points' "$work/$name.out" || { echo "run.sh: $name printed no points drawn:" >&2; cat "$work/$name.out" >&2; exit 1; }
}

log "trace: $records records ($frames+ frames requested, $controllers controllers), $((bytes / 1048576)) MiB; $runs runs each"
log "kinetrace: $kinetrace; controllers drawn: ${chosen[*]}"
one=(plot timeline "$trace" --controller "${chosen[0]}" -o "$work/one.svg")
three=(plot timeline "$trace" --controller "${chosen[0]}" --controller "${chosen[1]}" --controller "${chosen[2]}" -o "$work/three.svg")
for round in $(seq "$runs"); do
  log "round $round"
  run_once inspect "$kinetrace" inspect "$trace"
  grep -q . "$work/inspect.out" || { echo "run.sh: inspect printed nothing" >&2; exit 1; }
  rm -f "$work/one.svg" "$work/three.svg"
  run_once one "$kinetrace" "${one[@]}"
  check_svg one "$work/one.svg"
  run_once three "$kinetrace" "${three[@]}"
  check_svg three "$work/three.svg"
done
inspect=$(summarize inspect)
plot1=$(summarize one)
plot3=$(summarize three)
svg1=$(stat -c %s "$work/one.svg")
svg3=$(stat -c %s "$work/three.svg")
points() { grep -Eo 'drawn as [0-9]+ points' "$work/$1.out" | grep -Eo '[0-9]+'; }
spans() { grep -o 'class="label-span"' "$1" | wc -l; }
spans1=$(spans "$work/one.svg")
spans3=$(spans "$work/three.svg")
samples() { grep -Eo '[0-9]+ samples' "$work/$1.out" | grep -Eo '[0-9]+'; }
log "one controller:    $(cat "$work/one.out")"
log "three controllers: $(cat "$work/three.out")"

rm -f "$trace"

# The same two figures from a trace a tenth the size.
small="$work/small.jsonl"
synthesize $(( frames / 10 )) "$small"
small_records=$(( $(wc -l < "$small") - 1 ))
rm -f "$work/one.svg" "$work/three.svg"
"$kinetrace" plot timeline "$small" --controller "${chosen[0]}" -o "$work/one.svg" > "$work/small-one.out"
check_svg small-one "$work/one.svg"
"$kinetrace" plot timeline "$small" --controller "${chosen[0]}" --controller "${chosen[1]}" --controller "${chosen[2]}" -o "$work/three.svg" > "$work/small-three.out"
check_svg small-three "$work/three.svg"
small_svg1=$(stat -c %s "$work/one.svg")
small_svg3=$(stat -c %s "$work/three.svg")
log "at a tenth ($small_records records), one controller:    $(cat "$work/small-one.out"), SVG $small_svg1 bytes, $(spans "$work/one.svg") label spans"
log "at a tenth ($small_records records), three controllers: $(cat "$work/small-three.out"), SVG $small_svg3 bytes, $(spans "$work/three.svg") label spans"
rm -f "$small"

# All FRAMES from one controller: the most samples, labels and marks one panel can get.
single="$work/single.jsonl"
synthesize "$frames" "$single" 1
single_records=$(( $(wc -l < "$single") - 1 ))
single_controller=$(head -n 100 "$single" | grep -o '"dir":"c2h","src":"[^"]*"' | head -n 1 | sed 's/.*"src":"//; s/"$//')
[[ -n $single_controller ]] || { echo "run.sh: no controller in the one-controller trace" >&2; exit 1; }
rm -f "$work/one.svg"
/usr/bin/time -f "%e %M" -o "$work/time" "$kinetrace" plot timeline "$single" --controller "$single_controller" -o "$work/one.svg" > "$work/single.out"
check_svg single "$work/one.svg"
single_svg=$(stat -c %s "$work/one.svg")
single_spans=$(spans "$work/one.svg")
log "one controller sending all frames ($single_records records): $(cat "$work/single.out"), SVG $single_svg bytes, $single_spans label spans; $(cat "$work/time") (s, KB)"

report() {
  local name=$1 row=$2 extra=$3
  read -r best median rss <<< "$row"
  read -r base_best base_median _ <<< "$inspect"
  awk -v n="$name" -v b="$best" -v m="$median" -v r="$rss" -v bb="$base_best" -v bm="$base_median" -v recs="$records" -v x="$extra" \
    'BEGIN { printf "| %s | %.2f s | %.2f s | %.2f M records/s | %d MB | %.2f× / %.2f× | %s |\n", n, b, m, recs / b / 1e6, r, b / bb, m / bm, x }'
}

{
  echo
  echo "# kinetrace plot timeline: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) vCPU, $records records, $((bytes / 1048576)) MiB"
  echo
  echo "| Command | best | median | throughput (best) | peak RSS | vs inspect (best / median) | figure |"
  echo "|---|---|---|---|---|---|---|"
  report "kinetrace inspect (anchor: same reader, one pass)" "$inspect" ""
  report "kinetrace plot timeline, 1 controller" "$plot1" "SVG $svg1 bytes, $spans1 label spans; $(samples one) samples drawn as $(points one) points (at $small_records records: $small_svg1 bytes, $(points small-one) points)"
  report "kinetrace plot timeline, 3 controllers" "$plot3" "SVG $svg3 bytes, $spans3 label spans; $(samples three) samples drawn as $(points three) points (at $small_records records: $small_svg3 bytes, $(points small-three) points)"
  echo
  echo "One controller sending all $frames frames ($single_records records), one run: SVG $single_svg bytes, $single_spans label spans; $(samples single) samples drawn as $(points single) points."
} | tee -a "$raw"
cp "$raw" "$out/latest.txt"
