#!/usr/bin/env bash
# Builds the `import kvsim` module (tools/python/) and installs it for the system Python, where
# pybind11-dev and python3-dev are present; otherwise says why not. Never fails the caller: the module is
# optional. It builds in the default configuration (the command line stays static): the module links
# Debian's shared Abseil/Protobuf/zstd, whose static archives are not position-independent.
set -u
cd "$(dirname "$0")/.."
python=/usr/bin/python3
if [ ! -x "$python" ] || ! ls /usr/include/python3*/Python.h >/dev/null 2>&1 || [ ! -f /usr/include/pybind11/pybind11.h ]; then
  echo "kvsim: Python module not built (needs /usr/bin/python3, python3-dev and pybind11-dev)"
  exit 0
fi
if ! bazel build //tools/python:kvsim.so; then
  echo "kvsim: Python module did not build; the command line is unaffected" >&2
  exit 0
fi
"$python" -c 'import numpy' 2>/dev/null ||
  echo "kvsim: note: the Python module returns columns as numpy arrays; install python3-numpy to use it"
site="$("$python" -c 'import site; print(site.getsitepackages()[0])')"
if mkdir -p "$site" 2>/dev/null && install -m 0644 bazel-bin/tools/python/kvsim.so "$site/kvsim.so" 2>/dev/null; then
  echo "kvsim: Python module installed as $site/kvsim.so ('import kvsim' in $python; in a virtual environment" \
    "made with 'python3 -m venv --system-site-packages', or with PYTHONPATH=$PWD/bazel-bin/tools/python)"
else
  echo "kvsim: Python module built at bazel-bin/tools/python/kvsim.so (not installed: $site is not writable;" \
    "use PYTHONPATH=$PWD/bazel-bin/tools/python)"
fi
