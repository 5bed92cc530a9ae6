#!/bin/bash
# Replays each published end-to-end reference point (cost_models/data/published/points.csv) with the
# fitted and the roofline cost model and prints the results next to the published figures.
# Usage: tools/published_points.sh [KVSIM_BINARY]   (run from the repository root)
# Output: one row per point: config, metric, published, fitted (error), roofline (error), goal met.
# Exit status 0 when every replay ran, whether or not the goals are met (the last column says).
set -euo pipefail
K=${1:-bazel-bin/tools/kvsim}
D=cost_models/data/published
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
metric() {  # config file, metric name -> value on stdout
  local json
  json=$("$K" replay --config="$1" --json)
  case "$2" in
    tpot_p50_ms) jq -r '.summary.tpot_ms.p50' <<< "$json" ;;
    ttft_p50_ms) jq -r '.summary.ttft_ms.p50' <<< "$json" ;;
    closed_loop_output_tok_s)
      # C requests of 128 output tokens in flight: C x 128 tokens per end-to-end time.
      local c
      c=$(grep -o 'conc[0-9]*' <<< "$(jq -r '.run.trace_path' <<< "$json")" | head -1 | tr -dc 0-9)
      jq -r --argjson c "$c" '$c * 128 / (.summary.e2e_ms.p50 / 1000)' <<< "$json" ;;
    *) echo "unknown metric $2" >&2; exit 2 ;;
  esac
}
printf '%-18s %-26s %10s %20s %20s %s\n' config metric published fitted roofline "fitted within goal"
tail -n +2 "$D/points.csv" | while IFS=, read -r name what published goal rest; do
  config=$D/$name.textproto
  sed 's/COST_MODEL_KIND_FITTED/COST_MODEL_KIND_ROOFLINE/' "$config" > "$tmp/roofline.textproto"
  fitted=$(metric "$config" "$what")
  roofline=$(metric "$tmp/roofline.textproto" "$what")
  awk -v n="$name" -v w="$what" -v p="$published" -v f="$fitted" -v r="$roofline" -v g="$goal" 'BEGIN {
    ef = (f - p) / p; er = (r - p) / p; ok = (ef < 0 ? -ef : ef) <= g
    printf "%-18s %-26s %10.2f %10.2f (%+5.1f%%) %10.2f (%+5.1f%%) %s\n", n, w, p, f, 100 * ef, r, 100 * er,
           ok ? "yes" : "NO (goal " 100 * g "%)"
  }'
done
