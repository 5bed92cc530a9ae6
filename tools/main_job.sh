#!/usr/bin/env bash
# The main job that ./setup.sh runs: the bundled Mooncake trace through kvsim. Writes under $1.
set -euo pipefail
out=${1:-out}
kvsim=bazel-bin/tools/kvsim
$kvsim version
$kvsim config > "$out/config.textproto"
echo "resolved config written to $out/config.textproto"
