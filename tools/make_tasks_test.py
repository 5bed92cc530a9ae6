#!/usr/bin/env python3
"""Tests for tools/make_tasks.py (pure Python; no torch needed).

- every family at two lengths: the prompt starts with BOS, is exactly context_tokens long, is all bytes,
  and its answer is really in it (each value at the place the question's key names; answer_position points at
  the first value; list answers in the order of appearance);
- the command line writes the same bytes for the same seed, different ones for another seed;
- the perplexity set comes from the held-out text only, not from the haystack text;
- the scorer's rules (prefix, cut at EOS, cut at max_new_tokens, nothing before the answer);
- FAMILIES is the C++ side's kTaskFamilies, in the same order (the outcome tables' task_family feature).
"""

import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_tasks as mt  # noqa: E402


def text_of(ids):
    assert all(0 <= i < 256 for i in ids), "non-byte id in text"
    return bytes(ids).decode("utf-8")


def check_instance(rec):
    ids = rec["prompt_ids"]
    assert ids[0] == mt.BOS, rec["id"]
    assert len(ids) == rec["context_tokens"], (rec["id"], len(ids))
    prompt = text_of(ids[1:])
    answer = text_of(rec["answer_ids"])
    fam = rec["task"]
    if fam in ("niah_single", "niah_multikey", "niah_multivalue"):
        key = re.search(r"magic numbers? for (\w+)\?", prompt).group(1)
        found = re.findall(r"The magic number for %s is: (\d{7})\." % key, prompt)
        assert answer == ",".join(found), (rec["id"], answer, found)
        assert len(found) == (3 if fam == "niah_multivalue" else 1), rec["id"]
        if fam == "niah_multikey":
            assert len(re.findall(r"The magic number for \w+ is: \d{7}\.", prompt)) == 4, rec["id"]
        first = found[0]
    elif fam == "variable_tracking":
        value = re.search(r"assigned the value (\d+)\?", prompt).group(1)
        names = answer.split(",")
        assert "VAR %s = %s." % (names[0], value) in prompt, rec["id"]
        for a, b in zip(names, names[1:]):
            assert prompt.index("VAR %s = %s." % (b, a)) > prompt.index("VAR %s =" % a), rec["id"]
        first = names[0]
    elif fam == "common_words":
        words = re.findall(r"\d+\. ([a-z]+)", prompt.split("\nQuestion")[0])
        counts = {w: words.count(w) for w in words}
        top = sorted(counts, key=lambda w: -counts[w])[:3]
        assert sorted(answer.split(",")) == sorted(top), (rec["id"], answer, top)
        assert min(counts[w] for w in top) > max(c for w, c in counts.items() if w not in top), rec["id"]
        order = sorted(top, key=words.index)
        assert answer == ",".join(order), rec["id"]
        first = None
    elif fam == "dialogue_recall":
        attr = re.search(r"User: What is my (.+)\?\nAssistant: Your (.+) is $", prompt).group(1)
        assert "remember that my %s is %s." % (attr, answer) in prompt, (rec["id"], attr, answer)
        first = answer
    else:
        raise AssertionError(fam)
    if first is not None:
        p = rec["answer_position"]
        assert text_of(ids[p:p + len(first)]) == first, (rec["id"], p)
    assert rec["max_new_tokens"] >= len(rec["answer_ids"])


def check_families():
    tok = mt.ByteTokenizer()
    hay = mt.Haystack(mt.sentences_of(mt.load_corpus("train")))
    for fam in mt.FAMILIES:
        for n in (512, 1024):
            rng = random.Random("t/%s/%d" % (fam, n))
            for i in range(4):
                check_instance(mt.make_task(fam, n, rng, tok, hay, i))
    # Too short a context is refused, not silently overrun.
    try:
        mt.make_task("niah_multikey", 100, random.Random(1), tok, hay, 0)
        raise AssertionError("100-token multikey accepted")
    except ValueError as e:
        assert "too short" in str(e), e


def check_command_line(tmp):
    def run(seed, out):
        r = subprocess.run([sys.executable, os.path.join(HERE, "make_tasks.py"), "--out=" + out,
                            "--tasks=niah_single,dialogue_recall,perplexity", "--lengths=512", "--num=3",
                            "--seed=%d" % seed], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return open(out, "rb").read()

    a = run(5, os.path.join(tmp, "a.jsonl"))
    b = run(5, os.path.join(tmp, "b.jsonl"))
    c = run(6, os.path.join(tmp, "c.jsonl"))
    assert a == b, "same seed, different output"
    assert a != c, "different seed, same output"
    recs = [json.loads(l) for l in a.decode().splitlines()]
    assert [r["task"] for r in recs] == ["niah_single"] * 3 + ["dialogue_recall"] * 3 + ["perplexity"] * 3
    assert len(set(r["id"] for r in recs)) == 9
    train = " ".join(mt.load_corpus("train"))
    heldout = " ".join(mt.load_corpus("heldout"))
    for r in recs[6:]:
        assert r["max_new_tokens"] == 0 and len(r["answer_ids"]) == 128 and len(r["prompt_ids"]) == 512
        piece = text_of(r["prompt_ids"][-60:] + r["answer_ids"])
        assert piece in heldout and piece not in train, piece
    bad = subprocess.run([sys.executable, os.path.join(HERE, "make_tasks.py"), "--out=" + os.path.join(tmp, "x"),
                          "--tasks=nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown task 'nope'" in bad.stderr, bad.stderr


def check_scorer():
    ans = [49, 50, 51]
    assert mt.score([49, 50, 51], ans, 8)
    assert mt.score([49, 50, 51, 46, 10], ans, 8)          # anything after the answer is fine
    assert not mt.score([32, 49, 50, 51], ans, 8)          # nothing before it
    assert not mt.score([49, 50], ans, 8)                  # all of it
    assert not mt.score([49, 50, mt.EOS, 51], ans, 8)      # cut at EOS
    assert mt.score([49, 50, 51, mt.EOS, 7], ans, 8)
    assert not mt.score([49, 50, 51], ans, 2)              # cut at max_new_tokens
    assert not mt.score([49, 51, 50], ans, 8)              # in order


def check_families_match_the_outcome_features():
    """kTaskFamilies (sim/select/closed_loop_outcomes.h: task_family = index + 1) lists FAMILIES in order."""
    header = os.path.join(HERE, "..", "sim", "select", "closed_loop_outcomes.h")
    with open(header) as f:
        text = f.read()
    m = re.search(r"kTaskFamilies\[\]\s*=\s*\{([^}]*)\}", text)
    assert m, "kTaskFamilies not found in " + header
    assert re.findall(r'"([^"]+)"', m.group(1)) == mt.FAMILIES, (m.group(1), mt.FAMILIES)


def main():
    check_scorer()
    check_families_match_the_outcome_features()
    check_families()
    with tempfile.TemporaryDirectory() as tmp:
        check_command_line(tmp)
    print("PASS")


if __name__ == "__main__":
    main()
