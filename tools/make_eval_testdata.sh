#!/usr/bin/env bash
# Regenerates the random-weight tiny model folders in sim/eval/testdata/ and their reference files
# (deterministic: fixed seeds, one thread). Needs python3-torch. Run from the repository root:
#   tools/make_eval_testdata.sh
set -euo pipefail
PY=${PYTHON:-python3}
python3 -c 'import torch' 2>/dev/null || PY=/usr/bin/python3
D=sim/eval/testdata
# name dtype seed
for spec in "tiny-llama3 bf16 1" "tiny-qwen2 bf16 2" "tiny-linear fp16 10" "tiny-dynamic fp32 4" "tiny-yarn bf16 8"; do
  set -- $spec
  "$PY" tools/llama_torch.py init --config=$D/configs/$1.json --out=$D/$1 --seed=$3 --dtype=$2 --threads=1
  "$PY" tools/llama_torch.py reference --model=$D/$1 --out=$D/$1/reference.json --seed=$3 --last=16 --decode_logits=4 --threads=1
done
