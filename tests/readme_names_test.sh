#!/usr/bin/env bash
# The README's lists of names are the registries' own: every list `kvsim help names` prints (eviction
# policies, token policies and wrappers, trace formats, cost models, sweep modes) appears in README.md
# verbatim, in backquotes.
set -u
kvsim="$1"
readme="$2"
source tests/cli_test_lib.sh

"$kvsim" help names >"$tmp/names" 2>"$tmp/err" || fail "kvsim help names: $(cat "$tmp/err")"
for key in eviction_policies token_policies token_policy_wrappers trace_formats cost_models sweep_modes; do
  list="$(sed -n "s/^$key: //p" "$tmp/names")"
  [ -n "$list" ] || { fail "kvsim help names has no $key"; continue; }
  grep -qF -- "\`$list\`" "$readme" || fail "README.md does not list the $key as \`$list\`"
done
finish
