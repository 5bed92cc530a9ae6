#!/usr/bin/env bash
# Peak resident memory of every trace command at two trace lengths: is it flat in the trace's length?
# Generates a multi-turn chat trace (presets/workloads/chat.textproto's shape with 32-token blocks and
# conversations capped at 8,192 tokens) of each length N, then measures with GNU time:
#   gen      writing the N-request trace as JSONL
#   import   JSONL -> native
#   inspect  the native trace
#   cache    lru and s3fifo at 16,384 and 131,072 blocks (4 points, one pass)
#   mrc      the one-pass LRU curve at 6 sizes within --memory_limit=$MRC_MEMORY_LIMIT (default 1GiB: a fixed
#            limit, so a longer trace gets a lower sampling rate, not more memory); mrc-sieve: sieve at the
#            same 6 sizes (cache replays)
#   replay   the serving simulation, default config
#   replay-closed  the same with workload.closed_loop_sessions (each turn issued when the previous finishes)
#   replay-vllm    replay with --vllm_json too (the vLLM benchmark_serving metrics)
#   compare, decompose, report   on the replay's --out folder (against itself)
#   sweep          the cache mode over cache's 4 points (lru and s3fifo at 16,384 and 131,072 blocks)
#   sweep-replay   the replay mode, one point (lru), one thread
#   capacity       the capacity grid, one point (one replica) at --target_rate=$CAPACITY_RATE (default 6.35
#                  requests/s: about the chat trace's own rate, so the replay is the trace's load)
#   import-bailian importing N chats in the Qwen-Bailian format (written here by a Python script: sessions
#                  of 5 turns, a new session every 5th chat, so a chat's parent is about N / 5 chats back and
#                  the importer must remember every chat's session)
# and prints each figure, then the ratio of peak RSS at the largest N to that at the smallest ("flat" when
# at most 1.25). Not a test: it takes minutes. COMMANDS="replay" (an environment variable) runs only
# those commands (the default set leaves out replay-closed, replay-vllm, sweep, sweep-replay, capacity and
# import-bailian; name them to run them) (gen always runs: the others read its trace, which gen then writes as native directly
# when import is not among them). Usage:
#   tools/bench_memory.sh [KVSIM] [WORKDIR] [N1 N2 ...]      (default N: 1000000 5000000)
set -euo pipefail
cd "$(dirname "$0")/.."
kvsim=${1:-bazel-bin/tools/kvsim}
work=${2:-$(mktemp -d)}
shift $(( $# > 2 ? 2 : $# ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 5000000)
mkdir -p "$work"
kvsim=$(realpath "$kvsim")

# Peak RSS (KiB) and wall seconds of a command, from GNU time; its output goes to $work/stdout.txt.
measure() {
  /usr/bin/time -f "%M %e" -o "$work/time.txt" "$@" > "$work/stdout.txt" 2> "$work/stderr.txt" ||
    { echo "failed: $*"; cat "$work/stderr.txt"; exit 1; }
  read -r rss_kib secs < "$work/time.txt"
}

commands=(gen import inspect cache mrc mrc-sieve replay)
if [ -n "${COMMANDS:-}" ]; then
  read -r -a commands <<< "gen ${COMMANDS//gen/}"
fi
declare -A peak
for n in "${sizes[@]}"; do
  spec="$work/chat_$n.textproto"
  sed -e "s/^num_requests: .*/num_requests: $n/" -e "s/^block_tokens: .*/block_tokens: 32/" \
    -e "s/max_context_tokens: .*/max_context_tokens: 8192/" presets/workloads/chat.textproto > "$spec"
  jsonl="$work/chat_$n.jsonl" native="$work/chat_$n.kvt"
  rm -f "$jsonl" "$native"
  for c in "${commands[@]}"; do
    case $c in
      gen)
        if [[ " ${commands[*]} " == *" import "* ]]; then
          measure "$kvsim" gen --spec="$spec" --out="$jsonl" --quiet
        else
          measure "$kvsim" gen --spec="$spec" --out="$native" --quiet
        fi ;;
      import) measure "$kvsim" import "$jsonl" "$native" ;;
      inspect) measure "$kvsim" inspect "$native" ;;
      cache) measure "$kvsim" cache --trace="$native" --policy=lru,s3fifo --capacity=16384,131072 --quiet ;;
      mrc) measure "$kvsim" mrc --trace="$native" --sizes=1024:1048576:x4 --memory_limit="${MRC_MEMORY_LIMIT:-1GiB}" ;;
      mrc-sieve) measure "$kvsim" mrc --trace="$native" --policy=sieve --sizes=1024:1048576:x4 --quiet ;;
      replay) measure "$kvsim" replay --trace="$native" --out="$work/replay_$n" ;;
      replay-closed)
        printf 'workload { closed_loop_sessions: true }\n' > "$work/closed_loop.textproto"
        measure "$kvsim" replay --config="$work/closed_loop.textproto" --trace="$native" --out="$work/replay_closed_$n" ;;
      compare | decompose | report)
        # They read a replay's folder (the replay step's, else one run here first, not measured).
        [ -d "$work/replay_$n" ] || "$kvsim" replay --trace="$native" --out="$work/replay_$n" > /dev/null 2>&1
        case $c in
          compare) measure "$kvsim" compare "$work/replay_$n" "$work/replay_$n" ;;
          decompose) measure "$kvsim" decompose "$work/replay_$n" "$work/replay_$n" ;;
          report) measure "$kvsim" report "$work/replay_$n" --out="$work/report_$n.html" ;;
        esac ;;
      sweep)
        rm -rf "$work/sweep_$n"  # a finished point would be read back, not run
        measure "$kvsim" sweep --trace="$native" --grid="policy=lru,s3fifo capacity_blocks=16384,131072" \
          --out="$work/sweep_$n" --quiet ;;
      sweep-replay)
        rm -rf "$work/sweep_replay_$n"
        measure "$kvsim" sweep --trace="$native" --mode=replay --grid="policy=lru" --threads=1 \
          --out="$work/sweep_replay_$n" --quiet ;;
      capacity)
        rm -rf "$work/capacity_$n"
        measure "$kvsim" capacity --trace="$native" --grid="cluster.num_replicas=1" \
          --target_rate="${CAPACITY_RATE:-6.35}" --out="$work/capacity_$n" ;;
      import-bailian)
        python3 - "$n" "$work/bailian_$n.jsonl" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
sessions = max(1, n // 5)  # chat c is turn c // sessions of session c % sessions
with open(path, "w") as f:
    for c in range(n):
        turn = c // sessions
        parent = c - sessions if turn > 0 else -1
        f.write('{"chat_id": %d, "parent_chat_id": %d, "timestamp": %.3f, "input_length": 32, '
                '"output_length": 8, "type": "text", "turn": %d, "hash_ids": [%d, %d]}\n'
                % (c, parent, c * 0.01, turn + 1, c % sessions, c))
PY
        measure "$kvsim" import "$work/bailian_$n.jsonl" "$work/bailian_$n.kvt"
        rm -f "$work/bailian_$n.jsonl" "$work/bailian_$n.kvt" ;;
      replay-vllm)
        measure "$kvsim" replay --trace="$native" --out="$work/replay_vllm_$n" --vllm_json="$work/vllm_$n.json" ;;
    esac
    peak[$c,$n]=$rss_kib
    printf '%-10s %9d requests  peak RSS %9.1f MiB  wall %7.1f s\n' "$c" "$n" "$(awk -v k="$rss_kib" 'BEGIN { print k / 1024 }')" "$secs"
    [ "$c" != mrc ] || grep "^kvsim mrc:" "$work/stderr.txt" | sed 's/^/  /' || true
  done
  if [ "$n" = "${sizes[0]}" ] && [[ " ${commands[*]} " == *" inspect "* ]]; then
    "$kvsim" inspect "$native" | grep -E "^(requests|block references|distinct blocks|approximate)" | sed 's/^/  /'
  fi
  rm -f "$jsonl"
done
first=${sizes[0]} last=${sizes[${#sizes[@]}-1]}
echo "peak RSS at $last / at $first requests (flat: <= 1.25):"
for c in "${commands[@]}"; do
  awk -v c="$c" -v a="${peak[$c,$first]}" -v b="${peak[$c,$last]}" \
    'BEGIN { r = b / a; printf "  %-10s %6.1f MiB -> %6.1f MiB  ratio %5.2f  %s\n", c, a / 1024, b / 1024, r, (r <= 1.25 ? "flat" : "GROWS") }'
done
