#!/usr/bin/env bash
# `kvsim select` end to end: a SYNTHETIC outcome table (planted correctness, costs from the roofline model)
# gives the report and every output file, twice byte-identically; a table written by the first run reads
# back with --costs=table to the same CSR surface; a hand-made table gives the hand-counted CSR; bad
# input is refused with exit code 2 naming the file, line and column. With the committed small model
# ($2) and task file ($3), the closed-loop table (--model --tasks) is made, the same for any thread count,
# and reads back to the same surface; a candidate the closed loop cannot run is refused naming it.
set -u
kvsim=$1
model=$2
tasks=$3
source "$(dirname "$0")/cli_test_lib.sh"

run() { "$kvsim" select "$@"; }

expect 0 run --synthetic_prompts=80 --seed=2 --predictor=logistic --folds=4 --latency_ms=3000 --memory_mb=17000 \
  --grid_points=5 --out="$tmp/a"
has "SYNTHETIC table" out
has "80 prompts x 11 configurations" out
has "4-fold cross-validation by prompt" out
has "selector's latency and memory: the cost model's" out
has "Brier" out
has "best static CSR" out
has "oracle CSR" out
has "CSR gain over best static: mean" out
for f in csr_grid.csv csr_grid.svg calibration.csv feature_importance.csv outcomes.csv selections.csv summary.txt; do
  [ -s "$tmp/a/$f" ] || fail "missing $f"
done
head -1 "$tmp/a/csr_grid.csv" | grep -q "^latency_ms,memory_mb,feasible,infeasible_prompts,selector_csr" \
  || fail "csr_grid.csv header: $(head -1 "$tmp/a/csr_grid.csv")"
[ "$(wc -l < "$tmp/a/selections.csv")" -eq 81 ] || fail "selections.csv should have 80 rows and a header"
[ "$(wc -l < "$tmp/a/outcomes.csv")" -eq 881 ] || fail "outcomes.csv should have 80 x 11 rows and a header"
grep -q "<svg" "$tmp/a/csr_grid.svg" || fail "csr_grid.svg is not an SVG"
# Same inputs and seed: byte-identical files.
expect 0 run --synthetic_prompts=80 --seed=2 --predictor=logistic --folds=4 --latency_ms=3000 --memory_mb=17000 \
  --grid_points=5 --out="$tmp/b"
for f in csr_grid.csv csr_grid.svg calibration.csv feature_importance.csv outcomes.csv selections.csv summary.txt; do
  cmp -s "$tmp/a/$f" "$tmp/b/$f" || fail "$f differs between two identical runs"
done
# The table written out reads back (costs from its columns, so the selector uses the learned cost
# predictors) to the surface the synthetic run gives with learned cost predictors (same seed: same folds).
expect 0 run --synthetic_prompts=80 --seed=2 --predictor=logistic --folds=4 --grid_points=5 --predict_costs=learned \
  --out="$tmp/learned"
has "selector's latency and memory: the learned predictors'" out
expect 0 run --outcomes="$tmp/a/outcomes.csv" --seed=2 --predictor=logistic --folds=4 --grid_points=5 --out="$tmp/c"
cmp -s "$tmp/learned/csr_grid.csv" "$tmp/c/csr_grid.csv" || fail "the written table does not give the same CSR surface"
expect 2 run --outcomes="$tmp/a/outcomes.csv" --predictor=logistic --predict_costs=model
has "predict_costs=model needs costs from the model" err
# And with its costs recomputed by the cost model (same model and GPU): the same again.
expect 0 run --outcomes="$tmp/a/outcomes.csv" --seed=2 --costs=model --predictor=logistic --folds=4 --grid_points=5 --out="$tmp/d"
cmp -s "$tmp/a/csr_grid.csv" "$tmp/d/csr_grid.csv" || fail "--costs=model does not reproduce the table's costs"

# XGBoost where the build has it: deterministic too, with the logistic baseline beside.
expect_xgb() {
  "$kvsim" select --synthetic_prompts=60 --seed=2 --folds=3 --grid_points=3 --out="$tmp/x1" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -eq 2 ] && grep -q "built without XGBoost\|cannot load XGBoost" "$tmp/err"; then
    echo "SKIP: xgboost part ($(cat "$tmp/err"))"
  else
    [ $rc -eq 0 ] || fail "xgboost run exited $rc: $(cat "$tmp/err")"
    has "predictor: xgboost" out
    has "logistic baseline on the same folds" out
    expect 0 run --synthetic_prompts=60 --seed=2 --folds=3 --grid_points=3 --out="$tmp/x2"
    for f in csr_grid.csv calibration.csv feature_importance.csv summary.txt; do
      cmp -s "$tmp/x1/$f" "$tmp/x2/$f" || fail "xgboost: $f differs between two identical runs"
    done
  fi
}
expect_xgb

# A hand-made table: 2 prompts x 2 configurations.
cat > "$tmp/c.textproto" <<'P'
candidate { name: "full" }
candidate { name: "small" quant { method: KV_QUANT_METHOD_KVQUANT bits: 4 } }
P
cat > "$tmp/hand.csv" <<'C'
prompt_id,config,correct,latency_ms,peak_memory_mb,input_tokens,output_tokens,f
a,full,1,100,50,10,5,0
a,small,1,50,20,10,5,0
b,full,1,100,50,10,5,1
b,small,0,50,20,10,5,1
c,full,0,100,50,10,5,2
c,small,0,50,20,10,5,2
C
# M = 30: only "small" fits; it is right on a alone: every selector, best static and oracle get 1/3.
expect 0 run --outcomes="$tmp/hand.csv" --configs="$tmp/c.textproto" --predictor=logistic --folds=3 \
  --latency_ms=1000 --memory_mb=30 --latency_grid=10,1000 --memory_grid=30,100
has "oracle CSR       0.3333" out
has "best static CSR  0.3333  (small)" out
has "grid: 2 latency x 2 memory budgets, 2 feasible, 2 infeasible" out
# An impossible budget is reported as infeasible, not as CSR 0 without a word.
expect 0 run --outcomes="$tmp/hand.csv" --configs="$tmp/c.textproto" --predictor=logistic --folds=3 \
  --latency_ms=1 --memory_mb=1 --latency_grid=1 --memory_grid=1
has "infeasible: no configuration meets this budget for any of the 3 prompts" out
has "no feasible budget on the grid" out

# Bad input: exit 2, naming file, line and column.
sed 's/^b,small,/b,tiny,/' "$tmp/hand.csv" > "$tmp/unknown.csv"
expect 2 run --outcomes="$tmp/unknown.csv" --configs="$tmp/c.textproto" --predictor=logistic
has "unknown.csv:5:2 (config): unknown configuration 'tiny'" err
sed 's/^b,small,/b,full,/' "$tmp/hand.csv" > "$tmp/dup.csv"
expect 2 run --outcomes="$tmp/dup.csv" --configs="$tmp/c.textproto" --predictor=logistic
has "dup.csv:5:2 (config): duplicated row for prompt 'b' and configuration 'full' (first at line 4)" err
sed 's/^a,small,1,50,/a,small,1,x50,/' "$tmp/hand.csv" > "$tmp/nan.csv"
expect 2 run --outcomes="$tmp/nan.csv" --configs="$tmp/c.textproto" --predictor=logistic
has "nan.csv:3:4 (latency_ms): 'x50' is not a finite number" err
cut -d, -f1-3,5- "$tmp/hand.csv" > "$tmp/nolat.csv"
expect 2 run --outcomes="$tmp/nolat.csv" --configs="$tmp/c.textproto" --predictor=logistic
has "nolat.csv:1: missing column 'latency_ms'" err
sed 's/^c,small,0,50,20,10,5,2/c,small,0,50,20,10,5000000,2/' "$tmp/hand.csv" > "$tmp/long.csv"
expect 2 run --outcomes="$tmp/long.csv" --configs="$tmp/c.textproto" --predictor=logistic --folds=3 --costs=model
has "long.csv: prompt 'c', configuration 'small': input_tokens (10) must be in \[1, 16777216\] and output_tokens (5000000)" err
expect 2 run --outcomes="$tmp/hand.csv" --configs="$tmp/c.textproto" --predictor=logistic --folds=4
has "folds=4: must be in \[2, number of prompts = 3\]" err
expect 2 run --outcomes="$tmp/hand.csv" --configs="$tmp/c.textproto" --latency_ms=5
has "--latency_ms and --memory_mb go together" err
expect 2 run --outcomes="$tmp/hand.csv" --synthetic_prompts=5
has "exactly one of --outcomes=FILE, --model=DIR --tasks=FILE (closed loop) or --synthetic_prompts=N" err
expect 2 run --outcomes="$tmp/hand.csv" --configs="$tmp/c.textproto" --predictor=forest
has "unknown predictor 'forest'" err
expect 2 run --model="$model" --configs="$tmp/c.textproto"
has "--model=DIR and --tasks=FILE go together" err
expect 2 run --outcomes="$tmp/missing.csv" --configs="$tmp/c.textproto" --predictor=logistic --out="$tmp/e"
[ ! -e "$tmp/e" ] || fail "a failed run left an output directory"

# The closed-loop table: the small model on the first 10 tasks (both needle families), 11 candidates.
small=sim/select/small_model_candidates.textproto
closed() { run --model="$model" --tasks="$tasks" --max_tasks=10 --configs="$small" --predictor=logistic --folds=2 \
  --grid_points=3 "$@"; }
expect 0 closed --threads=1 --out="$tmp/cl1"
has "closed-loop table (.*kvsim-tiny on .*tasks_512.jsonl, correctness measured): 10 prompts x 11 configurations" out
has "latency and peak memory from the roofline cost model" out
head -1 "$tmp/cl1/outcomes.csv" | grep -qx \
  "prompt_id,config,correct,latency_ms,peak_memory_mb,input_tokens,output_tokens,task_family,prefill_entropy,prefill_mass_kept" \
  || fail "closed-loop outcomes.csv header: $(head -1 "$tmp/cl1/outcomes.csv")"
[ "$(wc -l < "$tmp/cl1/outcomes.csv")" -eq 111 ] || fail "closed-loop outcomes.csv should have 10 x 11 rows and a header"
grep -q "^niah_single-512-0000,fp16,1," "$tmp/cl1/outcomes.csv" || fail "the full cache should solve niah_single-512-0000"
grep -q "^niah_single-512-0000,h2o-12.5%,0," "$tmp/cl1/outcomes.csv" || fail "h2o at 64 tokens should miss niah_single-512-0000"
expect 0 closed --threads=2 --out="$tmp/cl2"
for f in outcomes.csv csr_grid.csv summary.txt; do
  cmp -s "$tmp/cl1/$f" "$tmp/cl2/$f" || fail "closed loop: $f differs between 1 and 2 threads"
done
expect 0 run --outcomes="$tmp/cl1/outcomes.csv" --costs=model --configs="$small" --predictor=logistic --folds=2 \
  --grid_points=3 --out="$tmp/cl3"
cmp -s "$tmp/cl1/csr_grid.csv" "$tmp/cl3/csr_grid.csv" || fail "the closed-loop table read back gives another surface"
cat "$small" > "$tmp/hindsight.textproto"
echo 'candidate { name: "hindsight" token { policy: "oracle_evict" budget_ratio: 0.25 } }' >> "$tmp/hindsight.textproto"
expect 2 run --model="$model" --tasks="$tasks" --max_tasks=2 --configs="$tmp/hindsight.textproto" --folds=2 --predictor=logistic
has "candidate 'hindsight' (closed-loop policy oracle_evict)" err
finish
