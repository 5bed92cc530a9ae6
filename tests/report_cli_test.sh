#!/usr/bin/env bash
# kvsim report: one self-contained HTML page over result sets of every kind, each expected plot present
# as an <svg> with its id; no script or external resource; bad inputs are one-line errors with exit 2.
set -u
kvsim="$1"
trace="$2"
source "$(dirname "$0")/cli_test_lib.sh"
source "$(dirname "$0")/report_fixture.sh"

expect 0 "$kvsim" report "$res/one_gpu" "$res/four_gpus" "$res/cache" "$res/mrc_lru.csv" "$res/sweep" \
  "$res/quality" --labels=1gpu,4gpus,cache,mrc,sweep,quality --out="$tmp/report.html"
has "wrote $tmp/report.html: 6 result sets, 15 plots" out
page="$tmp/report.html"
for id in ttft-cdf tpot-cdf itl-cdf e2e-cdf throughput token-throughput gpu-occupancy queue-length batch-size \
  hit-ratio-capacity miss-ratio-curves sweep-heatmap-1 sweep-lines-1 quality-recall-1 quality-error-1; do
  grep -q "<svg [^>]*id=\"$id\"" "$page" || fail "no <svg id=\"$id\"> in the report"
done
# Self-contained: no script, no link to anything outside the page (the SVG namespace is a name, not a fetch).
grep -qi "<script" "$page" && fail "the report has a script"
grep -v 'xmlns="http://www.w3.org/2000/svg"' "$page" | grep -qiE "(src|href)=\"?(https?:|//)" &&
  fail "the report links outside itself"
# The serving table: finished counts read from summary.json (int64 written as strings by proto3 JSON).
grep -q "<td>1gpu</td><td>3993 / 3993</td>" "$page" || fail "serving table row: $(grep -o '<td>1gpu</td>.\{80\}' "$page")"
# The same count written as a JSON number reads the same.
mkdir -p "$tmp/numeric"
cp "$res/one_gpu/requests.csv" "$tmp/numeric/"
sed -e 's/"num_requests": "3993"/"num_requests": 3993/' -e 's/"finished_requests": "3993"/"finished_requests": 3993/' \
  "$res/one_gpu/summary.json" >"$tmp/numeric/summary.json"
grep -q '"num_requests": 3993' "$tmp/numeric/summary.json" || fail "test setup: no numeric num_requests"
expect 0 "$kvsim" report "$tmp/numeric" --out="$tmp/numeric.html"
grep -q "<td>numeric</td><td>3993 / 3993</td>" "$tmp/numeric.html" || fail "numeric counts not read"
# --report_title, the former name of --title, still sets the page's title.
expect 0 "$kvsim" report "$tmp/numeric" --out="$tmp/titled.html" --report_title="Fleet A"
grep -q "<title>Fleet A</title>" "$tmp/titled.html" || fail "--report_title: $(grep -o '<title>.*</title>' "$tmp/titled.html")"
# No SLO in the default config: goodput says so instead of a number.
grep -q "<td>1gpu</td>.*no SLO set" "$page" || fail "1gpu goodput should read 'no SLO set'"
# Belady's bound is labelled as such.
grep -q "belady (bound)" "$page" ||
  fail "no Belady bound in the hit-ratio plot"
# Same inputs, same bytes.
expect 0 "$kvsim" report "$res/one_gpu" "$res/four_gpus" "$res/cache" "$res/mrc_lru.csv" "$res/sweep" \
  "$res/quality" --labels=1gpu,4gpus,cache,mrc,sweep,quality --out="$tmp/again.html"
cmp -s "$page" "$tmp/again.html" || fail "report not deterministic"

# Errors: exit 2 with the path named; no page written.
expect 2 "$kvsim" report "$tmp/nothing_here" --out="$tmp/x.html"
has "nothing_here: no such file or folder" err
expect 2 "$kvsim" report "$res/slo.textproto" --out="$tmp/x.html"
has "slo.textproto: expected a result folder" err
expect 2 "$kvsim" report "$res/one_gpu" "$res/cache" --labels=a --out="$tmp/x.html"
has "--labels has 1 names for 2 result sets" err
expect 2 "$kvsim" report "$res/sweep" --sweep_axes=policy,nope --out="$tmp/x.html"
has "has no axis 'nope'" err
expect 2 "$kvsim" report "$res/one_gpu"
has "--out=FILE.html is required" err
[ -e "$tmp/x.html" ] && fail "a failed report left $tmp/x.html"
finish
