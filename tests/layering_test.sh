#!/usr/bin/env bash
# The floors of docs/ARCHITECTURE.md hold: no include from a lower floor to a higher one, no circle of
# packages within a floor. It reads the source tree itself, found through the README's runfiles link.
set -u
readme="$(readlink -f "$1")"
root="$(dirname "$readme")"
[ -f "$root/docs/ARCHITECTURE.md" ] || { echo "FAIL: cannot find the workspace from $1"; exit 1; }
exec python3 "$root/tests/layering_check.py" "$root"
