#!/usr/bin/env bash
# The quality evaluator's SIMD paths give byte-identical results: `kvsim quality` on a synthetic trace
# with the AVX-512 kernels (where the CPU has them) and with KVSIM_NO_AVX512=1 (the AVX2 kernels) writes
# the same files. Every policy, a head size that is not a multiple of 16 and an odd GQA group, so that
# every kernel's partial tiles and remainders are used. On a CPU without AVX-512 both runs take the AVX2
# path and the check holds trivially. The results also do not depend on how much attention is held at
# once: with 1 MiB (blocks of a few steps, the exact rows recomputed per block, oracle_evict computing its
# own) the AVX2 path writes the same files again (where it is taken: a CPU with AVX2 and KVSIM_NO_AVX2 not
# set; the portable path's library GEMM agrees only to rounding, checked in sim/quality_evaluator_test),
# nor on the number of threads.
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
if grep -qw avx2 /proc/cpuinfo 2>/dev/null && [ "${KVSIM_NO_AVX2:-}" != 1 ]; then
  expect 0 env KVSIM_NO_AVX512=1 "$kvsim" quality --trace="$tmp/t.kvat" --policies=$policies --budgets=32,200,0.5 \
    --attention_mib=1 --out="$tmp/blocks"
  for f in summary.csv per_layer.csv per_head.csv areas.csv results.json; do
    cmp -s "$tmp/avx2/$f" "$tmp/blocks/$f" || fail "$f differs with --attention_mib=1"
  done
fi
# Nor on the thread count (the runs above use every core): one thread and three write the same files.
for threads in 1 3; do
  expect 0 "$kvsim" quality --trace="$tmp/t.kvat" --policies=$policies --budgets=32,200,0.5 --threads=$threads \
    --out="$tmp/threads$threads"
  for f in summary.csv per_layer.csv per_head.csv areas.csv results.json; do
    cmp -s "$tmp/simd/$f" "$tmp/threads$threads/$f" || fail "$f differs with --threads=$threads"
  done
done
expect 2 "$kvsim" quality --trace="$tmp/t.kvat" --policies=h2o --budgets=32 --attention_mib=0
has "attention_mib=0: must be in" err
# The former name --quality_attention_mib still reaches --attention_mib.
expect 2 "$kvsim" quality --trace="$tmp/t.kvat" --policies=h2o --budgets=32 --quality_attention_mib=0
has "attention_mib=0: must be in" err
expect 2 "$kvsim" quality --trace="$tmp/t.kvat" --policies=h2o --budgets=32 --threads=-2
has "threads=-2: must be in \[0, 1024\] (0 = all cores)" err
expect 2 "$kvsim" quality --trace="$tmp/t.kvat" --policies=h2o --budgets=32 --threads=2000000000
has "threads=2000000000: must be in \[0, 1024\]" err
finish
