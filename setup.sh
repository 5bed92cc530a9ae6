#!/usr/bin/env bash
# kvsim, first command: installs missing Debian packages, builds kvsim, and runs the main job on the
# bundled Mooncake trace. Results go to out/ (see README.md). Idempotent.
set -euo pipefail
cd "$(dirname "$0")"

bash tools/install_deps.sh
bazel build //tools:kvsim
bash tools/install_python_module.sh
mkdir -p out
exec bash tools/main_job.sh out
