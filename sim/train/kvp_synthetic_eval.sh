#!/usr/bin/env bash
# KVP smoke test on SYNTHETIC attention traces (kvsim synth_attention; no real model): trains the rankers
# (small-model setting; REINFORCE and the soft-sort baseline) on one set of samples and evaluates them on
# held-out samples of other seeds, at the training context length and at 2x and 4x, against random,
# streaming_llm, knorm, tova, snapkv, h2o and the oracles; and on heads of another kind than trained on
# ("mixed" heads, every pattern at once: the synthetic stand-in for another task family). Writes everything under OUT (default
# out/kvp_synthetic) and prints the areas under the recall and error curves (ratio to oracle_select).
#
#   sim/train/kvp_synthetic_eval.sh [OUT]       (after `bazel build //tools:kvsim`)
set -eu
K=${KVSIM:-bazel-bin/tools/kvsim}
out=${1:-out/kvp_synthetic}
mkdir -p "$out"
common=(--synth_layers=2 --synth_kv_heads=4 --synth_group_size=2 --synth_head_dim=64 --synth_decode_steps=64
        --synth_head_types=sink,local,heavy,needle)
"$K" synth_attention --out="$out/train.kvat" --synth_prompt_len=2048 --synth_samples=12 --seed=1 "${common[@]}"
"$K" synth_attention --out="$out/test_1x.kvat" --synth_prompt_len=2048 --synth_samples=4 --seed=101 "${common[@]}"
"$K" synth_attention --out="$out/test_2x.kvat" --synth_prompt_len=4096 --synth_samples=2 --seed=102 "${common[@]}"
"$K" synth_attention --out="$out/test_4x.kvat" --synth_prompt_len=8192 --synth_samples=1 --seed=103 "${common[@]}"
mixed=("${common[@]}" --synth_head_types=mixed)
"$K" synth_attention --out="$out/test_mixed.kvat" --synth_prompt_len=2048 --synth_samples=2 --seed=104 "${mixed[@]}"
for objective in reinforce softsort; do
  "$K" train --traces="$out/train.kvat" --out="$out/kvp_$objective.kvpm" --small_model --objective=$objective \
    --holdout=0.17 --seed=1 --threads=0 | tee "$out/train_$objective.txt"
done
baselines=random,streaming_llm,knorm,tova,snapkv,h2o,oracle_evict,oracle_select
for t in 1x 2x 4x mixed; do
  "$K" quality --trace="$out/test_$t.kvat" \
    --policies="kvp:model=$out/kvp_reinforce.kvpm,kvp:model=$out/kvp_softsort.kvpm,$baselines" \
    --budgets=0.02,0.05,0.1,0.2,0.4 --out="$out/quality_$t" > "$out/quality_$t.txt"
  echo "== held-out synthetic samples, test_${t} (areas, ratio to oracle_select) =="
  sed -n '/^areas under the curves/,$p' "$out/quality_$t.txt"
done
