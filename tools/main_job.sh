#!/usr/bin/env bash
# The main job that ./setup.sh runs: the bundled Mooncake trace through kvsim. Writes under $1.
set -euo pipefail
out=${1:-out}
kvsim=bazel-bin/tools/kvsim
mkdir -p "$out"
$kvsim version
$kvsim config > "$out/config.textproto"
echo "resolved config written to $out/config.textproto"
# Serving replay: Llama-3.1-8B on one H200 (the default config), prefix reuse, LRU, roofline costs.
$kvsim replay --trace=traces/data/mooncake_synthetic.jsonl --out="$out/replay" --replay_timeline
