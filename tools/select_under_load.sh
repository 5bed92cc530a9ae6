#!/usr/bin/env bash
# The measured selections of tools/select_closed_loop.sh replayed under load: `kvsim select` on its
# outcome table at one (latency, memory) budget writes each prompt's configuration (selections.csv); the
# prompts become an Azure-format trace (one arrival every 1/RATE s, in the table's prompt order, input and
# output tokens from the table) that `kvsim replay` serves three ways at each rate: every request at fp16,
# every request at the budget's best static configuration, and each request at its selected one
# (`--kv_configs`). Prints one line per run (TTFT, TPOT, throughput, preemptions, GPU blocks) and writes
# OUT_DIR/under_load.md.
#
#   tools/select_under_load.sh [KVSIM] [OUT_DIR] [LATENCY_MS] [MEMORY_MB] [RATES]
#     KVSIM       default bazel-bin/tools/kvsim
#     OUT_DIR     default out/select_closed_loop (must hold xgboost/outcomes.csv from select_closed_loop.sh)
#     LATENCY_MS, MEMORY_MB  the budget, default 98.3335 and 15675 (a point of that table's grid)
#     RATES       requests per second, default 20,100,400
set -euo pipefail
cd "$(dirname "$0")/.."
kvsim=${1:-bazel-bin/tools/kvsim}
out=${2:-out/select_closed_loop}
latency_ms=${3:-98.3335}
memory_mb=${4:-15675}
rates=${5:-20,100,400}
configs=sim/select/small_model_candidates.textproto
outcomes="$out/xgboost/outcomes.csv"
[ -f "$outcomes" ] || { echo "select_under_load: $outcomes missing: run tools/select_closed_loop.sh first" >&2; exit 2; }
load="$out/under_load"
mkdir -p "$load"
"$kvsim" select --outcomes="$outcomes" --costs=model --configs="$configs" --seed=1 --predictor=xgboost \
  --latency_ms="$latency_ms" --memory_mb="$memory_mb" --out="$load/select" >"$load/select.txt"
best=$(sed -n 's/^ *best static CSR .*(\(.*\))$/\1/p' "$load/select/summary.txt" | head -n 1)
[ -n "$best" ] || { echo "select_under_load: no best static configuration in $load/select/summary.txt" >&2; exit 1; }

for rate in ${rates//,/ }; do
  python3 - "$outcomes" "$load/select/selections.csv" "$rate" "$load/trace_$rate.csv" "$load/kv_configs.csv" <<'EOF'
import csv, sys
outcomes, selections, rate, trace, kv = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
shape = {}
for r in csv.DictReader(open(outcomes)):
    shape.setdefault(r["prompt_id"], (int(r["input_tokens"]), int(r["output_tokens"])))
rows = list(csv.DictReader(open(selections)))
with open(trace, "w") as t, open(kv, "w") as k:
    t.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    k.write("request_id,config\n")
    for i, r in enumerate(rows):
        us = round(i * 1e6 / rate)
        t.write("2024-01-01 00:%02d:%02d.%06d0,%d,%d\n" % (us // 60_000_000, us // 1_000_000 % 60, us % 1_000_000,
                                                         *shape[r["prompt_id"]]))
        k.write("%d,%s\n" % (i, r["config"]))
EOF
  for how in fp16 "$best" selected; do
    if [ "$how" = selected ]; then flag=(--kv_configs="$load/kv_configs.csv"); else flag=(--kv_config="$how"); fi
    "$kvsim" replay --trace="$load/trace_$rate.csv" --configs="$configs" "${flag[@]}" --out="$load/replay_${rate}_$how" \
      >"$load/replay_${rate}_$how.txt"
    python3 - "$load/replay_${rate}_$how/summary.json" "$rate" "$how" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("| %s | %s | %.1f / %.1f | %.2f / %.2f | %.2f, %.0f | %s | %s |" % (
    sys.argv[2], sys.argv[3], s["ttft_ms"]["mean"], s["ttft_ms"]["p99"], s["tpot_ms"]["mean"], s["tpot_ms"]["p99"],
    s["throughput_requests_per_s"], s["throughput_output_tokens_per_s"], s.get("preemptions", "0"),
    s.get("max_gpu_blocks_used", "0")))
EOF
  done
done | tee "$load/rows.md"
{
  echo "Selections at latency $latency_ms ms, memory $memory_mb MiB (best static: $best), replayed under load:"
  echo
  echo "| req/s | KV configuration | TTFT mean / p99 (ms) | TPOT mean / p99 (ms) | throughput (req/s, output tok/s) | preemptions | max GPU blocks used |"
  echo "|---|---|---|---|---|---|---|"
  cat "$load/rows.md"
} >"$load/under_load.md"
echo "wrote $load/under_load.md"
