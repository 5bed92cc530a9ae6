#!/usr/bin/env python3
"""`kvsim record` (C++ forward pass) and tools/record_attention.py (tools/llama_torch.py's PyTorch forward pass)
record the same attention traces from the same model folder and tasks.

Part 1 (always): attention_trace_compare, the judge, on hand-written traces: equal ones agree, a key moved by
more than the tolerance (relative to its row's largest magnitude) and a different token id are reported by
name, a move within the tolerance is accepted.
Part 2 (where torch imports; SKIP otherwise): both recorders on the committed trained model (two real tasks,
every layer and KV head, column sums, a query window) and on random-weight tiny-llama3 (llama3 rope past its
original context, GQA, bf16 weights, one layer and KV head, every prompt query). Layout and metadata (model,
layers, heads, head_dim, rope, samples, prompt/decode lengths, query_start, token ids including the greedy
continuation, boundaries) must be equal; keys, values, queries and column sums within 1e-4 of each row's
largest magnitude. Both run in float32 from the same weights; they differ only in the order of float32
accumulation (Eigen's GEMM and softmax vs PyTorch's), which moves values by a few float32 ulps per layer
(observed ~1e-6), so 1e-4 - the bound the forward pass's logits meet against the same reference - leaves
room without hiding a real difference (a wrong rotation, head or position moves values by O(1)).
"""

import os
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
    import numpy  # noqa: F401
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    _reexec_with_system_python()
    HAVE_TORCH = False

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import record_attention  # noqa: E402  (pure Python at import)

KVSIM = os.path.join("tools", "kvsim")
COMPARE = os.path.join("traces", "attention", "attention_trace_compare")
RECORDER = os.path.join(HERE, "record_attention.py")
MODELS = os.path.join("sim", "eval", "models")
TESTDATA = os.path.join("sim", "eval", "testdata")


def compare(a, b):
    r = subprocess.run([COMPARE, a, b, "--rel_tol=1e-4"], capture_output=True, text=True)
    assert r.returncode in (0, 1), (r.returncode, r.stdout, r.stderr)
    return r.returncode, r.stdout


def write_hand(path, keys, token_ids):
    header = {"model": "hand", "num_layers": 1, "num_query_heads": 2, "num_kv_heads": 1, "head_dim": 4,
              "dtype": "fp32", "rope_base": 10000.0, "rope_scaling": 0, "rope_factor": 1.0,
              "kept_layers": [0], "kept_kv_heads": [0]}
    w = record_attention.TraceWriter(path, header)
    values = [0.25 * i - 1.0 for i in range(12)]
    queries = [0.5 - 0.125 * i for i in range(2 * 2 * 4)]  # group 2, queries at positions 1..2
    w.append({"prompt_len": 2, "decode_steps": 1, "query_start": 1, "token_ids": token_ids, "boundaries": [0],
              "heads": [(0, 0, keys, values, queries, [1.0, 1.0, 2.0, 0.0])]})
    w.close()


def check_compare(tmp):
    keys = [1.0, -2.0, 0.5, 4.0, 0.001, 0.002, -0.003, 0.004, 3.0, 3.0, 3.0, 3.0]
    base = os.path.join(tmp, "base.kvat")
    write_hand(base, keys, [1, 2, 3])
    rc, out = compare(base, base)
    assert rc == 0 and "agree within 0.0001" in out, out
    # Row 1's largest magnitude is 0.004: 3e-7 there is 7.5e-5 of it (accepted), 5e-7 is 1.25e-4 (refused),
    # though both are far below 1e-4 of the file's largest key.
    for delta, want_rc in ((3e-7, 0), (5e-7, 1)):
        moved = list(keys)
        moved[5] += delta
        other = os.path.join(tmp, "moved.kvat")
        write_hand(other, moved, [1, 2, 3])
        rc, out = compare(base, other)
        assert rc == want_rc, (delta, out)
        if want_rc:
            assert "sample 0 layer 0 kv_head 0: keys row 1 entry 1:" in out, out
    write_hand(os.path.join(tmp, "tokens.kvat"), keys, [1, 2, 4])
    rc, out = compare(base, os.path.join(tmp, "tokens.kvat"))
    assert rc == 1 and "sample 0: token_ids differ: [1,2,3] vs [1,2,4]" in out, out
    print("attention_trace_compare: OK")


def record_both(tmp, name, model, tasks, cc_flags, py_flags):
    cc = os.path.join(tmp, name + "-cc.kvat")
    py = os.path.join(tmp, name + "-py.kvat")
    r = subprocess.run([KVSIM, "record", "--model=" + model, "--tasks=" + tasks, "--out=" + cc,
                        "--dtype=fp32"] + cc_flags, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, RECORDER, "--forward", "llama_torch", "--model", model, "--prompts", tasks,
                        "--out", py, "--dtype", "fp32", "--column_sums"] + py_flags, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rc, out = compare(cc, py)
    assert rc == 0, "%s: kvsim record and record_attention.py disagree:\n%s" % (name, out)
    print("%s:\n%s" % (name, out.strip()))


def check_recorders(tmp):
    if not HAVE_TORCH:
        print("SKIP: torch/numpy not importable (install python3-torch python3-numpy); recorders not compared")
        return
    # The trained model on two real tasks (a needle and a multi-turn recall).
    tasks = os.path.join(tmp, "tasks.jsonl")
    with open(os.path.join(TESTDATA, "tasks_512.jsonl")) as f:
        lines = f.readlines()
    picked = [lines[0]] + [l for l in lines if '"dialogue_recall"' in l][:1]
    assert len(picked) == 2
    with open(tasks, "w") as f:
        f.writelines(picked)
    record_both(tmp, "kvsim-tiny", os.path.join(MODELS, "kvsim-tiny"), tasks,
                ["--decode_steps=8", "--query_window=16"], ["--decode_steps", "8", "--window", "16"])
    # tiny-llama3: prompts of 40 tokens (past the original context of 32), one layer and KV head, all queries.
    tasks = os.path.join(tmp, "short.jsonl")
    with open(tasks, "w") as f:
        for seed in (3, 7):
            f.write('{"id": "s%d", "task": "niah_single", "context_tokens": 40, "prompt_ids": [%s], '
                    '"answer_ids": [1], "max_new_tokens": 1}\n' % (
                        seed, ",".join(str((i * seed * 37 + 11) % 300) for i in range(40))))
    record_both(tmp, "tiny-llama3", os.path.join(TESTDATA, "tiny-llama3"), tasks,
                ["--decode_steps=6", "--query_window=0", "--layers=1", "--kv_heads=1"],
                ["--decode_steps", "6", "--all_prompt_queries", "--layers", "1", "--kv_heads", "1"])


def main():
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
        check_compare(tmp)
        check_recorders(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
