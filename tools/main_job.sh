#!/usr/bin/env bash
# The main job that ./setup.sh runs: the bundled Mooncake trace through kvsim. Writes under $1.
set -euo pipefail
out=${1:-out}
kvsim=bazel-bin/tools/kvsim
trace=traces/data/mooncake_synthetic.jsonl
mkdir -p "$out"
$kvsim version
$kvsim config > "$out/config.textproto"
echo "resolved default config written to $out/config.textproto"
echo
# Serving replay, default config: Llama-3.1-8B on one H200, prefix reuse, LRU, the fitted cost model.
# One GPU cannot keep up with this trace's arrival rate: the queueing shows in TTFT.
$kvsim replay --trace="$trace" --out="$out/replay" --timeline
echo
# The same model on 8 H200s with a host-DRAM tier and cache-aware routing.
$kvsim replay --config=presets/experiments/llama8b-8xh200-host.textproto --trace="$trace" \
  --out="$out/replay_8xh200"
