#!/usr/bin/env bash
# The project's own MetaKV outcome table and its CSR figure, by one command: makes the byte-level tasks
# with tools/make_tasks.py (deterministic with its seed), runs every candidate of the small model's set
# (sim/select/small_model_candidates.textproto) through the closed-loop evaluation with the committed
# model in the loop (`kvsim select --model --tasks`: correctness measured, latency and peak memory from
# the cost model of the default config, Llama-3.1-8B on one H200), and reports the CSR surface of the
# XGBoost selector (5-fold cross-validation by prompt) with the logistic baseline beside, then the
# logistic selector's own surface (on the written outcomes.csv).
#
#   tools/select_closed_loop.sh [KVSIM] [OUT_DIR] [MODEL_DIR] [LENGTHS] [NUM]
#     KVSIM      default bazel-bin/tools/kvsim (built with `bazel build //tools:kvsim` first)
#     OUT_DIR    default out/select_closed_loop: tasks.jsonl, xgboost/ and logistic/ (kvsim select --out)
#     MODEL_DIR  default sim/eval/models/kvsim-tiny
#     LENGTHS    context lengths of the tasks, default 384,448,512; NUM instances per (family, length),
#                default 24 (6 families x 3 lengths x 24 = 432 prompts)
# One thread throughout (--threads=1; the figures do not depend on the thread count): about 65 s of CPU
# (2.5 minutes of wall time on a shared 2-core machine).
set -euo pipefail
cd "$(dirname "$0")/.."
kvsim=${1:-bazel-bin/tools/kvsim}
out=${2:-out/select_closed_loop}
model=${3:-sim/eval/models/kvsim-tiny}
lengths=${4:-384,448,512}
num=${5:-24}
mkdir -p "$out"
python3 tools/make_tasks.py --out="$out/tasks.jsonl" \
  --tasks=niah_single,niah_multikey,niah_multivalue,variable_tracking,common_words,dialogue_recall \
  --lengths="$lengths" --num="$num" --seed=1
configs=sim/select/small_model_candidates.textproto
"$kvsim" select --model="$model" --tasks="$out/tasks.jsonl" --configs="$configs" --threads=1 --seed=1 \
  --predictor=xgboost --out="$out/xgboost"
# The logistic selector on the same table (its outcomes.csv; the costs recomputed by the same cost model).
"$kvsim" select --outcomes="$out/xgboost/outcomes.csv" --costs=model --configs="$configs" --seed=1 \
  --predictor=logistic --out="$out/logistic" | tail -n 4
