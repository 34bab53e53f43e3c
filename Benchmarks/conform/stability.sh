#!/usr/bin/env bash
# The reference host must pass every conformance case in N consecutive runs
# (issue 5). Runs `kinetrace conform` N times (default 20), keeps each JSON
# report in $OUT, and prints per-case verdict counts and durations.
#
#   Benchmarks/conform/stability.sh [RUNS] [extra conform arguments...]
#   KINETRACE=path/to/kinetrace OUT=dir Benchmarks/conform/stability.sh 20 --exec "kinetrace host --stdio"
#
# Exit status: 0 when every run exits 0, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-20}"
shift || true
if [[ -z "${KINETRACE:-}" ]]; then
  swift build -c release --product kinetrace >/dev/null
  KINETRACE="$(swift build -c release --show-bin-path)/kinetrace"
fi
out="${OUT:-$(mktemp -d /tmp/kinetrace-stability.XXXXXX)}"
mkdir -p "$out"
failed=0
for i in $(seq 1 "$runs"); do
  status=0
  "$KINETRACE" conform --format json --out "$out/run-$i.json" "$@" || status=$?
  echo "run $i: exit $status"
  [[ $status -eq 0 ]] || failed=$((failed + 1))
done
python3 - "$out" "$runs" <<'PY'
import glob, json, sys, statistics
out, runs = sys.argv[1], int(sys.argv[2])
cases = {}
for path in sorted(glob.glob(out + "/run-*.json")):
    for c in json.load(open(path))["cases"]:
        entry = cases.setdefault(c["id"], {"verdicts": {}, "ms": [], "details": []})
        entry["verdicts"][c["verdict"]] = entry["verdicts"].get(c["verdict"], 0) + 1
        entry["ms"].append(c["duration_ms"])
        if c["verdict"] != "PASS":
            entry["details"].append(f'{path.rsplit("/", 1)[1]}: {c["detail"]}')
print(f"{'case':<26} {'verdicts':<28} {'median ms':>10} {'max ms':>10}")
for cid, e in cases.items():
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(e["verdicts"].items()))
    print(f"{cid:<26} {verdicts:<28} {statistics.median(e['ms']):>10.1f} {max(e['ms']):>10.1f}")
    for d in e["details"]:
        print(f"    {d}")
PY
echo "$((runs - failed)) of $runs runs passed; reports in $out"
[[ $failed -eq 0 ]]
