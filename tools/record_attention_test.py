#!/usr/bin/env python3
"""Tests for tools/record_attention.py: the C++ reader (attention_trace_dump) must read what it writes.

Part 1 (always): the pure-Python writer on hand-made tensors, checked against the dump's sums.
Part 2 (only where torch and transformers import; SKIP otherwise): a tiny Llama-style model built from a
config with random weights (no download) is recorded; its keys and values must equal the model's own KV
cache (an independent path), and the dump must read the file.
"""

import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record_attention  # noqa: E402

# The C++ reader: Bazel's runfiles path, or KVSIM_ATTENTION_TRACE_DUMP (e.g. a carried binary on a machine
# that has torch but no build).
DUMP = os.environ.get("KVSIM_ATTENTION_TRACE_DUMP", os.path.join("traces", "attention", "attention_trace_dump"))


def dump(path):
    result = subprocess.run([DUMP, path], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError("attention_trace_dump failed: " + result.stderr)
    return result.stdout


def half(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def check_python_writer(tmp):
    # 1 layer kept (of 2), 1 KV head kept (of 2), group 2, d 4; prompt 3, 2 decode steps, queries from 1.
    n, d, g, prompt, steps, qstart = 5, 4, 2, 3, 2, 1
    keys = [((i * 7 + 3) % 11) / 4.0 - 1.0 for i in range(n * d)]
    values = [((i * 5 + 1) % 13) / 8.0 - 0.7 for i in range(n * d)]
    queries = [((i * 3 + 2) % 7) / 3.0 - 1.1 for i in range(g * (n - qstart) * d)]
    sums = [0.5 * (i + 1) for i in range(g * prompt)]
    header = {"model": "hand", "num_layers": 2, "num_query_heads": 4, "num_kv_heads": 2, "head_dim": d,
              "dtype": "fp16", "rope_base": 500000.0, "rope_scaling": 4, "rope_factor": 8.0,
              "kept_layers": [1], "kept_kv_heads": [0]}
    path = os.path.join(tmp, "hand.kvat")
    w = record_attention.TraceWriter(path, header)
    w.append({"prompt_len": prompt, "decode_steps": steps, "query_start": qstart, "token_ids": [1, 2, 3, 4, 5],
              "boundaries": [0, 3], "heads": [(1, 0, keys, values, queries, sums)]})
    w.close()
    out = dump(path)
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["model"] == "hand", out
    assert lines["layers"] == "2" and lines["query_heads"] == "4" and lines["kv_heads"] == "2", out
    assert lines["rope_base"] == "500000", out
    assert lines["samples"] == "1", out
    sample = [l for l in out.splitlines() if l.startswith("sample ")][0].split()
    assert sample[1:] == ["0", "prompt_len", "3", "decode_steps", "2", "query_start", "1", "tokens", "5"], sample
    head = [l for l in out.splitlines() if l.startswith("head ")][0].split()
    expect = {"keys": sum(map(half, keys)), "values": sum(map(half, values)),
              "queries": sum(map(half, queries)), "column_sums": sum(sums)}
    for name, want in expect.items():
        got = float(head[head.index(name) + 1])
        assert abs(got - want) <= 1e-5 * (1 + abs(want)), (name, got, want)
    # A truncated copy is refused.
    data = open(path, "rb").read()
    cut = os.path.join(tmp, "cut.kvat")
    open(cut, "wb").write(data[:-9])
    result = subprocess.run([DUMP, cut], capture_output=True, text=True)
    assert result.returncode != 0 and "truncated" in result.stderr, result.stderr
    # A value that fp16 cannot hold is refused before the sample is written, naming it.
    bad_keys = list(keys)
    bad_keys[6] = 70000.0
    w = record_attention.TraceWriter(os.path.join(tmp, "bad.kvat"), header)
    try:
        w.append({"prompt_len": prompt, "decode_steps": steps, "query_start": qstart,
                  "heads": [(1, 0, bad_keys, values, queries, sums)]})
        raise AssertionError("a key of 70000 was accepted at fp16")
    except ValueError as e:
        assert "sample 0, layer 1, kv head 0: keys[6] = 70000.0 is not finite at fp16" in str(e), e
    assert w.samples == 0
    print("python writer: OK")


def check_header():
    # rope_scaling {"rope_type": "default"} (as recent configs spell no scaling) is no scaling, factor 1, as
    # `kvsim record` reads it (sim/eval/llama_config.cc); llama3 keeps its factor; an unknown type is "other".
    from types import SimpleNamespace
    for scaling, want in (({"rope_type": "default"}, (0, 1.0)), (None, (0, 1.0)),
                          ({"rope_type": "llama3", "factor": 8.0}, (4, 8.0)),
                          ({"type": "longrope", "factor": 2.0}, (5, 2.0))):
        cfg = SimpleNamespace(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                              hidden_size=32, rope_theta=10000.0, rope_scaling=scaling)
        h = record_attention.header_for(SimpleNamespace(config=cfg), "m", [0], [0], "fp32")
        assert (h["rope_scaling"], h["rope_factor"]) == want, (scaling, h)
    print("header: OK")


def check_model(tmp):
    try:
        import torch
        import transformers
    except ImportError:
        print("SKIP: torch/transformers not importable; model recording not tested here")
        return
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    model = transformers.LlamaForCausalLM(config).eval()
    prompts = [([5, 17, 33, 2, 9, 41, 8, 8, 60, 3], [0]), ([7, 7, 1, 90, 45, 12], [0, 3])]
    path = os.path.join(tmp, "model.kvat")
    samples = record_attention.record(model, prompts, path, "tiny-llama", layers=[0, 2], kv_heads=[1],
                                      decode_steps=4, window=4, column_sums=True, dtype="fp32")
    # Independent path: the model's own KV cache after prefill + decode holds the same post-RoPE keys.
    ids = samples[0]["token_ids"]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids[:-1]]), use_cache=True)
    cache = out.past_key_values

    def cached(layer, which):  # across transformers versions: Cache.layers, key_cache lists, or tuples
        if hasattr(cache, "layers"):
            entry = cache.layers[layer]
            return (entry.keys if which == 0 else entry.values)[0]
        if hasattr(cache, "key_cache"):
            return (cache.key_cache if which == 0 else cache.value_cache)[layer][0]
        return cache[layer][which][0]

    for layer, kv_head, keys, values, queries, sums in samples[0]["heads"]:
        k_ref = cached(layer, 0)[kv_head].numpy()
        v_ref = cached(layer, 1)[kv_head].numpy()
        n = k_ref.shape[0]  # the last generated token has no key yet in this cache
        assert abs(keys[:n] - k_ref).max() < 1e-4, (layer, abs(keys[:n] - k_ref).max())
        assert abs(values[:n] - v_ref).max() < 1e-4, (layer, abs(values[:n] - v_ref).max())
        assert queries.shape == (2, 4 + 4, 16), queries.shape  # group 2, window 4 + 4 steps, d 16
        assert abs(sums.sum() - 2 * 10) < 1e-3  # each of the 10 prompt queries of 2 heads spreads mass 1
    out = dump(path)
    assert "samples 2" in out and "model tiny-llama" in out, out
    assert out.count("\nhead ") == 4, out  # 2 samples x 2 layers x 1 KV head
    print("model recording: OK")


def main():
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
        check_python_writer(tmp)
        check_header()
        check_model(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
