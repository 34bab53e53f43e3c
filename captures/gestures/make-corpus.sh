#!/usr/bin/env bash
# Regenerates captures/gestures/*.jsonl: one synthetic phone-as-controller
# session per persona (synthetic user) of `kinetrace synth --persona`, 60 s of device
# motion at 50 Hz, frames at 10 Hz, fixed seeds. Deterministic: the same
# kinetrace writes byte-identical files (GestureSessionTests checks them).
# KINETRACE=path uses that binary instead of building one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -z "${KINETRACE:-}" ]]; then
    (cd "$here/../.." && swift build --product kinetrace >/dev/null)
    KINETRACE=$(cd "$here/../.." && swift build --show-bin-path)/kinetrace
fi

# persona, controllers, seed (keep in step with GestureSessionTests.corpus)
while read -r persona controllers seed; do
    "$KINETRACE" synth --persona "$persona" --controllers "$controllers" --duration 60 --motion-hz 50 \
        --seed "$seed" --out "$here/$persona.jsonl" >/dev/null
done <<'PERSONAS'
steady 2 101
weak 1 102
strong 1 103
noisy 1 104
tremor 1 105
walking 2 106
ducker 1 107
steering 1 308
PERSONAS

cd "$here"
wc -c -- *.jsonl
