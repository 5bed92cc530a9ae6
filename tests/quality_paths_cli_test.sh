#!/usr/bin/env bash
# The quality evaluator's SIMD paths give byte-identical results: `kvsim quality` on a synthetic trace
# with the AVX-512 kernels (where the CPU has them) and with KVSIM_NO_AVX512=1 (the AVX2 kernels) writes
# the same files. Every policy, a head size that is not a multiple of 16 and an odd GQA group, so that
# every kernel's partial tiles and remainders are used. On a CPU without AVX-512 both runs take the AVX2
# path and the check holds trivially.
set -u
kvsim=$1
source "$(dirname "$0")/cli_test_lib.sh"

expect 0 "$kvsim" synth_attention --out="$tmp/t.kvat" --synth_prompt_len=1500 --synth_decode_steps=20 \
  --synth_head_dim=40 --synth_group_size=3 --seed=5
policies=full,random,knorm,streaming_llm,h2o,tova,scissorhands,snapkv,pyramidkv,expected_attention,quest
policies=$policies,rocketkv,oracle_select,oracle_evict,adakv+snapkv,kivi4,kivi2+h2o
expect 0 "$kvsim" quality --trace="$tmp/t.kvat" --policies=$policies --budgets=32,200,0.5 --out="$tmp/simd"
expect 0 env KVSIM_NO_AVX512=1 "$kvsim" quality --trace="$tmp/t.kvat" --policies=$policies --budgets=32,200,0.5 \
  --out="$tmp/avx2"
for f in summary.csv per_layer.csv per_head.csv areas.csv results.json; do
  [ -s "$tmp/simd/$f" ] || fail "missing $f"
  cmp -s "$tmp/simd/$f" "$tmp/avx2/$f" || fail "$f differs between the AVX-512 and AVX2 paths"
done
finish
