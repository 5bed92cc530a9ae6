#!/usr/bin/env bash
# kvsim, second command: runs the whole test suite and ends with a line "N passed, N failed",
# counting test cases from each test's XML report. Exit status is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")"

bash tools/install_deps.sh || exit 1
# Builds come from the disk cache where possible; the tests themselves always run (no cached results).
bazel test --keep_going --nocache_test_results //... 2>&1 | tail -n 60
bazel_status=${PIPESTATUS[0]}
# 0 = all passed; 3 = some tests failed; 4 = no tests; anything else = build or analysis failure.
exec bash tools/count_tests.sh "$bazel_status"
