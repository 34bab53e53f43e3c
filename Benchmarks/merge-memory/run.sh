#!/usr/bin/env bash
# Peak RSS of `kinetrace merge` against the number of inputs (issue 24, finding 9): a merge's
# memory should follow its reorder window, not how many files it reads.
#
#   Benchmarks/merge-memory/run.sh [INPUTS...]     (default: 10 100 1000)
#
# For each count N: one synthetic session (`kinetrace synth`, 10 Hz controllers) of about
# RECORDS x N records is dealt round robin into N traces, each under the session's header,
# so every input is in time order and a 1 s window holds a few records of each. The traces are
# merged plain, then gzip-compressed (gzip -1), under /usr/bin/time -v; the peak RSS (maximum
# resident set size) and the wall time are printed per run, with RSS per input.
#
# Environment:
#   RECORDS=R        records per input (default 3000: about 1.1 MB of trace each)
#   KINETRACE=PATH   the binary to measure (default: a release build of this checkout)
#   MERGE_WORK=DIR   keep the inputs in DIR (default: a temporary folder, removed)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(10 100 1000)
records=${RECORDS:-3000}
[[ $records =~ ^[0-9]+$ && $records -ge 10 && $records -le 100000 ]] || { echo "run.sh: RECORDS must be 10–100000" >&2; exit 64; }
for n in "${counts[@]}"; do
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 20000 ]] || { echo "run.sh: an input count must be 1–20000" >&2; exit 64; }
done
for tool in python3 gzip /usr/bin/time; do command -v $tool >/dev/null || { echo "run.sh: $tool not found" >&2; exit 69; }; done
if [ -z "${KINETRACE:-}" ]; then
    (cd "$root" && swift build -c release --product kinetrace >&2)
    KINETRACE=$root/.build/release/kinetrace
fi
if [ -n "${MERGE_WORK:-}" ]; then
    work=$MERGE_WORK; mkdir -p "$work"
else
    work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
ulimit -n "$(ulimit -Hn)"

printf '| inputs | records | input | peak RSS (MB) | RSS per input (KB) | wall (s) |\n|---:|---:|---|---:|---:|---:|\n'
for n in "${counts[@]}"; do
    dir=$work/$n
    if [ ! -s "$dir/done" ]; then
        rm -rf "$dir" && mkdir -p "$dir/plain" "$dir/gzip"
        # 10 Hz controllers for 100 s: about 1,060 records (frames, acks, labels) each.
        controllers=$(( (records * n + 1059) / 1060 ))
        "$KINETRACE" synth --out "$dir/session.jsonl" --controllers "$controllers" --duration 100 --seed 7 >/dev/null
        python3 - "$dir/session.jsonl" "$dir/plain" "$n" <<'PY'
import sys
source, folder, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(source, "rb") as f:
    header = f.readline()
    outs = [open(f"{folder}/input-{i:05}.jsonl", "wb") for i in range(n)]
    for out in outs:
        out.write(header)
    for i, line in enumerate(f):
        outs[i % n].write(line)
    for out in outs:
        out.close()
PY
        for f in "$dir"/plain/*.jsonl; do gzip -1c "$f" > "$dir/gzip/$(basename "$f").gz"; done
        rm "$dir/session.jsonl"
        echo ok > "$dir/done"
    fi
    total=$(( $(cat "$dir"/plain/*.jsonl | wc -l) - n ))
    for kind in plain gzip; do
        rm -f "$work/out.jsonl"
        /usr/bin/time -v -o "$work/time.txt" "$KINETRACE" merge "$dir/$kind"/* -w "$work/out.jsonl" >/dev/null 2>"$work/stderr" || {
            echo "run.sh: merge of $n $kind inputs failed:" >&2; cat "$work/stderr" >&2; exit 1; }
        written=$(( $(wc -l < "$work/out.jsonl") - 1 ))
        [ "$written" -eq "$total" ] || { echo "run.sh: merged $written of $total records" >&2; exit 1; }
        kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
        wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
        printf '| %d | %d | %s | %.1f | %d | %s |\n' "$n" "$total" "$kind" "$(awk -v kb="$kb" 'BEGIN { print kb / 1024 }')" $((kb / n)) "$wall"
    done
done
