#!/usr/bin/env python3
"""Records attention traces (.kvat, see traces/attention/attention_trace_io.h) from a Hugging Face causal LM.

For each prompt it runs the prefill and then greedy decode steps, and stores, for the chosen layers and KV
heads: post-RoPE keys and values of every position, post-RoPE queries of the decode steps and of the last W
prompt positions (or all of them), and optionally the prefill attention column sums. `kvsim quality` reads
the result.

Capture: the modeling module's `apply_rotary_pos_emb` is wrapped, so q and k are taken exactly as the
attention kernel receives them (after RoPE, and after q/k norms where a model has them); values come from a
forward hook on each attention module's `v_proj`. This covers Llama, Mistral, Qwen2/Qwen3 and other models
whose attention follows the Llama layout (q_proj/k_proj/v_proj, apply_rotary_pos_emb). GQA: KV head g owns
query heads g*G .. g*G+G-1 (the Hugging Face layout).

Usage:
  python3 tools/record_attention.py --model meta-llama/Llama-3.1-8B --prompts prompts.jsonl \
      --out trace.kvat --layers 0,8,16,31 --kv_heads 0,1 --decode_steps 64 --device cuda --dtype fp16

With --forward llama_torch a local model folder (sim/eval/FORMATS.md) runs through tools/llama_torch.py's forward
pass instead (the PyTorch reference of `kvsim record`'s forward pass; no transformers needed):
  python3 tools/record_attention.py --forward llama_torch --model sim/eval/models/kvsim-tiny \
      --prompts sim/eval/testdata/tasks_512.jsonl --out trace.kvat --column_sums

Prompt file: JSON lines with "prompt" (text, tokenised with the model's tokenizer) or "token_ids" (a list;
"prompt_ids" as in a task file of `kvsim eval` is read the same way),
and optionally "boundaries" (positions where a question or turn starts); a line that is not JSON is a text
prompt.
"""

import argparse
import json
import struct
import sys
import zlib

MAGIC = b"KVSATTN\x01"
VERSION = 1
TAG_HEADER, TAG_SAMPLE, TAG_HEAD, TAG_END = 1, 2, 3, 4
DTYPES = {"fp16": 1, "bf16": 2, "fp32": 3}
ROPE_SCALING = {None: 0, "default": 0, "linear": 1, "dynamic": 2, "yarn": 3, "llama3": 4}  # else 5 (other)


# ------------------------------------------------------------------------------------------------
# Writer (pure Python + numpy): the same layout as AttentionTraceWriter.

def _tensor_bytes(array, dtype):
    """Little-endian bytes of `array` (a numpy array, or a flat list of floats without numpy)."""
    if isinstance(array, (list, tuple)):
        return _list_bytes(array, dtype)
    import numpy as np
    a = np.ascontiguousarray(array, dtype=np.float32)
    if dtype == "fp32":
        return a.astype("<f4").tobytes()
    if dtype == "fp16":
        return a.astype("<f2").tobytes()
    bits = a.view(np.uint32).astype(np.uint64)  # bf16: round to nearest even; NaN stays NaN
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded.astype("<u2").tobytes()


def _list_bytes(values, dtype):
    if dtype == "fp32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "fp16":
        return struct.pack("<%de" % len(values), *values)  # IEEE binary16, round half to even
    out = bytearray()
    for x in values:  # bf16: the top half of the float32, rounded to nearest even
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        if x != x:
            out += struct.pack("<H", (bits >> 16) | 0x40)
        else:
            out += struct.pack("<H", ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)
    return bytes(out)


# Magnitudes from which a float32 rounds to infinity at each payload type (round to nearest even).
_OVERFLOW = {"fp16": 65520.0, "bf16": 3.3961775292304433e38, "fp32": 3.4028235677973366e38}


def _first_unstorable(array, dtype):
    """Flat index of the first value of `array` that is not finite once stored at `dtype`, or None."""
    limit = _OVERFLOW[dtype]
    if isinstance(array, (list, tuple)):
        for i, x in enumerate(array):
            if not abs(x) < limit:  # NaN fails too
                return i
        return None
    import numpy as np
    bad = np.flatnonzero(~(np.abs(np.asarray(array, dtype=np.float64)) < limit))
    return int(bad[0]) if bad.size else None


class TraceWriter:
    """Streams a trace to `path`; the file is complete only after close()."""

    def __init__(self, path, header, zstd_level=0):
        self.path, self.header, self.samples = path, header, 0
        self.compressor = None
        if zstd_level > 0:
            import zstandard  # optional dependency
            self.compressor = zstandard.ZstdCompressor(level=zstd_level)
        self.tmp = "%s.tmp.%d" % (path, __import__("os").getpid())
        self.f = open(self.tmp, "wb")
        self.f.write(MAGIC + struct.pack("<II", VERSION, 0))
        h = header
        payload = struct.pack("<6I", h["num_layers"], h["num_query_heads"], h["num_kv_heads"], h["head_dim"],
                              DTYPES[h["dtype"]], h["rope_scaling"])
        payload += struct.pack("<2d", h["rope_base"], h["rope_factor"])
        payload += struct.pack("<I", 1 if h.get("synthetic") else 0)
        payload += struct.pack("<I", len(h["kept_layers"])) + struct.pack("<%di" % len(h["kept_layers"]), *h["kept_layers"])
        payload += struct.pack("<I", len(h["kept_kv_heads"])) + struct.pack("<%di" % len(h["kept_kv_heads"]), *h["kept_kv_heads"])
        model = h["model"].encode("utf-8")
        payload += struct.pack("<I", len(model)) + model
        self._record(TAG_HEADER, payload, False)

    def _record(self, tag, raw, compress):
        stored = self.compressor.compress(raw) if (compress and self.compressor) else raw
        flags = 1 if stored is not raw else 0
        self.f.write(struct.pack("<IIQQII", tag, flags, len(stored), len(raw), zlib.crc32(stored) & 0xFFFFFFFF, 0))
        self.f.write(stored)

    def append(self, sample):
        """sample: prompt_len, decode_steps, query_start, token_ids, boundaries, heads = [(layer, kv_head,
        keys [n,d], values [n,d], queries [G, n - query_start, d], column_sums [G, prompt_len] or None)]."""
        sums = sample["heads"][0][5] is not None
        for layer, kv_head, keys, values, queries, column_sums in sample["heads"]:  # before anything is written
            for name, array, dtype in (("keys", keys, self.header["dtype"]), ("values", values, self.header["dtype"]),
                                       ("queries", queries, self.header["dtype"]), ("column_sums", column_sums, "fp32")):
                i = None if array is None else _first_unstorable(array, dtype)
                if i is not None:
                    x = (array if isinstance(array, (list, tuple)) else __import__("numpy").ravel(array))[i]
                    raise ValueError("sample %d, layer %d, kv head %d: %s[%d] = %r is not finite at %s%s" % (
                        self.samples, layer, kv_head, name, i, float(x), dtype,
                        "; record with --dtype bf16 or fp32" if dtype == "fp16" else ""))
        payload = struct.pack("<3QI", sample["prompt_len"], sample["decode_steps"], sample["query_start"], 1 if sums else 0)
        ids = list(sample.get("token_ids") or [])
        payload += struct.pack("<I", len(ids)) + struct.pack("<%di" % len(ids), *ids)
        bounds = list(sample.get("boundaries") or [])
        payload += struct.pack("<I", len(bounds)) + struct.pack("<%dQ" % len(bounds), *bounds)
        self._record(TAG_SAMPLE, payload, False)
        for layer, kv_head, keys, values, queries, column_sums in sample["heads"]:
            raw = struct.pack("<II", layer, kv_head)
            raw += _tensor_bytes(keys, self.header["dtype"]) + _tensor_bytes(values, self.header["dtype"])
            raw += _tensor_bytes(queries, self.header["dtype"])
            if sums:
                raw += _tensor_bytes(column_sums, "fp32")
            self._record(TAG_HEAD, raw, True)
        self.samples += 1

    def close(self):
        import os
        self._record(TAG_END, struct.pack("<Q", self.samples), False)
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)


# ------------------------------------------------------------------------------------------------
# Capture.

class _Capture:
    """Collects post-RoPE q/k (via apply_rotary_pos_emb) and v (via v_proj hooks) per layer."""

    def __init__(self, model, layers):
        import importlib
        self.layers = set(layers)
        self.current = None
        self.q, self.k, self.v = {}, {}, {}
        self.handles = []
        self.attention = _attention_modules(model)
        self.module = importlib.import_module(type(self.attention[0]).__module__)
        self.original = self.module.apply_rotary_pos_emb

        def wrapped(q, k, *args, **kwargs):
            q2, k2 = self.original(q, k, *args, **kwargs)
            if self.current in self.layers:
                self.q.setdefault(self.current, []).append(q2.detach().float().cpu())
                self.k.setdefault(self.current, []).append(k2.detach().float().cpu())
            return q2, k2

        self.module.apply_rotary_pos_emb = wrapped
        for index, attn in enumerate(self.attention):
            def pre(module, args, index=index):
                self.current = index
            self.handles.append(attn.register_forward_pre_hook(pre))
            if index in self.layers:
                def hook(module, args, output, index=index):
                    self.v.setdefault(index, []).append(output.detach().float().cpu())
                self.handles.append(attn.v_proj.register_forward_hook(hook))

    def close(self):
        self.module.apply_rotary_pos_emb = self.original
        for h in self.handles:
            h.remove()


def _attention_modules(model):
    mods = [m for name, m in model.named_modules() if name.endswith("self_attn") and hasattr(m, "v_proj")]
    if not mods:
        raise SystemExit("record_attention: no Llama-style attention modules (self_attn with v_proj) found")
    return mods


def _config_value(config, *names, default=None):
    for n in names:
        v = getattr(config, n, None)
        if v is not None:
            return v
    return default


def record_prompt(model, token_ids, layers, kv_heads, decode_steps, window, all_prompt_queries, column_sums,
                  device):
    """Returns a sample dict (numpy arrays) for one prompt, decoding greedily."""
    import numpy as np
    import torch
    cfg = model.config
    num_heads = cfg.num_attention_heads
    num_kv = _config_value(cfg, "num_key_value_heads", default=num_heads)
    head_dim = _config_value(cfg, "head_dim", default=cfg.hidden_size // num_heads)
    group = num_heads // num_kv
    capture = _Capture(model, layers)
    generated = []
    try:
        with torch.no_grad():
            ids = torch.tensor([token_ids], device=device)
            out = model(input_ids=ids, use_cache=True)
            past = out.past_key_values
            for _ in range(decode_steps):
                nxt = out.logits[:, -1, :].argmax(dim=-1, keepdim=True)
                generated.append(int(nxt.item()))
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past = out.past_key_values
    finally:
        capture.close()
    q = {layer: torch.cat(capture.q[layer], dim=2)[0] for layer in layers}  # [num_heads, n, d]
    k = {layer: torch.cat(capture.k[layer], dim=2)[0] for layer in layers}  # [num_kv, n, d]
    n = len(token_ids) + decode_steps
    v = {layer: torch.cat(capture.v[layer], dim=1)[0].view(n, num_kv, head_dim).permute(1, 0, 2)
         for layer in layers}  # [n, num_kv * d] -> [num_kv, n, d]
    return _sample(token_ids, generated, q, k, v, layers, kv_heads, group, head_dim, window, all_prompt_queries,
                   column_sums), np


def _sample(token_ids, generated, q, k, v, layers, kv_heads, group, head_dim, window, all_prompt_queries,
            column_sums):
    """The sample dict from per-layer post-RoPE q [num_heads, n, d], k and v [num_kv, n, d] (float32)."""
    import torch
    prompt_len = len(token_ids)
    n = prompt_len + len(generated)
    query_start = 0 if all_prompt_queries else max(0, prompt_len - window)
    heads = []
    for layer in layers:
        assert q[layer].shape[1] == n and k[layer].shape[1] == n, (q[layer].shape, k[layer].shape, n)
        for g in kv_heads:
            qg = q[layer][g * group:(g + 1) * group]          # [G, n, d]
            kg = k[layer][g]
            sums = None
            if column_sums:
                logits = torch.einsum("gtd,id->gti", qg[:, :prompt_len], kg[:prompt_len]) / head_dim ** 0.5
                mask = torch.triu(torch.ones(prompt_len, prompt_len, dtype=torch.bool), diagonal=1)
                logits = logits.masked_fill(mask, float("-inf"))
                sums = torch.softmax(logits.double(), dim=-1).sum(dim=1).float().numpy()
            heads.append((layer, g, kg.numpy(), v[layer][g].numpy(), qg[:, query_start:].numpy(), sums))
    return {
        "prompt_len": prompt_len, "decode_steps": len(generated), "query_start": query_start,
        "token_ids": list(token_ids) + generated, "heads": heads,
    }


def record_prompt_llama_torch(model, token_ids, layers, kv_heads, decode_steps, window, all_prompt_queries,
                              column_sums):
    """record_prompt for a tools/llama_torch.py LlamaModel (a model folder read without transformers):
    q, k and v are taken post-RoPE from its forward pass's observer; greedy ties go to the lowest id."""
    import torch
    cfg = model.cfg
    layers_set = set(layers)
    q, k, v = {}, {}, {}

    def observe(layer, qs, ks, vs):
        if layer in layers_set:
            q.setdefault(layer, []).append(qs[0].detach().float())
            k.setdefault(layer, []).append(ks[0].detach().float())
            v.setdefault(layer, []).append(vs[0].detach().float())

    generated, cache = [], []
    with torch.no_grad():
        logits = model.forward(torch.tensor([token_ids], dtype=torch.int64), 0, cache, observer=observe)[0, -1]
        for step in range(decode_steps):
            nxt = int(torch.argmax(logits))
            generated.append(nxt)
            logits = model.forward(torch.tensor([[nxt]], dtype=torch.int64), len(token_ids) + step, cache,
                                   observer=observe)[0, -1]
    cat = lambda parts: {layer: torch.cat(parts[layer], dim=1) for layer in layers}  # noqa: E731
    return _sample(token_ids, generated, cat(q), cat(k), cat(v), layers, kv_heads,
                   cfg.num_attention_heads // cfg.num_key_value_heads, cfg.head_dim, window, all_prompt_queries,
                   column_sums)


def _model_config(model):
    """transformers' model.config, or a tools/llama_torch.py LlamaModel's cfg (the same attribute names)."""
    return model.config if hasattr(model, "config") else model.cfg


def header_for(model, name, layers, kv_heads, dtype):
    cfg = _model_config(model)
    num_heads = cfg.num_attention_heads
    scaling = getattr(cfg, "rope_scaling", None) or {}
    kind = scaling.get("rope_type", scaling.get("type"))
    return {
        "model": name, "num_layers": cfg.num_hidden_layers, "num_query_heads": num_heads,
        "num_kv_heads": _config_value(cfg, "num_key_value_heads", default=num_heads),
        "head_dim": _config_value(cfg, "head_dim", default=cfg.hidden_size // num_heads),
        "dtype": dtype, "rope_base": float(_config_value(cfg, "rope_theta", default=10000.0)),
        "rope_scaling": ROPE_SCALING.get(kind, 5),
        "rope_factor": float(scaling.get("factor", 1.0)) if ROPE_SCALING.get(kind, 5) else 1.0,
        "kept_layers": list(layers), "kept_kv_heads": list(kv_heads),
    }


def read_prompts(path, tokenizer):
    prompts = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                item = {"prompt": line}
            if isinstance(item, str):
                item = {"prompt": item}
            if "token_ids" in item or "prompt_ids" in item:  # prompt_ids: a task file (sim/eval/FORMATS.md)
                ids = [int(t) for t in item.get("token_ids", item.get("prompt_ids"))]
            elif "prompt" in item:
                if tokenizer is None:
                    raise SystemExit("%s:%d: text prompt but no tokenizer (give token_ids)" % (path, number))
                ids = tokenizer(item["prompt"])["input_ids"]
            else:
                raise SystemExit("%s:%d: expected \"prompt\" or \"token_ids\"" % (path, number))
            if not ids:
                raise SystemExit("%s:%d: empty prompt" % (path, number))
            prompts.append((ids, item.get("boundaries", [0])))
    return prompts


def record(model, prompts, out, name, layers=None, kv_heads=None, decode_steps=32, window=64,
           all_prompt_queries=False, column_sums=False, dtype="fp16", zstd_level=0, device="cpu"):
    """Records `prompts` [(token_ids, boundaries)] into `out`; returns the samples written."""
    cfg = _model_config(model)
    layers = sorted(layers if layers else range(cfg.num_hidden_layers))
    num_kv = _config_value(cfg, "num_key_value_heads", default=cfg.num_attention_heads)
    kv_heads = sorted(kv_heads if kv_heads else range(num_kv))
    writer = TraceWriter(out, header_for(model, name, layers, kv_heads, dtype), zstd_level)
    samples = []
    for ids, boundaries in prompts:
        if hasattr(model, "config"):
            sample, _ = record_prompt(model, ids, layers, kv_heads, decode_steps, window, all_prompt_queries,
                                      column_sums, device)
        else:
            sample = record_prompt_llama_torch(model, ids, layers, kv_heads, decode_steps, window,
                                               all_prompt_queries, column_sums)
        sample["boundaries"] = sorted(set(b for b in boundaries if 0 <= b < len(ids) + decode_steps))
        writer.append(sample)
        samples.append(sample)
    writer.close()
    return samples


def _ints(text):
    return [int(x) for x in text.split(",") if x.strip()] if text else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="Hugging Face model id or local directory")
    p.add_argument("--forward", choices=["transformers", "llama_torch"], default="transformers",
                   help="transformers: AutoModelForCausalLM; llama_torch: a local model folder through "
                        "tools/llama_torch.py (no transformers needed; prompts as token ids)")
    p.add_argument("--prompts", required=True, help="prompt file (JSON lines or text lines)")
    p.add_argument("--out", required=True, help="trace file to write (.kvat)")
    p.add_argument("--layers", default="", help="comma-separated layer indices to keep; empty = all")
    p.add_argument("--kv_heads", default="", help="comma-separated KV head indices to keep; empty = all")
    p.add_argument("--decode_steps", type=int, default=32, help="greedy decode steps per prompt (tokens)")
    p.add_argument("--window", type=int, default=64, help="last prompt positions whose queries are stored")
    p.add_argument("--all_prompt_queries", action="store_true", help="store the queries of every prompt position")
    p.add_argument("--column_sums", action="store_true", help="store prefill attention column sums (O(prompt^2))")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp16", help="payload element type")
    p.add_argument("--zstd", type=int, default=0, help="zstd level for tensor records (needs `zstandard`); 0 = off")
    p.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    p.add_argument("--torch_dtype", default="float32", help="model weights dtype: float32, float16, bfloat16")
    p.add_argument("--max_prompts", type=int, default=0, help="record at most this many prompts; 0 = all")
    args = p.parse_args(argv)
    import torch
    if args.forward == "llama_torch":
        import os
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import llama_torch
        try:
            model = llama_torch.load_model(args.model, getattr(torch, args.torch_dtype))
        except llama_torch.FormatError as e:
            raise SystemExit("record_attention: %s" % e)
        tokenizer = None
    else:
        import transformers
        tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            args.model, torch_dtype=getattr(torch, args.torch_dtype), attn_implementation="eager").to(args.device)
        model.eval()
    prompts = read_prompts(args.prompts, tokenizer)
    if args.max_prompts > 0:
        prompts = prompts[:args.max_prompts]
    record(model, prompts, args.out, args.model, _ints(args.layers), _ints(args.kv_heads), args.decode_steps,
           args.window, args.all_prompt_queries, args.column_sums, args.dtype, args.zstd, args.device)
    print("wrote %s: %d prompts" % (args.out, len(prompts)))


if __name__ == "__main__":
    sys.exit(main())
