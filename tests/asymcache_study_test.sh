#!/usr/bin/env bash
# tools/asymcache_study.py at its tiny size: it runs; two runs (--jobs=1 and --jobs=2) write byte-identical
# data; every ratio in ratios.csv is the quotient of data.csv's means; each decomposition's six parts sum to
# the baseline's mean TTFT minus the variant's in data.csv (within 1%); a baseline against itself is 1 and
# its gain 0; each capacity is the pressure's share of the working set, whole blocks.
set -u
kvsim="$1"
script="$2"
source "$(dirname "$0")/cli_test_lib.sh"

python3 "$script" --kvsim="$kvsim" --size=tiny --jobs=1 --out="$tmp/a" >"$tmp/log" 2>&1 || fail "study failed: $(tail -5 "$tmp/log")"
python3 "$script" --kvsim="$kvsim" --size=tiny --jobs=2 --out="$tmp/b" >"$tmp/log" 2>&1 || fail "study failed: $(tail -5 "$tmp/log")"
for f in data.csv ratios.csv decomposition.csv report.md ttft_ratio_vs_vllm.csv report.html; do
  [ -s "$tmp/a/$f" ] || fail "$f not written"
  cmp -s "$tmp/a/$f" "$tmp/b/$f" || fail "$f differs between two runs"
done
python3 - "$tmp/a" <<'PY' || fail "study data are not self-consistent"
import csv, sys
d = sys.argv[1]
data = {(r["cell"], r["variant"]): r for r in csv.DictReader(open(d + "/data.csv"))}
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print("FAIL:", msg); ok = False
check(len(data) > 0, "no rows")
cells = {c for c, _ in data}
check(any(c.startswith("rag ") for c in cells) and any(c.startswith("agent ") for c in cells), "cells: %s" % cells)
for (c, v), r in data.items():
    check(int(r["finished_requests"]) > 0, "%s %s finished nothing" % (c, v))
    block, ws, cap, p = int(r["block_tokens"]), int(r["working_set_tokens"]), int(r["gpu_capacity_tokens"]), float(r["pressure"])
    # tiny traces are far smaller than an H200's KV memory, so the pressure's share is never capped
    check(cap == max(block, int(p * ws) // block * block), "%s capacity %d vs %g x %d" % (c, cap, p, ws))
ratios = list(csv.DictReader(open(d + "/ratios.csv")))
check(len(ratios) == len(data) * 3, "one ratio row per run and baseline")
for r in ratios:
    base, var = data[(r["cell"], r["baseline"])], data[(r["cell"], r["variant"])]
    for key, col in (("ttft_mean_ms", "ttft_ratio"), ("tpot_mean_ms", "tpot_ratio"), ("job_mean_ms", "job_ratio")):
        b, v = float(base[key]), float(var[key])
        if b > 0 and v > 0:
            check(abs(float(r[col]) - b / v) <= 1e-4 * b / v, "%s %s/%s %s: %s vs %g" % (r["cell"], r["baseline"], r["variant"], col, r[col], b / v))
        else:
            check(r[col] == "", "%s: ratio without both means" % col)
    if r["baseline"] == r["variant"]:
        check(float(r["ttft_ratio"]) == 1.0, "self ratio")
parts = {}
for p in csv.DictReader(open(d + "/decomposition.csv")):
    parts.setdefault((p["cell"], p["variant"], p["baseline"]), {})[p["part"]] = p
check(len(parts) == len(ratios), "one decomposition per ratio row")
six = ["queueing_ms", "reload_ms", "prefill_linear_ms", "prefill_attention_ms", "co_batched_ms", "chunk_wait_ms"]
for (c, v, b), ps in parts.items():
    gain = sum(float(ps[k]["baseline_minus_variant"]) for k in six)
    measured = float(data[(c, b)]["ttft_mean_ms"]) - float(data[(c, v)]["ttft_mean_ms"])
    scale = max(float(data[(c, b)]["ttft_mean_ms"]), 1e-9)
    check(abs(gain - measured) <= 0.01 * abs(measured) + 1e-4 * scale, "%s %s vs %s: parts %g, measured %g" % (c, v, b, gain, measured))
    check(abs(float(ps["ttft_ms"]["baseline_value"]) - float(data[(c, b)]["ttft_mean_ms"])) <= 1e-4 * scale, "baseline mean TTFT")
    if v == b:
        check(all(float(ps[k]["baseline_minus_variant"]) == 0 for k in six), "self gain not 0")
sys.exit(0 if ok else 1)
PY
finish
