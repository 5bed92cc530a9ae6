#!/usr/bin/env bash
# kvsim decompose: on two replays of one trace (prefix reuse vs none), the parts' differences sum to the
# difference of the mean TTFTs that each run's summary.json reports (within 1%), each side's mean TTFT and
# request count are its summary's, the mean recomputed tokens are requests.csv's, a run against itself is all
# zeros, CSV and JSON agree; bad input (garbage, a file cut short, a device) exits 2 naming the file.
set -u
kvsim="$1"
trace="$2"
source "$(dirname "$0")/cli_test_lib.sh"

printf 'cache { reuse_mode: REUSE_MODE_NONE }\n' >"$tmp/none.textproto"
printf 'cache { reuse_mode: REUSE_MODE_PREFIX }\n' >"$tmp/prefix.textproto"
expect 0 "$kvsim" replay --trace="$trace" --config="$tmp/none.textproto" --out="$tmp/none"
expect 0 "$kvsim" replay --trace="$trace" --config="$tmp/prefix.textproto" --out="$tmp/prefix"
expect 0 "$kvsim" decompose "$tmp/none" "$tmp/prefix" --out="$tmp/dec"
has "mean TTFT: base" out
has "prefill_attention_ms" out
[ -f "$tmp/dec/decomposition.csv" ] && [ -f "$tmp/dec/decomposition.json" ] || fail "decomposition files not written"
python3 - "$tmp" <<'PY' || fail "decomposition does not match the runs' own metrics"
import csv, json, sys
tmp = sys.argv[1]
rows = {r["part"]: r for r in csv.DictReader(open(tmp + "/dec/decomposition.csv"))}
parts = ["queueing_ms", "reload_ms", "prefill_linear_ms", "prefill_attention_ms", "co_batched_ms", "chunk_wait_ms"]
ok = True
def check(cond, msg):
    global ok
    if not cond:
        print("FAIL:", msg); ok = False
for side, run in (("base", "none"), ("other", "prefix")):
    s = json.load(open("%s/%s/summary.json" % (tmp, run)))["summary"]
    mean = float(s["ttft_ms"]["mean"])
    total = sum(float(rows[p][side]) for p in parts)
    check(abs(float(rows["ttft_ms"][side]) - mean) <= 1e-6 * mean, "%s mean TTFT %s vs summary %s" % (side, rows["ttft_ms"][side], mean))
    check(abs(total - mean) <= 1e-6 * mean, "%s parts sum %g vs mean TTFT %g" % (side, total, mean))
    reqs = list(csv.DictReader(open("%s/%s/requests.csv" % (tmp, run))))
    done = [r for r in reqs if r["finished"] in ("1", "true")]
    recomputed = sum(float(r["recomputed_tokens"]) for r in done) / len(done)
    check(abs(float(rows["recomputed_tokens"][side]) - recomputed) <= 1e-6 * recomputed,
          "%s recomputed %s vs requests.csv %g" % (side, rows["recomputed_tokens"][side], recomputed))
    check(int(s["finished_requests"]) == len(done), "finished requests")
d_base = json.load(open(tmp + "/none/summary.json"))["summary"]["ttft_ms"]["mean"]
d_other = json.load(open(tmp + "/prefix/summary.json"))["summary"]["ttft_ms"]["mean"]
diff = d_base - d_other
check(diff > 0, "prefix reuse should lower mean TTFT against no reuse (diff %g)" % diff)
gain = sum(float(rows[p]["base_minus_other"]) for p in parts)
check(abs(gain - diff) <= 0.01 * abs(diff), "parts' differences sum to %g, measured difference %g" % (gain, diff))
shares = sum(float(rows[p]["share_of_difference"]) for p in parts)
check(abs(shares - 1) <= 0.01, "shares sum to %g" % shares)
check(float(rows["recomputed_tokens"]["base_minus_other"]) > 0, "no reuse recomputes more")
j = json.load(open(tmp + "/dec/decomposition.json"))
for item in j["parts"]:
    check(abs(item["base_minus_other"] - float(rows[item["part"]]["base_minus_other"])) <= 1e-6 * max(1, abs(item["base_minus_other"])),
          "json and csv differ at " + item["part"])
check(abs(j["ttft_ratio"] - d_base / d_other) <= 1e-6 * j["ttft_ratio"], "ttft_ratio")
sys.exit(0 if ok else 1)
PY

expect 0 "$kvsim" decompose "$tmp/prefix" "$tmp/prefix/results.pb" --json
python3 -c "
import json, sys
j = json.load(open('$tmp/out'))
bad = [p['part'] for p in j['parts'] if p['base_minus_other'] != 0]
sys.exit(1 if bad else 0)" || fail "a run against itself has non-zero differences"

expect 2 "$kvsim" decompose "$tmp/none"
has "expected BASE OTHER" err
expect 2 "$kvsim" decompose "$tmp/none" "$tmp/missing"
has "$tmp/missing: No such file" err
printf 'not a proto\377\377' >"$tmp/garbage.pb"
expect 2 "$kvsim" decompose "$tmp/none" "$tmp/garbage.pb"
has "garbage.pb: not a results.pb" err
# results.pb is streamed field by field (its requests skipped): a file cut short is refused, not half read;
# a device is refused before reading.
head -c $(( $(stat -c %s "$tmp/prefix/results.pb") - 7 )) "$tmp/prefix/results.pb" >"$tmp/cut.pb"
expect 2 "$kvsim" decompose "$tmp/none" "$tmp/cut.pb"
has "cut.pb: not a results.pb" err
expect 2 "$kvsim" decompose "$tmp/none" /dev/zero
has "/dev/zero: not a regular file" err
finish
