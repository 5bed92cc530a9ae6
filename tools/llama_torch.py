#!/usr/bin/env python3
"""A plain PyTorch implementation of the Llama architecture, computed as Hugging Face transformers computes it.

It is the reference that kvsim's C++ forward pass (`kvsim eval`) is checked against, and the model that
tools/train_small_model.py trains. It needs only torch (Debian's python3-torch); transformers is not used.

Covered: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM. RMSNorm computed in float32
(x * rsqrt(mean(x^2) + eps), then cast back and multiplied by the weight), rotary embeddings in the
"rotate_half" convention (first half / second half of head_dim) with the rope_scaling variants none,
linear, dynamic (NTK), llama3 and yarn, grouped-query attention, SwiGLU MLP, tied or untied embeddings,
q/k/v biases (Qwen2; Llama's attention_bias also biases o_proj), Mistral's sliding window.

Hugging Face model folders (config.json + model.safetensors, or several *.safetensors with
model.safetensors.index.json) are read and written here directly: a safetensors file is an 8-byte little-endian
header length, a JSON header {name: {"dtype", "shape", "data_offsets"}}, then the raw little-endian tensors.
F32, F16 and BF16 are supported; weights are converted to float32 for computation (the reference is an
fp32 forward pass, as transformers runs with torch_dtype=float32).

Sub-commands:
  llama_torch.py init --config=CONFIG.json --out=DIR [--seed=N] [--dtype=fp32|fp16|bf16] [--std=0.2]
      random weights (normal(0, std), norms 1 + small noise, biases small) for a config; deterministic.
  llama_torch.py reference --model=DIR --out=FILE [--prompts=JSON] [--last=N] [--new_tokens=64]
      writes the reference file described in sim/eval/FORMATS.md:
      logits (float32) at the prompt positions and greedy generation of --new_tokens tokens.
      --prompts=TASKS.jsonl takes the first --max_prompts prompts of a task file; --text_prompt=TEXT puts
      BOS + TEXT's bytes first (byte-level models).
  llama_torch.py generate --model=DIR --prompt_ids=1,2,3 [--new_tokens=N]
      prints the greedy continuation's ids.
  llama_torch.py check --model=DIR
      self-checks: KV-cached decode vs full recomputation, batched forward vs a per-position loop.
"""

import argparse
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

# ----------------------------------------------------------------------------------------------------------
# safetensors, read and written with struct + json.

_ST_DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2)}
_TORCH_TO_ST = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
DTYPE_NAMES = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16, "float16": torch.float16,
               "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}


class FormatError(ValueError):
    """A model folder or file that is not what this module expects (the message names file and tensor)."""


def _tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float16:
        return t.numpy().astype("<f2").tobytes()
    if t.dtype == torch.float32:
        return t.numpy().astype("<f4").tobytes()
    raise FormatError("unsupported tensor dtype %s" % t.dtype)


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (F32/F16/BF16) to `path` in the safetensors format, names sorted, 8-byte aligned."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        if t.dtype not in _TORCH_TO_ST:
            raise FormatError("%s: tensor %s has unsupported dtype %s" % (path, name, t.dtype))
        data = _tensor_bytes(t)
        header[name] = {"dtype": _TORCH_TO_ST[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load_safetensors(path):
    """Reads a safetensors file into {name: tensor} in the stored dtype. Raises FormatError naming file/tensor."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise FormatError("%s: truncated (no 8-byte header length)" % path)
    (hlen,) = struct.unpack("<Q", data[:8])
    if 8 + hlen > len(data):
        raise FormatError("%s: header length %d exceeds file size %d" % (path, hlen, len(data)))
    try:
        header = json.loads(data[8:8 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FormatError("%s: header is not JSON: %s" % (path, e))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info.get("dtype")
        if dtype not in _ST_DTYPES:
            raise FormatError("%s: tensor %s has unsupported dtype %r (expected F32, F16 or BF16)" % (path, name, dtype))
        tdtype, size = _ST_DTYPES[dtype]
        shape = [int(s) for s in info["shape"]]
        begin, end = (int(x) for x in info["data_offsets"])
        count = 1
        for s in shape:
            count *= s
        if end - begin != count * size:
            raise FormatError("%s: tensor %s: data_offsets span %d bytes, shape %s needs %d" %
                              (path, name, end - begin, shape, count * size))
        if base + end > len(data):
            raise FormatError("%s: tensor %s: truncated (needs bytes up to %d, file has %d)" %
                              (path, name, base + end, len(data)))
        raw = bytearray(data[base + begin:base + end])
        if tdtype == torch.bfloat16:
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16) if count else torch.zeros(0, dtype=tdtype)
        else:
            t = torch.frombuffer(raw, dtype=tdtype) if count else torch.zeros(0, dtype=tdtype)
        out[name] = t.reshape(shape).clone()
    return out


# ----------------------------------------------------------------------------------------------------------
# Configuration.

class LlamaConfig:
    """The config.json keys the architecture uses, with Hugging Face's defaults."""

    def __init__(self, d):
        self.raw = dict(d)
        archs = d.get("architectures") or ["LlamaForCausalLM"]
        self.architecture = archs[0]
        if self.architecture not in ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"):
            raise FormatError("unsupported architecture %r" % self.architecture)
        self.hidden_size = int(d["hidden_size"])
        self.intermediate_size = int(d["intermediate_size"])
        self.num_hidden_layers = int(d["num_hidden_layers"])
        self.num_attention_heads = int(d["num_attention_heads"])
        self.num_key_value_heads = int(d.get("num_key_value_heads") or self.num_attention_heads)
        self.head_dim = int(d.get("head_dim") or self.hidden_size // self.num_attention_heads)
        self.vocab_size = int(d["vocab_size"])
        self.rms_norm_eps = float(d.get("rms_norm_eps", 1e-6))
        self.rope_theta = float(d.get("rope_theta", 10000.0))
        self.rope_scaling = d.get("rope_scaling")
        self.max_position_embeddings = int(d.get("max_position_embeddings", 2048))
        self.tie_word_embeddings = bool(d.get("tie_word_embeddings", False))
        self.hidden_act = d.get("hidden_act", "silu")
        if d.get("mlp_bias"):
            raise FormatError("mlp_bias=true is not supported")
        if self.hidden_act != "silu":
            raise FormatError("unsupported hidden_act %r (only silu)" % self.hidden_act)
        if self.architecture == "Qwen2ForCausalLM":
            self.qkv_bias, self.o_bias = True, False
        elif self.architecture == "LlamaForCausalLM":
            self.qkv_bias = self.o_bias = bool(d.get("attention_bias", False))
        else:
            self.qkv_bias = self.o_bias = False
        self.sliding_window = None
        if self.architecture == "MistralForCausalLM" and d.get("sliding_window"):
            self.sliding_window = int(d["sliding_window"])
        if self.architecture == "Qwen2ForCausalLM" and d.get("use_sliding_window"):
            raise FormatError("Qwen2 use_sliding_window=true is not supported")
        if self.num_attention_heads % self.num_key_value_heads:
            raise FormatError("num_attention_heads %d is not a multiple of num_key_value_heads %d" %
                              (self.num_attention_heads, self.num_key_value_heads))
        self.rope_type = "default"
        if self.rope_scaling:
            self.rope_type = self.rope_scaling.get("rope_type", self.rope_scaling.get("type", "default"))
            if self.rope_type not in ("default", "linear", "dynamic", "llama3", "yarn"):
                raise FormatError("unsupported rope_scaling type %r" % self.rope_type)

    def to_dict(self):
        return dict(self.raw)


# ----------------------------------------------------------------------------------------------------------
# Rotary embeddings (transformers' modeling_rope_utils, in float32).

def rope_inv_freq(cfg, seq_len=None):
    """Returns (inv_freq [head_dim/2] float32, attention_scaling) for the config's rope type.

    seq_len matters only for "dynamic": the base grows once the sequence is longer than
    max_position_embeddings (transformers recomputes it from max(position_ids) + 1 at each forward).
    """
    dim = cfg.head_dim
    base = cfg.rope_theta
    rs = cfg.rope_scaling or {}
    t = cfg.rope_type

    def default(b):
        return 1.0 / (b ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))

    if t == "default":
        return default(base), 1.0
    factor = float(rs["factor"])
    if t == "linear":
        return default(base) / factor, 1.0
    if t == "dynamic":
        mpe = cfg.max_position_embeddings
        sl = seq_len if (seq_len is not None and seq_len > mpe) else mpe
        b = base * ((factor * sl / mpe) - (factor - 1)) ** (dim / (dim - 2))
        return default(b), 1.0
    if t == "llama3":
        inv_freq = default(base)
        low_freq_factor = float(rs["low_freq_factor"])
        high_freq_factor = float(rs["high_freq_factor"])
        old_context_len = float(rs["original_max_position_embeddings"])
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        return torch.where(is_medium, smoothed, inv_freq_llama), 1.0
    if t == "yarn":
        original = int(rs.get("original_max_position_embeddings") or cfg.max_position_embeddings)
        attention_factor = rs.get("attention_factor")
        mscale = rs.get("mscale")
        mscale_all_dim = rs.get("mscale_all_dim")

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if attention_factor is None:
            if mscale and mscale_all_dim:
                attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
            else:
                attention_factor = get_mscale(factor)
        beta_fast = rs.get("beta_fast") or 32
        beta_slow = rs.get("beta_slow") or 1

        def correction_dim(num_rotations):
            return (dim * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

        low = max(math.floor(correction_dim(beta_fast)), 0)
        high = min(math.ceil(correction_dim(beta_slow)), dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)
        extrapolation = 1.0 / pos_freqs
        interpolation = 1.0 / (factor * pos_freqs)
        extra_factor = 1 - ramp
        inv_freq = interpolation * (1 - extra_factor) + extrapolation * extra_factor
        return inv_freq, float(attention_factor)
    raise FormatError("unsupported rope type %r" % t)


def rope_cos_sin(cfg, positions, seq_len=None):
    """cos, sin [T, head_dim] float32 for integer positions [T] (emb = cat(freqs, freqs))."""
    inv_freq, scaling = rope_inv_freq(cfg, seq_len)
    freqs = positions.float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * scaling, emb.sin() * scaling


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rotary(x, cos, sin):
    """x [..., T, head_dim]; cos/sin [T, head_dim]."""
    return x * cos + rotate_half(x) * sin


# ----------------------------------------------------------------------------------------------------------
# The model.

def rms_norm(x, weight, eps):
    dtype = x.dtype
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return weight * h.to(dtype)


def tensor_names(cfg):
    """The Hugging Face tensor names and shapes a config needs, in a fixed order."""
    hd, kvd = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    h, m, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    names = [("model.embed_tokens.weight", [v, h])]
    for i in range(cfg.num_hidden_layers):
        p = "model.layers.%d." % i
        names.append((p + "input_layernorm.weight", [h]))
        names.append((p + "self_attn.q_proj.weight", [hd, h]))
        if cfg.qkv_bias:
            names.append((p + "self_attn.q_proj.bias", [hd]))
        names.append((p + "self_attn.k_proj.weight", [kvd, h]))
        if cfg.qkv_bias:
            names.append((p + "self_attn.k_proj.bias", [kvd]))
        names.append((p + "self_attn.v_proj.weight", [kvd, h]))
        if cfg.qkv_bias:
            names.append((p + "self_attn.v_proj.bias", [kvd]))
        names.append((p + "self_attn.o_proj.weight", [h, hd]))
        if cfg.o_bias:
            names.append((p + "self_attn.o_proj.bias", [h]))
        names.append((p + "post_attention_layernorm.weight", [h]))
        names.append((p + "mlp.gate_proj.weight", [m, h]))
        names.append((p + "mlp.up_proj.weight", [m, h]))
        names.append((p + "mlp.down_proj.weight", [h, m]))
    names.append(("model.norm.weight", [h]))
    if not cfg.tie_word_embeddings:
        names.append(("lm_head.weight", [v, h]))
    return names


class LlamaModel(torch.nn.Module):
    """Parameters are held under their Hugging Face names (dots replaced in the ParameterDict keys)."""

    def __init__(self, cfg, dtype=torch.float32):
        super().__init__()
        self.cfg = cfg
        # Training on a GPU sets this: a forward without a cache (start_pos 0, no sliding window, no
        # observer) then runs torch's fused causal attention (F.scaled_dot_product_attention, torch >= 2.0)
        # instead of the explicit softmax below; the same function up to rounding. The reference files and
        # every comparison with kvsim use the explicit form.
        self.fused_attention = False
        self.params = torch.nn.ParameterDict()
        for name, shape in tensor_names(cfg):
            self.params[name.replace(".", "__")] = torch.nn.Parameter(torch.zeros(shape, dtype=dtype))

    def p(self, name):
        return self.params[name.replace(".", "__")]

    def state(self):
        return {name: self.p(name) for name, _ in tensor_names(self.cfg)}

    def lm_head(self):
        return self.p("model.embed_tokens.weight") if self.cfg.tie_word_embeddings else self.p("lm_head.weight")

    def init_random(self, seed, std=0.2):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, shape in tensor_names(self.cfg):
                t = self.p(name)
                if name.endswith("norm.weight"):
                    t.copy_(1.0 + 0.1 * torch.randn(shape, generator=g))
                elif name.endswith(".bias"):
                    t.copy_(0.1 * torch.randn(shape, generator=g))
                else:
                    t.copy_(std * torch.randn(shape, generator=g))

    # ---- forward with a KV cache (list of (k, v) per layer, rotated keys [B, kv_heads, S, head_dim]).
    def forward(self, ids, start_pos=0, cache=None, return_hidden=False, observer=None):
        """ids [B, T] int64 at positions start_pos..start_pos+T-1; cache: None or list to extend in place.
        observer: None, or called as observer(layer, q, k, v) with this call's post-rotary queries
        [B, heads, T, head_dim], keys and values [B, kv_heads, T, head_dim] (tools/record_attention.py).

        Returns logits [B, T, vocab] float32 (computed in the parameters' dtype, float32 normally).
        """
        cfg = self.cfg
        B, T = ids.shape
        nh, nkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        x = F.embedding(ids, self.p("model.embed_tokens.weight"))
        positions = torch.arange(start_pos, start_pos + T)
        cos, sin = rope_cos_sin(cfg, positions, seq_len=start_pos + T)  # on the CPU, then to x's device
        cos, sin = cos.to(x.device, x.dtype), sin.to(x.device, x.dtype)
        total = start_pos + T
        fused = (self.fused_attention and cache is None and start_pos == 0 and cfg.sliding_window is None and
                 observer is None)
        mask = None
        if not fused:
            # Causal mask over all keys 0..total-1 (the cache holds positions 0..start_pos-1).
            qpos = positions[:, None]
            kpos = torch.arange(total)[None, :]
            allowed = kpos <= qpos
            if cfg.sliding_window is not None:
                allowed = allowed & (kpos > qpos - cfg.sliding_window)
            mask = torch.zeros(T, total, dtype=x.dtype).masked_fill(~allowed, torch.finfo(x.dtype).min)
            mask = mask.to(x.device)
        for i in range(cfg.num_hidden_layers):
            pre = "model.layers.%d." % i
            h = rms_norm(x, self.p(pre + "input_layernorm.weight"), cfg.rms_norm_eps)
            q = F.linear(h, self.p(pre + "self_attn.q_proj.weight"),
                         self.p(pre + "self_attn.q_proj.bias") if cfg.qkv_bias else None)
            k = F.linear(h, self.p(pre + "self_attn.k_proj.weight"),
                         self.p(pre + "self_attn.k_proj.bias") if cfg.qkv_bias else None)
            v = F.linear(h, self.p(pre + "self_attn.v_proj.weight"),
                         self.p(pre + "self_attn.v_proj.bias") if cfg.qkv_bias else None)
            q = q.view(B, T, nh, hd).transpose(1, 2)
            k = k.view(B, T, nkv, hd).transpose(1, 2)
            v = v.view(B, T, nkv, hd).transpose(1, 2)
            q = apply_rotary(q, cos, sin)
            k = apply_rotary(k, cos, sin)
            if observer is not None:
                observer(i, q, k, v)
            if cache is not None:
                if len(cache) > i:
                    pk, pv = cache[i]
                    k = torch.cat([pk, k], dim=2)
                    v = torch.cat([pv, v], dim=2)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
            elif start_pos != 0:
                raise ValueError("start_pos > 0 needs a cache")
            group = nh // nkv
            kk = k.repeat_interleave(group, dim=1) if group > 1 else k
            vv = v.repeat_interleave(group, dim=1) if group > 1 else v
            if fused:
                attn = F.scaled_dot_product_attention(q, kk, vv, is_causal=True)
            else:
                scores = torch.matmul(q, kk.transpose(2, 3)) / math.sqrt(hd)
                scores = scores + mask
                probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
                attn = torch.matmul(probs, vv)
            attn = attn.transpose(1, 2).reshape(B, T, nh * hd)
            attn = F.linear(attn, self.p(pre + "self_attn.o_proj.weight"),
                            self.p(pre + "self_attn.o_proj.bias") if cfg.o_bias else None)
            x = x + attn
            h = rms_norm(x, self.p(pre + "post_attention_layernorm.weight"), cfg.rms_norm_eps)
            gate = F.linear(h, self.p(pre + "mlp.gate_proj.weight"))
            up = F.linear(h, self.p(pre + "mlp.up_proj.weight"))
            x = x + F.linear(F.silu(gate) * up, self.p(pre + "mlp.down_proj.weight"))
        x = rms_norm(x, self.p("model.norm.weight"), cfg.rms_norm_eps)
        if return_hidden:
            return x
        return F.linear(x, self.lm_head()).float()


@torch.no_grad()
def greedy_generate(model, prompt_ids, new_tokens, stop_id=None, return_logits=0):
    """Greedy decoding with the KV cache. Returns (ids, [logits rows of the first return_logits steps]).

    Step t's token is argmax of the logits after the prompt (t = 0) or after token t-1; ties go to the
    lowest id (torch.argmax). With stop_id, generation stops after producing it.
    """
    cache = []
    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids], dtype=torch.int64, device=device)
    logits = model.forward(ids, 0, cache)[0, -1]
    out, rows = [], []
    pos = len(prompt_ids)
    for t in range(new_tokens):
        if t < return_logits:
            rows.append(logits.clone())
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        if stop_id is not None and nxt == stop_id:
            break
        if t + 1 == new_tokens:
            break
        logits = model.forward(torch.tensor([[nxt]], dtype=torch.int64, device=device), pos, cache)[0, -1]
        pos += 1
    return out, rows


# ----------------------------------------------------------------------------------------------------------
# Model folders.

def load_model(folder, dtype=torch.float32):
    """Loads config.json and *.safetensors from a Hugging Face folder; weights converted to `dtype`."""
    cpath = os.path.join(folder, "config.json")
    try:
        with open(cpath) as f:
            cfg = LlamaConfig(json.load(f))
    except FileNotFoundError:
        raise FormatError("%s: missing" % cpath)
    except (KeyError, json.JSONDecodeError) as e:
        raise FormatError("%s: %s" % (cpath, e))
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors, origin = {}, {}
    for fn in files:
        path = os.path.join(folder, fn)
        if not os.path.exists(path):
            raise FormatError("%s: missing" % path)
        for name, t in load_safetensors(path).items():
            tensors[name] = t
            origin[name] = path
    model = LlamaModel(cfg, dtype)
    with torch.no_grad():
        for name, shape in tensor_names(cfg):
            if name not in tensors:
                raise FormatError("%s: tensor %s is missing" % (os.path.join(folder, files[0]), name))
            t = tensors[name]
            if list(t.shape) != shape:
                raise FormatError("%s: tensor %s has shape %s, expected %s" % (origin[name], name, list(t.shape), shape))
            model.p(name).copy_(t.to(dtype))
    model.stored_dtype = next(iter(tensors.values())).dtype if tensors else dtype
    return model


def save_model(model, folder, dtype=torch.float32, extra_config=None):
    """Writes config.json (torch_dtype set) and model.safetensors in `dtype`."""
    os.makedirs(folder, exist_ok=True)
    cfgd = model.cfg.to_dict()
    cfgd["torch_dtype"] = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}[dtype]
    if extra_config:
        cfgd.update(extra_config)
    tensors = {name: t.detach().to(dtype) for name, t in model.state().items()}
    save_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})
    tmp = os.path.join(folder, "config.json.tmp")
    with open(tmp, "w") as f:
        json.dump(cfgd, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(folder, "config.json"))


# ----------------------------------------------------------------------------------------------------------
# Reference files.

def _f32(x):
    """A float32 value printed so that it reads back to the same float32 (9 significant digits)."""
    return float("%.9g" % x)


def default_prompts(vocab_size, seed=1):
    """Three random prompts: the primary one (24 tokens), then 1 and 40 tokens."""
    g = torch.Generator().manual_seed(seed)
    return [[int(v) for v in torch.randint(0, vocab_size, (n,), generator=g)] for n in (24, 1, 40)]


@torch.no_grad()
def _case(model, prompt, last, new_tokens, decode_logits):
    logits = model.forward(torch.tensor([prompt], dtype=torch.int64))[0]
    n = len(prompt)
    start = 0 if last is None else max(0, n - last)
    gen, rows = greedy_generate(model, prompt, new_tokens, return_logits=new_tokens)
    # The smallest gap between the best and second-best logit over the greedy steps: a near tie is where
    # an implementation that differs by rounding could legitimately pick another token.
    margins = [float(torch.topk(r, 2).values[0] - torch.topk(r, 2).values[1]) for r in rows]
    return {
        "prompt_ids": [int(x) for x in prompt],
        "logits_start": start,
        "logits": [[_f32(v) for v in row.tolist()] for row in logits[start:]],
        "greedy_ids": gen,
        "decode_logits": [[_f32(v) for v in row.tolist()] for row in rows[:decode_logits]],
        "min_top2_margin": _f32(min(margins)) if margins else None,
    }


@torch.no_grad()
def make_reference(model, prompts, last=None, new_tokens=64, decode_logits=4, name=""):
    """The reference object of sim/eval/FORMATS.md: prompts[0] at the top level with every position's logits
    (the layout sim/eval/reference_logits_test.cc reads), the other prompts under "cases" (logits of the last `last` positions)."""
    first = _case(model, prompts[0], None, new_tokens, decode_logits)
    ref = {
        "format": "kvsim-llama-reference-1",
        "model": name,
        "compute_dtype": "float32",
        "vocab_size": model.cfg.vocab_size,
        "new_tokens": new_tokens,
    }
    ref.update(first)
    ref["cases"] = [_case(model, p, last, new_tokens, decode_logits) for p in prompts[1:]]
    return ref


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, path)


# ----------------------------------------------------------------------------------------------------------
# Self-checks (independent paths through the same weights).

@torch.no_grad()
def per_position_logits(model, prompt):
    """Logits at every position, one token at a time through the KV cache."""
    cache, rows = [], []
    for pos, tok in enumerate(prompt):
        rows.append(model.forward(torch.tensor([[tok]], dtype=torch.int64), pos, cache)[0, -1])
    return torch.stack(rows)


@torch.no_grad()
def self_check(model, prompt, new_tokens=16):
    full = model.forward(torch.tensor([prompt], dtype=torch.int64))[0]
    step = per_position_logits(model, prompt)
    err_step = float((full - step).abs().max() / full.abs().max())
    gen, _ = greedy_generate(model, prompt, new_tokens)
    # Full recomputation: each token from a fresh forward over prompt + generated so far.
    seq = list(prompt)
    recompute = []
    for _ in range(new_tokens):
        lg = model.forward(torch.tensor([seq], dtype=torch.int64))[0, -1]
        nxt = int(torch.argmax(lg))
        recompute.append(nxt)
        seq.append(nxt)
    return err_step, gen, recompute


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["init", "reference", "generate", "check"])
    ap.add_argument("--config")
    ap.add_argument("--model")
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--std", type=float, default=0.2)
    ap.add_argument("--dtype", default="fp32", choices=sorted(DTYPE_NAMES))
    ap.add_argument("--prompts", help="JSON list of prompt id lists, or a task JSONL file (its prompt_ids)")
    ap.add_argument("--max_prompts", type=int, default=3)
    ap.add_argument("--text_prompt", help="byte-level models: a text whose bytes (after BOS) are the first prompt")
    ap.add_argument("--last", type=int, default=None, help="logits of the last N prompt positions only")
    ap.add_argument("--new_tokens", type=int, default=64)
    ap.add_argument("--decode_logits", type=int, default=4)
    ap.add_argument("--prompt_ids")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    try:
        if a.command == "init":
            with open(a.config) as f:
                cfg = LlamaConfig(json.load(f))
            model = LlamaModel(cfg)
            model.init_random(a.seed, a.std)
            save_model(model, a.out, DTYPE_NAMES[a.dtype])
            return 0
        model = load_model(a.model)
        if a.command == "reference":
            if a.prompts is None:
                prompts = default_prompts(model.cfg.vocab_size, a.seed)
            elif a.prompts.endswith(".jsonl"):
                with open(a.prompts) as f:
                    prompts = [json.loads(line)["prompt_ids"] for line in f if line.strip()][:a.max_prompts]
            else:
                prompts = json.loads(a.prompts)
            if a.text_prompt is not None:
                # Byte-level models: BOS (256) + the text's bytes, as the primary (first) prompt.
                prompts = [[256] + list(a.text_prompt.encode("utf-8"))] + prompts
            ref = make_reference(model, prompts, a.last, a.new_tokens, a.decode_logits,
                                 os.path.basename(os.path.normpath(a.model)))
            write_json(a.out, ref)
            return 0
        if a.command == "generate":
            ids = [int(x) for x in a.prompt_ids.split(",")]
            print(",".join(str(x) for x in greedy_generate(model, ids, a.new_tokens)[0]))
            return 0
        if a.command == "check":
            prompt = default_prompts(model.cfg.vocab_size, a.seed)[2]
            err, gen, rec = self_check(model, prompt, 16)
            print("per-position vs batched max relative error %.3g" % err)
            print("cached greedy    %s" % gen)
            print("recomputed greedy %s" % rec)
            return 0 if err < 1e-5 and gen == rec else 1
    except FormatError as e:
        print("llama_torch: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
