# Shared helpers of the command-line tests (tests/*cli_test.sh), sourced after `set -u`:
#   tmp              a scratch directory (Bazel's TEST_TMPDIR, or a fresh one)
#   fail MESSAGE     records a failed check and prints it; the test goes on
#   expect CODE CMD  runs CMD with stdout in $tmp/out and stderr in $tmp/err; checks its exit code
#   has TEXT FILE    checks that $tmp/FILE contains TEXT
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

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}
