#!/usr/bin/env bash
# Runs the Python module's tests with the system Python (the one python3-dev's headers belong to); skips
# with a message where it or the module is missing.
set -u
so="$1"
kvsim="$2"
python=/usr/bin/python3
if [ ! -x "$python" ]; then
  echo "SKIP: no /usr/bin/python3"
  if [ -n "${XML_OUTPUT_FILE:-}" ]; then
    printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" failures="0" errors="0">\n<testsuite name="python_module_test" tests="1">\n<testcase name="python_module" status="run" result="skipped"><skipped message="no /usr/bin/python3"/></testcase>\n</testsuite>\n</testsuites>\n' >"$XML_OUTPUT_FILE"
  fi
  exit 0
fi
dir="${TEST_TMPDIR:-$(mktemp -d)}/pymod"
mkdir -p "$dir"
cp "$so" "$dir/kvsim.so"
export KVSIM_CLI="$PWD/$kvsim"
PYTHONPATH="$dir" exec "$python" tools/python/python_module_test.py 2>&1
