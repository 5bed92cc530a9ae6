#!/usr/bin/env bash
# Builds, on this (GPU-less) machine, the statically linked binaries that kernels/run_on_gpu.sh runs on a
# GPU machine, and copies them into gpu_bundle/ (ignored by git; carry it to the GPU machine). Abseil,
# Protobuf, GoogleTest, Benchmark and cudart are static; libcublasLt.so.13 is loaded from the CUDA
# installation there.
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=(tools:kvsim kernels:attention_kernels_test kernels:blaslt_gemm_test kernels:device_test
          kernels:attention_benchmark traces/attention:attention_trace_dump)
bazel build --config=static "${binaries[@]/#/\/\/}"
rm -rf gpu_bundle
mkdir -p gpu_bundle
for b in "${binaries[@]}"; do cp "bazel-bin/${b/://}" gpu_bundle/; done
chmod u+w gpu_bundle/*
revision=$(git rev-parse --short HEAD)
git diff --quiet HEAD || revision="${revision}-dirty"
echo "$revision" > gpu_bundle/REVISION
# Debian ships some libraries only as shared ones (simdjson; Benchmark on some releases): carry every shared
# library outside the C/C++ runtime (run_on_gpu.sh puts gpu_bundle/lib on the path).
mkdir -p gpu_bundle/lib
for b in "${binaries[@]}"; do
  for lib in $(ldd "gpu_bundle/${b#*:}" | awk '$3 ~ /^\// && $1 !~ /^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux)/ {print $3}'); do
    cp -L "$lib" gpu_bundle/lib/
  done
done
ls gpu_bundle/lib
du -ch gpu_bundle/* | tail -n 1
echo "dynamic libraries of kvsim:" && ldd gpu_bundle/kvsim | awk '{print "  " $1}'
