#!/bin/bash
# Re-fits the fitted cost model's parameters of the device presets from the bundled measurements and
# rewrites the `fitted { }` block at the end of each preset (presets/devices/*.textproto). Deterministic:
# the same measurements give byte-identical presets. Run from the repository root after
# `bazel build //tools:kvsim`; rebuild afterwards (the presets are compiled into the binary).
set -euo pipefail
K=${KVSIM:-bazel-bin/tools/kvsim}
V=cost_models/data/vidur
fit() {  # preset, measurement paths...
  local preset=$1
  shift
  local file=presets/devices/$preset.textproto tmp
  tmp=$(mktemp)
  "$K" costmodel fit "$@" --costmodel_device="$preset" --out="$tmp.fit"
  # Keep everything above the generated block, then append the new one.
  sed '/^# Fitted cost model parameters/,$d' "$file" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$tmp"
  {
    cat "$tmp"
    echo
    echo "# Fitted cost model parameters (cost_model.kind FITTED; formulas in proto/spec.proto, FittedCostParams), written by"
    echo "# \`kvsim costmodel fit\` (cost_models/README.md, \"Fitted cost model\"); regenerate with tools/fit_presets.sh."
    cat "$tmp.fit"
  } > "$file"
  rm -f "$tmp" "$tmp.fit"
}
fit a100-80gb $V/compute/a100/meta-llama/Meta-Llama-3-8B $V/compute/a100/meta-llama/Llama-2-7b-hf $V/network/a100_dgx
# No attention is measured on the H100, and the H200 table is a `kvsim calibrate` run, whose prefill rows time
# kvsim's own prefill kernel (no split-KV, about 100-125 TFLOP/s, slower than FlashInfer on an A100), not a
# serving engine's: the H100's attention curves and the H200's prefill curve are carried over from the A100's
# FlashInfer fit just written (cost_models/README.md, "Fitted cost model").
a100=presets/devices/a100-80gb.textproto
fit h100-sxm $V/compute/h100/meta-llama/Llama-2-7b-hf $V/network/h100_dgx --prefill_attention_from=$a100 \
  --decode_attention_from=$a100
fit h200 cost_models/tables/h200_llama-3.1-8b_measured.csv --prefill_attention_from=$a100
