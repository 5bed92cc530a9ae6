#!/bin/bash
# Trains the larger closed-loop model (Llama architecture, byte-level, 4 layers, hidden 256, 8 query / 4 KV
# heads, about 3.2M parameters, positions up to 4096) on one GPU, in one command, with the curriculum that
# taught the committed 148K-parameter model its look-ups (sim/eval/models/kvsim-tiny/README.md), scaled up:
#   A  periodic copies of random bytes at 128 then 256 bytes (an induction head forms);
#   B  needle recall at 512 bytes (dense and multi-query recall in the tasks' wording, periodic copies kept);
#   C  all six task families (train_small_model.py's default, make_tasks.FAMILIES; the weights follow its
#      order) at 1024 bytes with plain text and the look-up sequences;
#   D  the same at 2048 bytes (the model's context), evaluated at 1024 and 2016 bytes.
# Each stage is tools/train_small_model.py continuing the previous one (--init_from) for a share of the
# time (MINUTES in all), its cosine schedule ending at its own limit (--time_schedule). Every stage's
# folder (config.json, model.safetensors, train_log.txt, train_results.json) stays under OUT_DIR, so a
# run cut short still leaves the stages it finished; OUT_DIR/model is stage D's.
#
# Usage (from the repository root):  tools/train_gpu.sh OUT_DIR
# Environment: MINUTES (training time of all four stages, default 7; a GPU lent for a session has about
#   15 minutes in all, start included), DEVICE (cuda; cpu for a smoke run), SMOKE=1 (a tiny model and a
#   few steps per stage: checks the pipeline on a CPU in under a minute; its model is of no use),
#   PYTHON (python3), COLLECT=DIR (at exit, also when interrupted: the last finished stage's config.json,
#   model.safetensors and train_results.json and every stage's log as train_log_<STAGE>.txt, flat in DIR:
#   eight files at most, as a GPU machine's $OUT takes them back).
# On a lent GPU (a session's `run`), from the repository root:
#   set -o pipefail; PYTHONUNBUFFERED=1 COLLECT=$OUT MINUTES=7 timeout 560 bash tools/train_gpu.sh /tmp/g 2>&1 | tail -40
# Not deterministic on a GPU (time-limited stages, GPU kernels): the logs are the record of a run.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: tools/train_gpu.sh OUT_DIR" >&2
  exit 2
fi
out=$1
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
minutes=${MINUTES:-7}
mkdir -p "$out"
collect() {
  [ -n "${COLLECT:-}" ] || return 0
  mkdir -p "$COLLECT"
  local last=""
  for s in A B C D; do
    [ -f "$out/$s/train_results.json" ] && last=$s
    for f in "$out/$s/train_log.txt" "$out/$s/train_log.txt.tmp"; do
      [ -f "$f" ] && cp "$f" "$COLLECT/train_log_$s.txt"
    done
  done
  if [ -n "$last" ]; then
    cp "$out/$last/config.json" "$out/$last/model.safetensors" "$out/$last/train_results.json" "$COLLECT/"
    echo "== collected stage $last's model and the logs in $COLLECT"
  fi
}
trap collect EXIT

if [ "${SMOKE:-0}" = 1 ]; then
  size=(--hidden=32 --intermediate=64 --layers=1 --heads=2 --kv_heads=1 --max_positions=1024)
  a_stages=64:3,128:3 b_stages=256:3 c_stages=512:3 d_stages=512:3
  tokens=2048 eval_c=(--eval_num=0) eval_d=(--eval_num=1 --eval_lengths=480)
  share=(0 0 0 0)  # no time limits: the step counts end each stage
else
  size=(--hidden=256 --intermediate=768 --layers=4 --heads=8 --kv_heads=4 --max_positions=4096)
  a_stages=128:600,256:2400 b_stages=512:4000 c_stages=1024:6000 d_stages=2048:6000
  tokens=65536 eval_c=(--eval_num=8 --eval_lengths=992) eval_d=(--eval_num=16 --eval_lengths=1024,2016)
  # Shares of MINUTES per stage (A, B, C, D), as minutes with two decimals.
  share=($(awk -v m="$minutes" 'BEGIN { printf "%.2f %.2f %.2f %.2f", m * 0.14, m * 0.18, m * 0.32, m * 0.36 }'))
fi

# stage NAME SHARE ARGS...: one train_small_model.py run into OUT_DIR/NAME, its log beside it.
stage() {
  local name=$1 limit=$2
  shift 2
  local timing=()
  if [ "$limit" != 0 ]; then timing=(--max_minutes="$limit" --time_schedule); fi
  echo "== stage $name: $* ${timing[*]}"
  "$py" tools/train_small_model.py --out="$out/$name" --device="$device" --seed=1 --threads=1 --log_every=50 \
    --copy_fraction=0 --answer_weight=2 --lm_weight=0.5 --repeat_offset=periodic --repeat_alphabet=256 \
    "${timing[@]}" "$@"
}

stage A "${share[0]}" "${size[@]}" --stages=$a_stages --batch_tokens=$((tokens / 2)) --lr=2e-3 --warmup=50 \
  --repeat_fraction=1 --eval_num=0
stage B "${share[1]}" --init_from="$out/A" --stages=$b_stages --batch_tokens=$((tokens / 2)) --lr=2e-3 --warmup=20 \
  --repeat_fraction=0.2 --dense_fraction=0.4 --recall_fraction=0.4 --families=niah_single,niah_multikey \
  --family_weights=1,1 --eval_num=0
stage C "${share[2]}" --init_from="$out/B" --stages=$c_stages --batch_tokens=$tokens --lr=1.5e-3 --warmup=20 \
  --repeat_fraction=0.1 --dense_fraction=0.1 --recall_fraction=0.1 --task_fraction=0.8 \
  --family_weights=1,3,3,1.5,1,4 "${eval_c[@]}"
stage D "${share[3]}" --init_from="$out/C" --stages=$d_stages --batch_tokens=$tokens --lr=1e-3 --warmup=20 \
  --repeat_fraction=0.1 --dense_fraction=0.1 --recall_fraction=0.1 --task_fraction=0.8 \
  --family_weights=1,3,3,1.5,1,4 "${eval_d[@]}"
rm -rf "$out/model"
cp -r "$out/D" "$out/model"
echo "== done: $out/model ($(grep -h "done in" "$out/D/train_log.txt"))"
