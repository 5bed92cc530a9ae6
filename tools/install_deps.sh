#!/usr/bin/env bash
# Installs the Debian packages kvsim builds with, when any is missing. Needs root (apt-get).
# Idempotent: when every package is present it does nothing and touches no network.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-rules-java bazel-platforms   # the build (Debian's Bazel 4.2.3)
  g++ pkg-config                                    # compiler, library discovery
  libabsl-dev                                       # Status/StatusOr, flags, strings, hash maps
  libprotobuf-dev protobuf-compiler                 # schemas: configs, traces, results
  libgtest-dev libgmock-dev                         # unit tests
  libbenchmark-dev                                  # speed benchmarks
  libsimdjson-dev                                   # JSON trace import
  libssl-dev                                        # SHA-256 (libcrypto) content digests that key sweep points
  nlohmann-json3-dev                                # JSON object model for every JSON file kvsim writes (no duplicate keys, typed values)
  libzstd-dev                                       # compressed native traces
  libeigen3-dev                                     # small linear algebra (quality path)
  libxgboost-dev                                    # gradient-boosted trees: per-prompt selection's predictors
  clang libclang-rt-14-dev                          # libFuzzer for the fuzzing campaign (tools/fuzz_campaign.sh)
  jq                                                # replay summaries in tools/published_points.sh
  chromium                                          # headless rendering test of the HTML report (skips without it)
  python3-torch python3-numpy                       # tools/llama_torch.py reference logits, tools/train_small_model.py
  libopenblas0-openmp                               # fast BLAS behind python3-torch (the default reference BLAS is ~15x slower)
  pybind11-dev python3-dev                          # the `import kvsim` Python module (tools/python/)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "kvsim: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "kvsim: installing packages needs root; run as root or install them yourself: ${missing[*]}" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
