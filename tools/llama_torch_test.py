#!/usr/bin/env python3
"""Tests for tools/llama_torch.py (skips with a message where torch is not importable).

- safetensors: a file assembled by hand byte for byte reads back; write/read round trips for F32/F16/BF16;
  truncated files and bad dtypes are refused naming the tensor.
- rotary: hand-computed cos/sin for the default and linear types, the llama3 frequency bands by their
  definition, and the rotate_half convention on a unit vector.
- RMSNorm on a hand case.
- the batched forward against an independent per-position numpy implementation (loops over heads and keys),
  the KV-cached greedy decode against full recomputation, on the committed tiny configs.
- the committed reference files are reproduced by the code within 1e-5 relative.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile


def _reexec_with_system_python():
    """Debian's python3-torch lives in /usr/bin/python3's dist-packages; another python3 first on PATH
    (a version manager's) does not see it."""
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        probe = subprocess.run(["/usr/bin/python3", "-c", "import torch, numpy"], capture_output=True)
        if probe.returncode == 0:
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)


try:
    import numpy as np
    import torch
except ImportError:
    _reexec_with_system_python()
    print("SKIP: torch/numpy not importable (install python3-torch python3-numpy); llama_torch not tested")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_torch as lt  # noqa: E402

ROOT = os.path.dirname(HERE)
TESTDATA = os.path.join(ROOT, "sim", "eval", "testdata")


def check_safetensors(tmp):
    # By hand: one F32 tensor [2] = (1.5, -2) and one F16 tensor [1] = 0.5.
    header = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "F16", "shape": [1], "data_offsets": [8, 10]}}).encode()
    data = struct.pack("<Q", len(header)) + header + struct.pack("<ff", 1.5, -2.0) + struct.pack("<e", 0.5)
    path = os.path.join(tmp, "hand.safetensors")
    open(path, "wb").write(data)
    t = lt.load_safetensors(path)
    assert t["a"].tolist() == [1.5, -2.0] and t["a"].dtype == torch.float32, t
    assert t["b"].tolist() == [0.5] and t["b"].dtype == torch.float16, t
    # bf16 1.0 is 0x3F80; -3.0 is 0xC040.
    header = json.dumps({"c": {"dtype": "BF16", "shape": [2, 1], "data_offsets": [0, 4]}}).encode()
    open(path, "wb").write(struct.pack("<Q", len(header)) + header + struct.pack("<HH", 0x3F80, 0xC040))
    c = lt.load_safetensors(path)["c"]
    assert c.dtype == torch.bfloat16 and c.float().flatten().tolist() == [1.0, -3.0], c
    # Round trips.
    g = torch.Generator().manual_seed(3)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        src = {"x.weight": torch.randn(3, 5, generator=g).to(dtype), "y": torch.randn(7, generator=g).to(dtype)}
        lt.save_safetensors(path, src, {"format": "pt"})
        raw = open(path, "rb").read()
        (hlen,) = struct.unpack("<Q", raw[:8])
        assert (8 + hlen) % 8 == 0, hlen
        back = lt.load_safetensors(path)
        for k in src:
            assert back[k].dtype == dtype and torch.equal(back[k].view(-1).float(), src[k].view(-1).float()), k
    # Truncated: refused naming the tensor.
    open(path, "wb").write(raw[:-3])
    try:
        lt.load_safetensors(path)
        raise AssertionError("truncated file accepted")
    except lt.FormatError as e:
        assert "tensor y" in str(e) and "truncated" in str(e), e
    header = json.dumps({"q": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}).encode()
    open(path, "wb").write(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    try:
        lt.load_safetensors(path)
        raise AssertionError("I64 accepted")
    except lt.FormatError as e:
        assert "tensor q" in str(e) and "I64" in str(e), e


def base_cfg(**kw):
    d = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
         "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 11,
         "rope_theta": 10000.0, "max_position_embeddings": 64}
    d.update(kw)
    return lt.LlamaConfig(d)


def check_rotary():
    # head_dim 4, theta 10000: inv_freq = [1, 10000^-0.5 = 0.01].
    cfg = base_cfg()
    inv, scale = lt.rope_inv_freq(cfg)
    assert scale == 1.0 and abs(inv[0] - 1.0) < 1e-7 and abs(inv[1] - 0.01) < 1e-9, inv
    cos, sin = lt.rope_cos_sin(cfg, torch.tensor([3]))
    want_cos = [math.cos(3), math.cos(0.03), math.cos(3), math.cos(0.03)]
    want_sin = [math.sin(3), math.sin(0.03), math.sin(3), math.sin(0.03)]
    assert max(abs(a - b) for a, b in zip(cos[0].tolist(), want_cos)) < 1e-6, cos
    assert max(abs(a - b) for a, b in zip(sin[0].tolist(), want_sin)) < 1e-6, sin
    # rotate_half: q = e0 at angle 3 -> (cos3, 0, sin3, 0): the pair is (dim i, dim i + head_dim/2).
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    r = lt.apply_rotary(q, cos, sin)[0].tolist()
    assert max(abs(a - b) for a, b in zip(r, [math.cos(3), 0.0, math.sin(3), 0.0])) < 1e-6, r
    # Linear x4: position 12 behaves as position 3.
    lin = base_cfg(rope_scaling={"rope_type": "linear", "factor": 4.0})
    c2, s2 = lt.rope_cos_sin(lin, torch.tensor([12]))
    assert torch.allclose(c2, cos, atol=1e-6) and torch.allclose(s2, sin, atol=1e-6)
    # llama3 with head_dim 16, theta 10000, factor 8, original 32, low 1, high 4: wavelengths 2*pi/inv_freq;
    # < 8: unchanged; > 32: divided by 8; between: smooth = (32/wavelen - 1)/3, (1-smooth)*f/8 + smooth*f.
    l3 = base_cfg(head_dim=16, hidden_size=32, rope_scaling={"rope_type": "llama3", "factor": 8.0,
                  "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32})
    got, _ = lt.rope_inv_freq(l3)
    for i in range(8):
        f = 10000.0 ** (-2.0 * i / 16)
        wl = 2 * math.pi / f
        if wl < 8:
            want = f
        elif wl > 32:
            want = f / 8
        else:
            sm = (32 / wl - 1) / 3
            want = (1 - sm) * f / 8 + sm * f
        assert abs(float(got[i]) - want) <= 1e-6 * want, (i, float(got[i]), want)
    bands = [2 * math.pi / (10000.0 ** (-2.0 * i / 16)) for i in range(8)]
    assert any(8 <= w <= 32 for w in bands) and any(w > 32 for w in bands) and any(w < 8 for w in bands)
    # dynamic: unchanged up to max_position_embeddings, larger base beyond.
    dyn = base_cfg(rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    assert torch.equal(lt.rope_inv_freq(dyn, 64)[0], inv)
    b = 10000.0 * ((2.0 * 128 / 64) - 1) ** (4 / 2)
    assert abs(float(lt.rope_inv_freq(dyn, 128)[0][1]) - b ** -0.5) < 1e-9
    # yarn: attention factor 0.1 ln(4) + 1 multiplies cos and sin.
    yarn = base_cfg(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16})
    _, ys = lt.rope_inv_freq(yarn)
    assert abs(ys - (0.1 * math.log(4) + 1)) < 1e-12, ys


def check_rms_norm():
    x = torch.tensor([[3.0, 4.0]])
    w = torch.tensor([1.0, 2.0])
    got = lt.rms_norm(x, w, 0.0)[0].tolist()
    r = math.sqrt((9 + 16) / 2)
    assert abs(got[0] - 3 / r) < 1e-6 and abs(got[1] - 8 / r) < 1e-6, got


def numpy_forward(model, ids):
    """Independent per-position implementation in float64: loops over positions, heads and keys."""
    cfg = model.cfg
    P = {name: t.detach().double().numpy() for name, t in model.state().items()}
    nh, nkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    T = len(ids)
    inv = 1.0 / (cfg.rope_theta ** (np.arange(0, hd, 2) / hd))
    if cfg.rope_type != "default":
        inv = lt.rope_inv_freq(cfg, T)[0].double().numpy()
    scale = lt.rope_inv_freq(cfg, T)[1]

    def rope(v, pos):
        out = np.empty_like(v)
        h = hd // 2
        for i in range(h):
            a = pos * inv[i]
            c, s = math.cos(a) * scale, math.sin(a) * scale
            out[i] = v[i] * c - v[i + h] * s
            out[i + h] = v[i + h] * c + v[i] * s
        return out

    def norm(v, w):
        return v / math.sqrt(np.mean(v * v) + cfg.rms_norm_eps) * w

    x = [P["model.embed_tokens.weight"][t].copy() for t in ids]
    for layer in range(cfg.num_hidden_layers):
        pre = "model.layers.%d." % layer
        ks, vs, qs = [], [], []
        for t in range(T):
            h = norm(x[t], P[pre + "input_layernorm.weight"])
            q = P[pre + "self_attn.q_proj.weight"] @ h
            k = P[pre + "self_attn.k_proj.weight"] @ h
            v = P[pre + "self_attn.v_proj.weight"] @ h
            if cfg.qkv_bias:
                q = q + P[pre + "self_attn.q_proj.bias"]
                k = k + P[pre + "self_attn.k_proj.bias"]
                v = v + P[pre + "self_attn.v_proj.bias"]
            qs.append([rope(q[j * hd:(j + 1) * hd], t) for j in range(nh)])
            ks.append([rope(k[j * hd:(j + 1) * hd], t) for j in range(nkv)])
            vs.append([v[j * hd:(j + 1) * hd] for j in range(nkv)])
        new = []
        for t in range(T):
            heads = []
            for j in range(nh):
                g = j // (nh // nkv)
                scores = [float(qs[t][j] @ ks[s][g]) / math.sqrt(hd) for s in range(t + 1)]
                m = max(scores)
                e = [math.exp(sc - m) for sc in scores]
                z = sum(e)
                heads.append(sum(e[s] / z * vs[s][g] for s in range(t + 1)))
            o = P[pre + "self_attn.o_proj.weight"] @ np.concatenate(heads)
            if cfg.o_bias:
                o = o + P[pre + "self_attn.o_proj.bias"]
            y = x[t] + o
            h = norm(y, P[pre + "post_attention_layernorm.weight"])
            gate = P[pre + "mlp.gate_proj.weight"] @ h
            up = P[pre + "mlp.up_proj.weight"] @ h
            new.append(y + P[pre + "mlp.down_proj.weight"] @ (gate / (1 + np.exp(-gate)) * up))
        x = new
    head = P["model.embed_tokens.weight"] if cfg.tie_word_embeddings else P["lm_head.weight"]
    return np.stack([head @ norm(v, P["model.norm.weight"]) for v in x])


@torch.no_grad()
def check_forward():
    for name in ("tiny-llama3", "tiny-qwen2", "tiny-linear", "tiny-dynamic", "tiny-yarn"):
        model = lt.load_model(os.path.join(TESTDATA, name))
        ids = lt.default_prompts(model.cfg.vocab_size, 7)[0][:12]
        got = model.forward(torch.tensor([ids]))[0].detach().double().numpy()
        want = numpy_forward(model, ids)
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 2e-5, (name, err)
        err_step, cached, recomputed = lt.self_check(model, ids, 8)
        assert err_step < 2e-5, (name, err_step)
        assert cached == recomputed, (name, cached, recomputed)


@torch.no_grad()
def check_references():
    """The committed reference files are what the code computes now (to float32 rounding)."""
    for folder in (os.path.join(TESTDATA, "tiny-llama3"), os.path.join(TESTDATA, "tiny-qwen2"),
                   os.path.join(ROOT, "sim", "eval", "models", "kvsim-tiny")):
        name = os.path.basename(folder)
        ref = json.load(open(os.path.join(folder, "reference.json")))
        model = lt.load_model(folder)
        assert len(ref["greedy_ids"]) == 64 and len(ref["logits"]) == len(ref["prompt_ids"])
        got = model.forward(torch.tensor([ref["prompt_ids"]]))[0]
        want = torch.tensor(ref["logits"])
        err = float((got - want).abs().max() / want.abs().max())
        assert err < 1e-5, (name, err)
        gen, _ = lt.greedy_generate(model, ref["prompt_ids"], 64)
        assert gen == ref["greedy_ids"], name
        for case in ref["cases"]:
            got = model.forward(torch.tensor([case["prompt_ids"]]))[0, case["logits_start"]:]
            assert float((got - torch.tensor(case["logits"])).abs().max()) < 1e-5 * float(got.abs().max())


def check_bad_folder(tmp):
    folder = os.path.join(tmp, "m")
    cfg = base_cfg()
    model = lt.LlamaModel(cfg)
    model.init_random(1)
    lt.save_model(model, folder)
    tensors = lt.load_safetensors(os.path.join(folder, "model.safetensors"))
    del tensors["model.layers.0.mlp.up_proj.weight"]
    lt.save_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    try:
        lt.load_model(folder)
        raise AssertionError("missing tensor accepted")
    except lt.FormatError as e:
        assert "model.layers.0.mlp.up_proj.weight is missing" in str(e), e


def main():
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        check_safetensors(tmp)
        check_bad_folder(tmp)
    check_rotary()
    check_rms_norm()
    check_forward()
    check_references()
    print("PASS")


if __name__ == "__main__":
    main()
