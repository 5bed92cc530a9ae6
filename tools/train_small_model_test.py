#!/usr/bin/env python3
"""Tests for tools/train_small_model.py (skips with a message where torch is not importable).

Trains a tiny version (1 layer, hidden 32) for 30 steps, twice with one seed and once with another:
the loss must fall (mean of the last 5 logged steps well below the first 5), the same seed must give
byte-identical weights, another seed different ones, and the saved folder must load with llama_torch and
reproduce the training-time evaluation. The multi-query recall sequences are checked against their own text:
every answered span is the value of the needle for the key its question names. tools/train_gpu.sh's curriculum
runs in its smoke mode on the CPU (four chained stages).
"""

import json
import os
import re
import subprocess
import sys
import tempfile


def _reexec_with_system_python():
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        probe = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True)
        if probe.returncode == 0:
            os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)


try:
    import torch
except ImportError:
    _reexec_with_system_python()
    print("SKIP: torch not importable (install python3-torch); train_small_model not tested")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_torch as lt  # noqa: E402


def train(out, seed, eval_num=0):
    args = [sys.executable, os.path.join(HERE, "train_small_model.py"), "--out=" + out, "--seed=%d" % seed,
            "--threads=1", "--hidden=32", "--intermediate=64", "--layers=1", "--heads=2", "--kv_heads=1",
            "--stages=256:30", "--batch_tokens=1024", "--warmup=5", "--lr=1e-2", "--log_every=1",
            "--families=niah_single,variable_tracking", "--family_weights=1,1", "--recall_fraction=0.3",
            "--lm_weight=0.5",
            "--eval_num=%d" % eval_num, "--eval_lengths=256"]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return open(os.path.join(out, "model.safetensors"), "rb").read()


def check_recall_sequences():
    """Each masked run of a recall sequence is the value that an earlier needle gives the key its question
    names, followed by '.'; the mask covers nothing else; the sequence fits the length."""
    import train_small_model as tsm  # pylint: disable=import-outside-toplevel
    import make_tasks as mt  # pylint: disable=import-outside-toplevel
    data = tsm.Data(7, 0.0, [], [], 0.0, 1.0)
    answered = 0
    for length in (256, 512):
        for _ in range(40):
            ids, mask = data.sequence(length)
            assert len(ids) == len(mask) <= length and ids[0] == mt.BOS, (len(ids), len(mask))
            text = bytes(i for i in ids if i < 256).decode("ascii")
            assert bytes(ids[1:]).decode("ascii") == text  # no special ids after BOS
            runs = _runs(mask)
            assert runs, text
            for i, j in runs:
                answer = bytes(ids[i:j]).decode("ascii")
                before = bytes(ids[1:i]).decode("ascii")
                m = re.search(r"Answer: The magic number for (\w+) is: $", before)
                assert m, before[-80:]
                needle = re.findall(r" The magic number for %s is: (\d+)\." % m.group(1), before)
                assert len(needle) == 1, (m.group(1), needle)
                if j == len(ids) == length:  # cut by the length: a prefix of the value
                    assert (needle[0] + ".").startswith(answer), (answer, needle)
                    continue
                assert answer == needle[0] + ".", (answer, needle)
                answered += 1
    assert answered > 80, answered


def _runs(mask):
    """[(begin, end)] of the maximal runs of 1 in mask."""
    runs, i = [], 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def check_repeat_sequences():
    """"fixed": the masked bytes are those half the length back, and only the repeated half is masked;
    "random": one masked run of 23 bytes whose 24 bytes (with the one before it) occur earlier; "periodic":
    one masked run to the end of the sequence, each masked byte equal to the byte one period P back (P read
    off the text as the smallest shift under which the sequence after BOS repeats, 8 <= P <= (length-1)/3),
    the run starting at the second byte of the second period. All bytes after BOS among the alphabet's
    symbols: 32..95 for 64 symbols, every byte value for 256 (and, where enough bytes are drawn, each seen)."""
    import train_small_model as tsm  # pylint: disable=import-outside-toplevel
    import make_tasks as mt  # pylint: disable=import-outside-toplevel
    for offset, alphabet in (("fixed", 64), ("random", 64), ("random", 256), ("periodic", 64), ("periodic", 256)):
        data = tsm.Data(5, 0.0, [], [], 0.0, 0.0, 0.0, 1.0, offset, alphabet)
        seen = set()
        for length in (128, 257):
            for _ in range(20):
                ids, mask = data.sequence(length)
                assert data.last_kind == "repeat"
                assert len(ids) == len(mask) == length and ids[0] == mt.BOS
                seen.update(ids[1:])
                if alphabet == 64:
                    assert all(32 <= x < 96 for x in ids[1:]), ids
                else:
                    assert all(0 <= x < 256 for x in ids[1:]), ids
                runs = _runs(mask)
                assert len(runs) == 1, runs
                i, j = runs[0]
                if offset == "fixed":
                    half = (length - 1) // 2
                    assert (i, j) == (2 + half, 1 + 2 * half), (i, j, half)
                    assert all(ids[k] == ids[k - half] for k in range(i, j))
                elif offset == "random":
                    assert j - i == 23, (i, j)
                    seg = ids[i - 1:j]
                    assert any(ids[k:k + 24] == seg for k in range(1, i - 24)), "the repeat has no earlier copy"
                else:
                    body = ids[1:]
                    period = next(p for p in range(1, len(body)) if body[p:] == body[:-p])
                    assert 8 <= period <= (length - 1) // 3, period
                    assert (i, j) == (2 + period, length), (i, j, period)
                    assert all(ids[k] == ids[k - period] for k in range(i, j))
        # 40 sequences draw every symbol of the alphabet (a periodic one draws only a period's worth of bytes).
        if offset != "periodic":
            assert len(seen) == alphabet, (offset, alphabet, len(seen))


def check_dense_sequences():
    """Each masked run of a dense recall sequence follows " The magic number for KEY is: " and is the value
    of the one earlier unmasked needle for KEY, with its '.'; every sequence has at least one look-up."""
    import train_small_model as tsm  # pylint: disable=import-outside-toplevel
    import make_tasks as mt  # pylint: disable=import-outside-toplevel
    data = tsm.Data(9, 0.0, [], [], 0.0, 0.0, 1.0, 0.0)
    for length in (256, 512):
        for _ in range(20):
            ids, mask = data.sequence(length)
            assert data.last_kind == "dense"
            assert len(ids) == len(mask) <= length and ids[0] == mt.BOS
            runs = _runs(mask)
            assert runs, bytes(ids[1:]).decode("ascii")
            for i, j in runs:
                answer = bytes(ids[i:j]).decode("ascii")
                before = bytes(ids[1:i]).decode("ascii")
                m = re.search(r" The magic number for (\w+) is: $", before)
                assert m, before[-80:]
                first = before.index(" The magic number for %s is: " % m.group(1)) + 1  # index in ids
                value = re.match(r" The magic number for \w+ is: (\d{7})\.", before[first - 1:]).group(1)
                assert not any(mask[first:first + 40]), "the needle itself is masked"
                assert answer == value + ".", (answer, value)


def check_task_kinds():
    """A task sequence's kind names its family ("task/FAMILY"), drawn only among the families of nonzero
    weight; the answer mask covers the sequence's tail (the answer and EOS); with task_fraction 0 every
    sequence is plain text without a mask."""
    import train_small_model as tsm  # pylint: disable=import-outside-toplevel
    import make_tasks as mt  # pylint: disable=import-outside-toplevel
    data = tsm.Data(11, 1.0, ["niah_single", "variable_tracking", "dialogue_recall"], [1.0, 0.0, 1.0])
    kinds = set()
    for _ in range(30):
        ids, mask = data.sequence(512)
        kinds.add(data.last_kind)
        assert ids[-1] == mt.EOS and mask[-1] == 1, data.last_kind
        first = mask.index(1)
        assert all(mask[first:]) and not any(mask[:first]), mask
    assert kinds == {"task/niah_single", "task/dialogue_recall"}, kinds
    text = tsm.Data(11, 0.0, ["niah_single"], [1.0])
    for _ in range(5):
        ids, mask = text.sequence(256)
        assert text.last_kind == "text" and len(ids) == 256 and not any(mask), text.last_kind


def check_gpu_curriculum(out):
    """tools/train_gpu.sh's four stages in its smoke mode on the CPU: each stage continues the previous one's
    weights with its own data mixture, and OUT/model is the last stage's, evaluated at its length."""
    env = dict(os.environ, DEVICE="cpu", SMOKE="1", PYTHON=sys.executable)
    r = subprocess.run(["bash", os.path.join(HERE, "train_gpu.sh"), out], capture_output=True, text=True, env=env,
                       cwd=os.path.dirname(HERE))
    assert r.returncode == 0, r.stdout + r.stderr
    for prev, name in (("A", "B"), ("B", "C"), ("C", "D")):
        log = open(os.path.join(out, name, "train_log.txt")).read()
        assert "initialised from %s" % os.path.join(out, prev) in log, log
    args = json.loads(re.search(r"args: (\{.*\})", open(os.path.join(out, "A", "train_log.txt")).read()).group(1))
    assert args["repeat_fraction"] == 1 and args["repeat_offset"] == "periodic", args
    args = json.loads(re.search(r"args: (\{.*\})", open(os.path.join(out, "D", "train_log.txt")).read()).group(1))
    assert args["task_fraction"] == 0.8 and len(args["families"].split(",")) == 6, args
    assert open(os.path.join(out, "model", "model.safetensors"), "rb").read() == \
        open(os.path.join(out, "D", "model.safetensors"), "rb").read()
    results = json.load(open(os.path.join(out, "model", "train_results.json")))
    assert "niah_single@480" in results and "perplexity_nll_per_byte" in results, results


def main():
    torch.set_num_threads(1)
    check_recall_sequences()
    check_repeat_sequences()
    check_dense_sequences()
    check_task_kinds()
    with tempfile.TemporaryDirectory() as tmp:
        a = train(os.path.join(tmp, "a"), 3, eval_num=2)
        b = train(os.path.join(tmp, "b"), 3)
        c = train(os.path.join(tmp, "c"), 4)
        assert a == b, "the same seed gave different weights"
        assert a != c, "another seed gave the same weights"
        log = open(os.path.join(tmp, "a", "train_log.txt")).read()
        losses = [float(x) for x in re.findall(r"step \d+/30 len 256 lr \S+ loss (\S+)", log)]
        assert len(losses) == 30, log
        # The answer loss split into each span's first byte and the rest is logged (NaN for a step whose batch
        # drew no answer: plain text only), with both parts between the answer loss's bounds where finite.
        split = [[float(x) for x in row] for row in
                 re.findall(r"answer (\S+) \(first byte (\S+), rest (\S+)\)", log)]
        finite = [row for row in split if all(x == x for x in row)]
        assert len(split) == 30 and len(finite) >= 20, split
        assert all(min(f, r) - 1e-3 <= a <= max(f, r) + 1e-3 for a, f, r in finite), finite
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        assert last < 0.8 * first, (first, last)
        cfg = json.load(open(os.path.join(tmp, "a", "config.json")))
        assert cfg["vocab_size"] == 259 and cfg["torch_dtype"] == "float16" and cfg["num_hidden_layers"] == 1
        results = json.load(open(os.path.join(tmp, "a", "train_results.json")))
        assert results["steps"] == 30 and "niah_single@256" in results, results
        # The folder loads and its held-out perplexity matches what training reported.
        sys.path.insert(0, HERE)
        import train_small_model as tsm  # pylint: disable=import-outside-toplevel
        model = lt.load_model(os.path.join(tmp, "a"))
        tasks = tsm.eval_tasks(3, [256], 2, ["niah_single", "variable_tracking"])
        again = tsm.evaluate(model, tasks, lambda m: None)
        assert abs(again["perplexity_nll_per_byte"] - results["perplexity_nll_per_byte"]) < 1e-6, (again, results)
        assert again["niah_single@256"] == results["niah_single@256"]
        check_gpu_curriculum(os.path.join(tmp, "curriculum"))
    print("PASS")


if __name__ == "__main__":
    main()
