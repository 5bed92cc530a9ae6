# Shared helpers of the command-line tests (tests/*cli_test.sh), sourced after `set -u`:
#   tmp              a scratch directory (Bazel's TEST_TMPDIR, or a fresh one)
#   fail MESSAGE     records a failed check and prints it; the test goes on
#   expect CODE CMD  runs CMD with stdout in $tmp/out and stderr in $tmp/err; checks its exit code
#   has TEXT FILE    checks that $tmp/FILE contains TEXT
#   json_is FILE EXPR checks that the Python expression EXPR is true of j, the JSON object in $tmp/FILE
#   same_facts A B   checks that `kvsim inspect --json` reports the same facts (all but path and format) of
#                    traces A and B; needs $kvsim
#   finish           prints the verdict and exits 1 if any check failed
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

expect() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, want $want; stderr: $(cat "$tmp/err")"
}

has() { grep -q -- "$1" "$tmp/$2" || fail "missing '$1' in $2: $(head -c 600 "$tmp/$2")"; }

json_is() {
  python3 - "$tmp/$1" "$2" <<'PY' || fail "$1: expected $2: $(head -c 600 "$tmp/$1")"
import json, sys
j = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2], {"j": j}) else 1)
PY
}

same_facts() {
  "$kvsim" inspect "$1" --json >"$tmp/facts_a" && "$kvsim" inspect "$2" --json >"$tmp/facts_b" &&
    python3 - "$tmp/facts_a" "$tmp/facts_b" <<'PY' || fail "facts of $1 and $2 differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for j in (a, b):
    del j["path"], j["format"]
sys.exit(0 if a == b else 1)
PY
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}
