#!/usr/bin/env bash
# kvsim report in a browser: headless Chromium (Debian's `chromium`) renders the page; its DOM must hold
# every expected plot as an <svg> with its id, the console must show no script error, and a screenshot is
# taken (kept in Bazel's undeclared test outputs). Skips with a message where chromium is not installed.
set -u
kvsim="$1"
trace="$2"
source "$(dirname "$0")/cli_test_lib.sh"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (tools/install_deps.sh installs it); the report was not rendered"
  exit 0
fi
source "$(dirname "$0")/report_fixture.sh"
expect 0 "$kvsim" report "$res/one_gpu" "$res/four_gpus" "$res/cache" "$res/mrc_lru.csv" "$res/sweep" \
  "$res/quality" --labels=1gpu,4gpus,cache,mrc,sweep,quality --out="$tmp/report.html"

# Chromium wants a writable home and profile; the sandbox is off (tests run as root in CI containers).
export HOME="$tmp/home"
mkdir -p "$HOME"
chrome() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile" \
    --enable-logging=stderr --v=0 "$@"
}
chrome --dump-dom "file://$tmp/report.html" >"$tmp/dom.html" 2>"$tmp/dom.err" ||
  fail "chromium --dump-dom failed: $(tail -5 "$tmp/dom.err")"
for id in ttft-cdf tpot-cdf itl-cdf e2e-cdf throughput token-throughput gpu-occupancy queue-length batch-size \
  hit-ratio-capacity miss-ratio-curves sweep-heatmap-1 sweep-lines-1 quality-recall-1 quality-error-1; do
  grep -q "<svg [^>]*id=\"$id\"" "$tmp/dom.html" || fail "rendered DOM has no <svg id=\"$id\">"
done
# The DOM's plot count is the page's own: nothing was dropped by the HTML parser.
n_svg=$(grep -o "<svg " "$tmp/dom.html" | wc -l)
[ "$n_svg" -eq 15 ] || fail "rendered DOM has $n_svg <svg> elements, want 15"
# No script errors (Chromium logs console messages and uncaught errors as CONSOLE lines).
grep -E "CONSOLE|Uncaught" "$tmp/dom.err" && fail "script errors while rendering"

out_dir="${TEST_UNDECLARED_OUTPUTS_DIR:-$tmp}"
chrome --hide-scrollbars --window-size=1400,5200 --screenshot="$out_dir/report.png" "file://$tmp/report.html" \
  >/dev/null 2>"$tmp/shot.err" || fail "chromium --screenshot failed: $(tail -5 "$tmp/shot.err")"
# A PNG of the requested size: signature, then width and height in the IHDR chunk (bytes 16-23).
[ "$(head -c 8 "$out_dir/report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
  fail "screenshot is not a PNG"
size=$(od -An -tu1 -j16 -N8 "$out_dir/report.png" | awk '{print $3*256+$4 "x" $7*256+$8}')
[ "$size" = "1400x5200" ] || fail "screenshot is $size, want 1400x5200"
finish
