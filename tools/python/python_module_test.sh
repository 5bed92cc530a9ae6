#!/usr/bin/env bash
# Runs the Python module's tests with the system Python (the one python3-dev's headers belong to); skips
# with a message where it or the module is missing.
set -u
so="$1"
kvsim="$2"
python=/usr/bin/python3
[ -x "$python" ] || { echo "SKIP: no /usr/bin/python3"; exit 0; }
dir="${TEST_TMPDIR:-$(mktemp -d)}/pymod"
mkdir -p "$dir"
cp "$so" "$dir/kvsim.so"
export KVSIM_CLI="$PWD/$kvsim"
PYTHONPATH="$dir" exec "$python" -m unittest -v tools/python/python_module_test.py 2>&1
