#!/bin/bash
# Replays each published end-to-end reference point (cost_models/data/published/points.csv) with the
# fitted and the roofline cost model and prints the results next to the published figures.
# Usage: tools/published_points.sh [KVSIM_BINARY]   (run from the repository root)
# Output: one row per point: config, metric, published, fitted (error), roofline (error), the fitted TTFT p50
# (no published TTFT exists for these points: printed, not compared), goal met.
# Exit status 0 when every replay ran, whether or not the goals are met (the last column says).
set -euo pipefail
K=${1:-bazel-bin/tools/kvsim}
D=cost_models/data/published
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
replay() {  # config file -> the replay's summary.json on stdout
  "$K" replay --config="$1" --json
}
metric() {  # summary JSON, metric name -> value on stdout
  case "$2" in
    tpot_p50_ms) jq -r '.summary.tpot_ms.p50' <<< "$1" ;;
    ttft_p50_ms) jq -r '.summary.ttft_ms.p50' <<< "$1" ;;
    # Output tokens over the run (first arrival to last completion), as vLLM's benchmark divides its
    # output tokens by its duration.
    output_tok_s) jq -r '.summary.throughput_output_tokens_per_s' <<< "$1" ;;
    *) echo "unknown metric $2" >&2; exit 2 ;;
  esac
}
printf '%-18s %-14s %10s %20s %20s %14s %s\n' config metric published fitted roofline "fitted TTFT ms" \
  "fitted within goal"
tail -n +2 "$D/points.csv" | while IFS=, read -r name what published goal rest; do
  config=$D/$name.textproto
  sed 's/COST_MODEL_KIND_FITTED/COST_MODEL_KIND_ROOFLINE/' "$config" > "$tmp/roofline.textproto"
  fitted_json=$(replay "$config")
  roofline_json=$(replay "$tmp/roofline.textproto")
  fitted=$(metric "$fitted_json" "$what")
  roofline=$(metric "$roofline_json" "$what")
  ttft=$(metric "$fitted_json" ttft_p50_ms)
  awk -v n="$name" -v w="$what" -v p="$published" -v f="$fitted" -v r="$roofline" -v t="$ttft" -v g="$goal" 'BEGIN {
    ef = (f - p) / p; er = (r - p) / p; ok = (ef < 0 ? -ef : ef) <= g
    printf "%-18s %-14s %10.2f %10.2f (%+5.1f%%) %10.2f (%+5.1f%%) %14.1f %s\n", n, w, p, f, 100 * ef, r, 100 * er, t,
           ok ? "yes" : "NO (goal " 100 * g "%)"
  }'
done
