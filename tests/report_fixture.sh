# Shared by the report tests: makes one result set of every kind `kvsim report` reads into $tmp/results,
# from the bundled Mooncake trace and a small synthetic attention trace. Needs $kvsim, $trace and $tmp;
# sets $res. Sourced after cli_test_lib.sh.
res="$tmp/results"
mkdir -p "$res"
cat >"$res/slo.textproto" <<'CFG'
slo { ttft_ms: 2000 tpot_ms: 100 }
cluster { num_replicas: 4 router: ROUTER_KIND_CACHE_AWARE }
CFG
expect 0 "$kvsim" replay --trace="$trace" --out="$res/one_gpu"
expect 0 "$kvsim" replay --trace="$trace" --config="$res/slo.textproto" --out="$res/four_gpus"
expect 0 "$kvsim" cache --trace="$trace" --policy=lru,s3fifo,belady --capacity_blocks=1000,4000,16000 \
  --out="$res/cache"
expect 0 "$kvsim" mrc --trace="$trace" --sample_rate=0.1 --out="$res/mrc_lru.csv"
expect 0 "$kvsim" sweep --trace="$trace" --grid="policy=lru,sieve capacity_blocks=2000:8000:x2" \
  --out="$res/sweep" --threads=1
expect 0 "$kvsim" synth_attention --out="$res/t.kvat" --synth_prompt_len=512 --synth_decode_steps=8
expect 0 "$kvsim" quality --trace="$res/t.kvat" --policies=h2o,streaming_llm --budgets=32,64,128 \
  --out="$res/quality" --threads=1
