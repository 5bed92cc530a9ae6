#!/bin/bash
# Inputs that used to crash, hang or be accepted and then refused later (issue: robustness). Each must be
# refused promptly with exit code 2 and a message naming the file and the field.
set -u
kvsim=$1
source tests/cli_test_lib.sh

# Values a config check let through that then crashed or were refused by replay: `kvsim config` runs the
# replay's checks (one function), so each is refused by both.
trace="$tmp/one.jsonl"
echo '{"timestamp": 0, "input_length": 100, "output_length": 2}' >"$trace"
check_config() {  # CONFIG_TEXT EXPECTED_MESSAGE
  printf '%s\n' "$1" >"$tmp/c.txtpb"
  expect 2 "$kvsim" config --config="$tmp/c.txtpb"
  has "$2" err
  expect 2 timeout 20 "$kvsim" replay --config="$tmp/c.txtpb" --trace="$trace" --trace_format=mooncake
  has "$2" err
}
check_config 'scheduler { preemption: PREEMPTION_MODE_SWAP }' 'c.txtpb:1:13: field scheduler.preemption: PREEMPTION_MODE_SWAP needs a host tier'
check_config 'cache { gpu_capacity_tokens: 5 }' 'c.txtpb:1:9: field cache.gpu_capacity_tokens: 5 tokens hold no whole block'
check_config 'scheduler { chunking: 99 }' 'c.txtpb:1:13: field scheduler.chunking: 99 is not a value of ChunkingMode'
check_config 'scheduler { preemption: -1 }' 'c.txtpb:1:13: field scheduler.preemption: -1 is not a value of PreemptionMode'
check_config 'device { peak_fp32_flops: 1 }' 'field device.peak_fp32_flops: must be 0 (not given) or in \[1000000000'
check_config 'device { compute_efficiency: 1e-300 }' 'field device.compute_efficiency: must be in \[0.001, 1\], got 1e-300'
check_config 'cost_model { iteration_overhead_ns: 9000000000000000000 }' 'field cost_model.iteration_overhead_ns'

# A calibration median of 1e308 ns (overflowed iteration times) and a hex number (taken as 16).
printf 'kind,dtype,query_tokens,in_features,out_features,median_ns\nlinear_gemm,bf16,1,4096,4096,1e308\n' >"$tmp/t.csv"
check_config "cost_model { kind: COST_MODEL_KIND_TABLE table_path: \"$tmp/t.csv\" }" 't.csv:2: linear_gemm point: median_ns must be a time in'
printf 'kind,dtype,query_tokens,in_features,out_features,median_ns\nlinear_gemm,bf16,0x10,4096,4096,10\n' >"$tmp/t.csv"
check_config "cost_model { kind: COST_MODEL_KIND_TABLE table_path: \"$tmp/t.csv\" }" "t.csv:2: column query_tokens: expected an integer, got '0x10'"

# 2^31 prompt tokens and no block hashes: 2^27 blocks (1.6 GB) before; refused where it is read.
echo '{"timestamp": 0, "input_length": 2147483648, "output_length": 1}' >"$tmp/big.jsonl"
expect 2 "$kvsim" cache --trace="$tmp/big.jsonl" --trace_format=mooncake --capacity_blocks=10
has 'big.jsonl:1: input_length: expected an integer in \[1, 16777216\], got 2147483648' err
expect 2 "$kvsim" replay --trace="$tmp/big.jsonl" --trace_format=mooncake
has 'big.jsonl:1: input_length: expected an integer in \[1, 16777216\]' err

# Workload specs: a gamma cv the sampler cannot represent (aborted) and a duration that rounded to
# "no limit" (never stopped).
classes='classes { chat { turns { fixed { value: 1 } } input_tokens { fixed { value: 10 } } output_tokens { fixed { value: 1 } } } }'
printf 'num_requests: 5\narrivals { gamma { cv: 1e-200 } rate_per_s: 1 }\n%s\n' "$classes" >"$tmp/g.txtpb"
expect 2 timeout 20 "$kvsim" gen --spec="$tmp/g.txtpb" --out="$tmp/g.jsonl"
has 'arrivals.gamma.cv: must be in \[0.01, 100\]' err
printf 'duration_s: 1e-10\narrivals { poisson {} rate_per_s: 1 }\n%s\n' "$classes" >"$tmp/g.txtpb"
expect 2 timeout 20 "$kvsim" gen --spec="$tmp/g.txtpb" --out="$tmp/g.jsonl"
has 'duration_s: must be 0 (no limit) or in \[1e-9, 4e9\] s, got 1e-10' err

# Devices where a file is needed: read whole before, /dev/zero exhausted memory or hung.
expect 2 timeout 20 "$kvsim" config --config=/dev/zero
has 'cannot read /dev/zero: not a regular file' err
expect 2 timeout 20 "$kvsim" config --config=/dev/null
has 'cannot read /dev/null: not a regular file' err
printf 'model_preset: "/dev/zero"\n' >"$tmp/c.txtpb"
expect 2 timeout 20 "$kvsim" config --config="$tmp/c.txtpb"
printf 'cost_model { kind: COST_MODEL_KIND_TABLE table_path: "/dev/zero" }\n' >"$tmp/c.txtpb"
expect 2 timeout 20 "$kvsim" config --config="$tmp/c.txtpb"
has 'cannot read /dev/zero: not a regular file' err

# `kvsim import X X` overwrote its input.
cp "$trace" "$tmp/same.jsonl"
expect 2 "$kvsim" import "$tmp/same.jsonl" "$tmp/same.jsonl" --trace_format=mooncake
has 'is the input' err
cmp -s "$trace" "$tmp/same.jsonl" || fail "import X X changed its input"

# A 10 MB cell was echoed whole into the error message.
{ printf 'kind,dtype,query_tokens,in_features,out_features,median_ns\nlinear_gemm,bf16,1,4096,4096,'; head -c 10000000 /dev/zero | tr '\0' 'a'; echo; } >"$tmp/t.csv"
printf 'cost_model { kind: COST_MODEL_KIND_TABLE table_path: "%s" }\n' "$tmp/t.csv" >"$tmp/c.txtpb"
expect 2 "$kvsim" config --config="$tmp/c.txtpb"
has '(10000000 bytes)' err
[ "$(wc -c <"$tmp/err")" -lt 2000 ] || fail "error message of $(wc -c <"$tmp/err") bytes"

# One exit code for refused input: a directory as the config exited 1 (an "internal" read error).
expect 2 "$kvsim" config --config="$tmp"
has 'not a regular file' err
expect 2 "$kvsim" inspect "$tmp/no-such-trace"
expect 2 "$kvsim" replay --trace="$trace" --trace_format=no-such-format

# SIGINT / SIGTERM in the middle of a streamed write left OUT.tmp.<pid> behind (44 GB after a series of
# timed-out runs): the temporary file is removed and the process still dies of the signal.
sed 's/num_requests: 50000/num_requests: 5000000/' presets/workloads/chat.textproto >"$tmp/long.txtpb"
for sig in TERM INT; do
  rm -f "$tmp"/long.kvt*
  # A background job of a non-interactive shell starts with SIGINT ignored: restore the default first.
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$kvsim" gen --spec="$tmp/long.txtpb" --out="$tmp/long.kvt" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 100); do compgen -G "$tmp/long.kvt.tmp.*" >/dev/null && break; sleep 0.05; done
  compgen -G "$tmp/long.kvt.tmp.*" >/dev/null || fail "SIG$sig: gen wrote no temporary file"
  kill -s "$sig" "$pid"
  wait "$pid"
  code=$?
  [ "$code" -gt 128 ] || fail "SIG$sig: gen exited $code, want death by the signal"
  ! compgen -G "$tmp/long.kvt*" >/dev/null || fail "SIG$sig left $(ls "$tmp"/long.kvt*)"
done

# SIGKILL cannot be caught: its OUT.tmp.<pid> stays until the next run writing into the same folder
# removes it (the pid no longer running, the file unmodified for 10 minutes).
mkdir -p "$tmp/runs"
"$kvsim" gen --spec="$tmp/long.txtpb" --out="$tmp/runs/long.kvt" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do compgen -G "$tmp/runs/long.kvt.tmp.*" >/dev/null && break; sleep 0.05; done
kill -s KILL "$pid"
wait "$pid" 2>/dev/null
stale="$tmp/runs/long.kvt.tmp.$pid"
[ -f "$stale" ] || fail "SIGKILL left no temporary file $stale to clean"
cp "$stale" "$tmp/runs/recent.kvt.tmp.$pid"  # as recent as a live writer's on another host: kept
touch -d '11 minutes ago' "$stale"
sed 's/num_requests: 50000/num_requests: 100/' presets/workloads/chat.textproto >"$tmp/short.txtpb"
expect 0 "$kvsim" gen --spec="$tmp/short.txtpb" --out="$tmp/runs/short.kvt"
[ ! -e "$stale" ] || fail "the next run into $tmp/runs left the stale $stale"
has "removed $stale, a temporary file left by a kvsim run that is no longer running" err
[ -f "$tmp/runs/recent.kvt.tmp.$pid" ] || fail "a temporary modified just now was removed"
[ -f "$tmp/runs/short.kvt" ] || fail "gen wrote no $tmp/runs/short.kvt"

finish
