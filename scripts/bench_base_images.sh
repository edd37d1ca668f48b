#!/usr/bin/env bash
# How long dev_setup spends on the two base images: built one after the other (as dev_setup did), then
# both at once (as it does now, while pip installs the Python side), each from scratch (--force), in one
# run on this machine. Prints both wall times and their ratio. Takes ~15 minutes on 2 cores; the images
# it leaves are the ones dev_setup would build.
#
#   bash scripts/bench_base_images.sh
set -euo pipefail
cd "$(dirname "$0")/.."

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

build() {  # SUITE: one forced build, its output kept for a failure
  bash scripts/build_base_image.sh --suite "$1" --force >"$logs/$1.log" 2>&1 \
    || { cat "$logs/$1.log" >&2; echo "building $1 failed" >&2; exit 1; }
}

start=$EPOCHREALTIME
build bookworm
build trixie
sequential_start=$start sequential_end=$EPOCHREALTIME

start=$EPOCHREALTIME
build bookworm & first=$!
build trixie & second=$!
wait "$first"
wait "$second"
end=$EPOCHREALTIME

python3 - "$sequential_start" "$sequential_end" "$start" "$end" <<'PY'
import sys
a, b, c, d = map(float, sys.argv[1:])
print(f"one after the other: {b - a:.0f} s\nboth at once:        {d - c:.0f} s\nratio:               {(d - c) / (b - a):.2f}")
PY
