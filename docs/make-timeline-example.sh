#!/usr/bin/env bash
# Regenerates docs/plots/timeline-walking.{svg,png} and docs/plots/timeline-weak.{svg,png}:
# `kinetrace plot timeline` of two bundled gesture traces (captures/gestures/), the SVG as the
# command writes it and a PNG rendered from it by librsvg, so the figure can be looked at.
#
#   docs/make-timeline-example.sh        (needs a built kinetrace and rsvg-convert)
set -euo pipefail
cd "$(dirname "$0")/.."
kinetrace=$(realpath "${KINETRACE:-$(swift build --show-bin-path)/kinetrace}")

# Walking while playing, scored at a low threshold: hits, and steps taken for jumps (false detections).
"$kinetrace" plot timeline captures/gestures/walking.jsonl --detector threshold --param threshold=0.3 --to 30 \
  -o docs/plots/timeline-walking.svg
# Weak jumps against the protocol's own host model (τ = 0.5 g): hits and misses.
"$kinetrace" plot timeline captures/gestures/weak.jsonl -o docs/plots/timeline-weak.svg

for name in timeline-walking timeline-weak; do
  rsvg-convert -o "docs/plots/$name.png" "docs/plots/$name.svg"
done
