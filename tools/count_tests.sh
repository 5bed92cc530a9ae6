#!/usr/bin/env bash
# Counts test cases from Bazel's per-target test.xml files and prints "N passed, N failed, N skipped".
# A sharded target is read from every shard's report. A test target with no report (it did not build or did
# not run; for a sharded one, any shard's) counts as one failure.
# Usage: count_tests.sh BAZEL_TEST_EXIT_STATUS
set -uo pipefail
bazel_status=${1:-0}
logs=$(bazel info bazel-testlogs 2>/dev/null)
passed=0 failed=0 skipped=0
attr() { sed -n "s/.*[[:space:]]$1=\"\([0-9]*\)\".*/\1/p" <<<"$2" | head -n 1; }
for target in $(bazel query 'tests(//...) except attr(tags, manual, //...)' 2>/dev/null); do
  path=${target#//}
  dir="$logs/${path/://}"
  # One report per target, or one per shard of a sharded target (shard_K_of_N/test.xml, all N present).
  xmls=()
  if [ -f "$dir/test.xml" ]; then
    xmls=("$dir/test.xml")
  else
    shards=$(ls -d "$dir"/shard_*_of_* 2>/dev/null | head -n 1 | sed -n 's/.*_of_\([0-9]*\)$/\1/p')
    for ((k = 1; k <= ${shards:-0}; k++)); do
      [ -f "$dir/shard_${k}_of_${shards}/test.xml" ] && xmls+=("$dir/shard_${k}_of_${shards}/test.xml")
    done
    [ "${#xmls[@]}" -eq "${shards:-0}" ] || xmls=()
  fi
  if [ "${#xmls[@]}" -eq 0 ]; then
    echo "no test report for $target (did not build or did not run)"
    failed=$((failed + 1))
    continue
  fi
  for xml in "${xmls[@]}"; do
    header=$(grep -m1 -o '<testsuites[^>]*>' "$xml" || true)
    [ -n "$(attr tests "$header")" ] || header=$(grep -m1 -o '<testsuite [^>]*>' "$xml")
    tests=$(attr tests "$header"); failures=$(attr failures "$header"); errors=$(attr errors "$header")
    skips=$(grep -c 'result="skipped"' "$xml" || true)
    tests=${tests:-0} failures=${failures:-0} errors=${errors:-0}
    bad=$((failures + errors))
    passed=$((passed + tests - bad - skips))
    failed=$((failed + bad))
    skipped=$((skipped + skips))
  done
done
if [ "$bazel_status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "bazel test exited with status $bazel_status"
  failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
