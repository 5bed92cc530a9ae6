#!/usr/bin/env python3
"""Generates RULER-style long-context tasks and a held-out perplexity set as token-id JSONL.

Task families (the `task` field of sim/eval/FORMATS.md's task file):
  niah_single       one needle ("The magic number for KEY is: 1234567.") in a haystack of
                    natural text; the question asks for KEY's number.
  niah_multikey     four needles with different keys; the question asks for one of them.
  niah_multivalue   three needles with the same key; the answer lists all values, ',' separated, in the
                    order they appear.
  variable_tracking a chain "VAR AAAAA = 12345." then "VAR BBBBB = AAAAA." ... spread through the haystack;
                    the answer lists the variables holding the value, ',' separated, in order of assignment.
  common_words      a numbered word list in which a few words are frequent; the answer lists the frequent
                    words, ',' separated, in order of first appearance.
  dialogue_recall   a multi-turn User/Assistant dialogue in which the user states several personal facts
                    among other turns; the last turn asks for one of them.
  perplexity        held-out natural text: prompt_ids is a preceding context, answer_ids the text to score.

Haystack and natural text come from text available on every Debian 12 machine: the license texts in
/usr/share/common-licenses (regular files, not the symlinks) and the docstrings of the Python standard
library modules' source files (/usr/lib/python3.11/*.py, parsed with ast, not imported; the running
interpreter's stdlib directory where that one is absent). Text is reduced to printable ASCII with collapsed
whitespace. Every tenth stdlib module (in sorted order, index % 10 == 0) is held out: it is used only for
the perplexity set, never in haystacks or training text.

Tokenisation: --tokenizer=bytes (default) is the byte-level vocabulary of sim/eval/FORMATS.md (ids 0..255
bytes, 256 BOS, 257 EOS, 258 PAD; a prompt starts with BOS), and then context_tokens is the prompt length
exactly. --tokenizer=PATH uses a Hugging Face tokenizer folder where `transformers` is importable; the
prompt is tokenised segment by segment (so that the needle's position is exact) and is at most
context_tokens long.

Deterministic: the same --seed, arguments and machine text give byte-identical output.

  make_tasks.py --out=tasks.jsonl --tasks=niah_single,niah_multikey --lengths=256,1024 --num=20 --seed=1
"""

import argparse
import ast
import glob
import json
import os
import random
import re
import sys
import sysconfig

BOS, EOS, PAD = 256, 257, 258
VOCAB_SIZE = 259

FAMILIES = ["niah_single", "niah_multikey", "niah_multivalue", "variable_tracking", "common_words",
            "dialogue_recall"]

# Keys for needles and words for the word lists (plain English nouns).
WORDS = """apple anchor arrow badge bakery banana barrel basket beacon berry bicycle blanket bottle bridge
bucket butter cabin cactus camera candle canyon carpet castle cedar cherry circle cliff clock cloud
compass copper cotton crystal curtain dagger desert diamond dolphin dragon eagle ember engine falcon
feather fiddle forest fossil fountain galaxy garden garlic glacier globe goblet granite guitar hammer
harbor helmet honey horizon island ivory jacket jasmine jungle kettle kitten ladder lantern lemon
lizard magnet mango maple marble meadow mirror monkey mountain needle nickel ocean olive orange orchid
otter oyster paddle palace panda parrot pebble pepper pillow pirate planet pocket potato pumpkin puzzle
quartz rabbit radio raven ribbon river rocket saddle salmon sandal saturn scarf shadow shovel silver
spider spoon squirrel statue summit sunset tablet teapot thunder tiger tomato tunnel turtle umbrella
valley velvet violin volcano wagon walnut whistle window winter wizard zebra""".split()

NAMES = """Biscuit Pepper Shadow Willow Maple Nugget Clover Juniper Pickle Mochi Ziggy Bramble Socks Tofu
Pixel Waffles Rusty Hazel Marble Comet""".split()
CITIES = """Lisbon Oslo Nairobi Quito Hanoi Dublin Tunis Lima Riga Perth Cusco Bergen Porto Kyoto Tallinn
Dakar Sofia Zagreb Malmo Hobart""".split()
COLOURS = """teal crimson amber indigo olive maroon violet ochre cobalt coral saffron jade""".split()


def _clean(text):
    text = "".join(c if 32 <= ord(c) < 127 else " " for c in text.replace("\t", " ").replace("\n", " "))
    return re.sub(r" +", " ", text).strip()


def _stdlib_dir():
    d = "/usr/lib/python3.11"
    return d if os.path.isdir(d) else sysconfig.get_paths()["stdlib"]


def load_corpus(split):
    """Paragraph strings of natural text. split: "train" (licenses + 9/10 of stdlib docstrings) or
    "heldout" (the other tenth of stdlib docstrings)."""
    paragraphs = []
    if split == "train":
        for path in sorted(glob.glob("/usr/share/common-licenses/*")):
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for para in re.split(r"\n\s*\n", f.read()):
                    para = _clean(para)
                    if len(para) > 40:
                        paragraphs.append(para)
    for i, path in enumerate(sorted(glob.glob(os.path.join(_stdlib_dir(), "*.py")))):
        if (i % 10 == 0) != (split == "heldout"):
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    for para in re.split(r"\n\s*\n", doc):
                        para = _clean(para)
                        if len(para) > 40 and para.count(">>>") == 0:
                            paragraphs.append(para)
    if not paragraphs:
        raise RuntimeError("no natural text found (looked in /usr/share/common-licenses and %s)" % _stdlib_dir())
    return paragraphs


def sentences_of(paragraphs):
    out = []
    for p in paragraphs:
        for s in re.split(r"(?<=[.!?;:]) ", p):
            s = s.strip()
            if len(s) > 3:
                out.append(s)
    return out


class ByteTokenizer:
    name = "bytes"
    bos, eos = BOS, EOS

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


class HFTokenizer:
    def __init__(self, path):
        try:
            from transformers import AutoTokenizer  # pylint: disable=import-outside-toplevel
        except ImportError:
            raise SystemExit("make_tasks: --tokenizer=%s needs the transformers package, which is not importable" % path)
        self.tok = AutoTokenizer.from_pretrained(path)
        self.name = path
        self.bos = self.tok.bos_token_id
        self.eos = self.tok.eos_token_id

    def encode(self, text):
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, ids):
        return self.tok.decode(ids)


class Builder:
    """Assembles a prompt from text segments, tracking token positions."""

    def __init__(self, tok):
        self.tok = tok
        self.ids = [tok.bos] if tok.bos is not None else []
        self.marks = {}

    def add(self, text, mark=None):
        if mark is not None:
            self.marks[mark] = len(self.ids)
        self.ids.extend(self.tok.encode(text))


class Haystack:
    """Natural-text filler: consecutive sentences from a random place in the corpus."""

    def __init__(self, sentences):
        self.sentences = sentences

    def take(self, rng, tok, budget):
        """Returns a list of sentence strings whose tokens total exactly `budget` (bytes) or <= budget."""
        out, used = [], 0
        i = rng.randrange(len(self.sentences))
        while used < budget:
            s = " " + self.sentences[i % len(self.sentences)]
            i += 1
            n = len(tok.encode(s))
            if used + n > budget:
                rest = budget - used
                if isinstance(tok, ByteTokenizer):
                    out.append(s[:rest])
                    used += rest
                break
            out.append(s)
            used += n
        return out


def _number(rng, digits=7):
    return str(rng.randrange(10 ** (digits - 1), 10 ** digits))


def _varname(rng):
    return "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(5))


def _fill(tok, rng, haystack, context_tokens, head, inserts, tail):
    """prompt = BOS + head + haystack with `inserts` [(text, mark)] at sorted random depths + tail.

    Returns (ids, marks). The haystack length is chosen so the prompt is context_tokens long (bytes)."""
    fixed = (1 if tok.bos is not None else 0) + len(tok.encode(head)) + len(tok.encode(tail))
    fixed += sum(len(tok.encode(t)) for t, _ in inserts)
    budget = context_tokens - fixed
    if budget < 0:
        raise ValueError("context_tokens %d is too short for this task (needs %d without haystack)" %
                         (context_tokens, fixed))
    filler = haystack.take(rng, tok, budget)
    # Insert points between sentences, in order, spread over the haystack.
    points = sorted(rng.randint(0, len(filler)) for _ in inserts)
    b = Builder(tok)
    b.add(head)
    k = 0
    for j in range(len(filler) + 1):
        while k < len(inserts) and points[k] == j:
            b.add(inserts[k][0], inserts[k][1])
            k += 1
        if j < len(filler):
            b.add(filler[j])
    b.add(tail)
    return b.ids, b.marks


def _value_mark(tok, marks, text, value, mark):
    """The prompt position where `value` starts inside insert `mark` whose text is `text`."""
    prefix = text[:text.index(value)]
    return marks[mark] + len(tok.encode(prefix))


def make_instance(family, context_tokens, rng, tok, haystack):
    """One task instance as (record dict without id). Raises ValueError when the context is too short."""
    head_niah = "Special magic numbers are hidden in the text below. Memorize them.\n"
    if family in ("niah_single", "niah_multikey", "niah_multivalue"):
        nkeys = {"niah_single": 1, "niah_multikey": 4, "niah_multivalue": 1}[family]
        nvalues = 3 if family == "niah_multivalue" else 1
        keys = rng.sample(WORDS, nkeys)
        needles = []  # (key, value, text)
        for key in keys:
            for _ in range(nvalues):
                v = _number(rng)
                needles.append((key, v, " The magic number for %s is: %s." % (key, v)))
        rng.shuffle(needles)
        target = keys[rng.randrange(nkeys)]
        if family == "niah_multivalue":
            tail = ("\nQuestion: What are all the magic numbers for %s?\n"
                    "Answer: The magic numbers for %s are: " % (target, target))
        else:
            tail = ("\nQuestion: What is the magic number for %s?\n"
                    "Answer: The magic number for %s is: " % (target, target))
        inserts = [(t, "n%d" % i) for i, (_, _, t) in enumerate(needles)]
        ids, marks = _fill(tok, rng, haystack, context_tokens, head_niah, inserts, tail)
        # The target's values in the order they appear in the prompt (inserts keep their order).
        wanted = [(marks["n%d" % i], v, t, "n%d" % i) for i, (k, v, t) in enumerate(needles) if k == target]
        wanted.sort()
        answer = ",".join(v for _, v, _, _ in wanted)
        pos = _value_mark(tok, marks, wanted[0][2], wanted[0][1], wanted[0][3])
        return {"task": family, "prompt_ids": ids, "answer_text": answer, "answer_position": pos}
    if family == "variable_tracking":
        hops = 2
        value = _number(rng, 5)
        names = []
        while len(names) < hops + 1:
            n = _varname(rng)
            if n not in names:
                names.append(n)
        texts = [" VAR %s = %s." % (names[0], value)] + [" VAR %s = %s." % (names[i + 1], names[i])
                                                           for i in range(hops)]
        inserts = [(t, "v%d" % i) for i, t in enumerate(texts)]
        head = "Track the variable assignments hidden in the text below.\n"
        tail = ("\nQuestion: Which variables are assigned the value %s?\n"
                "Answer: The variables assigned the value %s are: " % (value, value))
        ids, marks = _fill(tok, rng, haystack, context_tokens, head, inserts, tail)
        pos = _value_mark(tok, marks, texts[0], names[0], "v0")
        return {"task": family, "prompt_ids": ids, "answer_text": ",".join(names), "answer_position": pos}
    if family == "common_words":
        ncommon = 3
        head = "Below is a numbered list of words. Some appear more often than others.\n"
        tail = "\nQuestion: What are the %d most common words in the list above?\nAnswer: They are: " % ncommon
        pool = rng.sample(WORDS, 40)
        common, rare = pool[:ncommon], pool[ncommon:]
        fixed = 1 + len(tok.encode(head)) + len(tok.encode(tail))
        # Grow the list until it fills the context: each common word 4 times per round, rare words once.
        words = []
        budget = context_tokens - fixed
        while True:
            round_words = common * 4 + rng.sample(rare, 6)
            rng.shuffle(round_words)
            trial = words + round_words
            if len(tok.encode(_word_list(trial))) > budget:
                break
            words = trial
        if not words:
            raise ValueError("context_tokens %d is too short for common_words" % context_tokens)
        text = _word_list(words)
        pad = budget - len(tok.encode(text))
        b = Builder(tok)
        b.add(head)
        b.add(text + (" " * pad if isinstance(tok, ByteTokenizer) else ""))
        b.add(tail)
        seen = []
        for w in words:
            if w in common and w not in seen:
                seen.append(w)
        return {"task": family, "prompt_ids": b.ids, "answer_text": ",".join(seen)}
    if family == "dialogue_recall":
        facts = [
            ("locker code", _number(rng, 4)),
            ("pet's name", rng.choice(NAMES)),
            ("home city", rng.choice(CITIES)),
            ("favourite colour", rng.choice(COLOURS)),
            ("project code name", rng.choice(WORDS)),
        ]
        facts = rng.sample(facts, 3)
        inserts = []
        for i, (attr, val) in enumerate(facts):
            inserts.append(("\nUser: Please remember that my %s is %s.\nAssistant: Noted." % (attr, val), "f%d" % i))
        target = rng.randrange(len(facts))
        attr, val = facts[target]
        head = "A conversation between a user and an assistant.\n"
        tail = "\nUser: What is my %s?\nAssistant: Your %s is " % (attr, attr)
        # Filler turns: the user reads a sentence, the assistant answers with the next one.
        fixed = 1 + len(tok.encode(head)) + len(tok.encode(tail)) + sum(len(tok.encode(t)) for t, _ in inserts)
        budget = context_tokens - fixed
        if budget < 0:
            raise ValueError("context_tokens %d is too short for dialogue_recall (needs %d)" % (context_tokens, fixed))
        turns, used = [], 0
        i = rng.randrange(len(haystack.sentences))
        while True:
            u = haystack.sentences[i % len(haystack.sentences)]
            a = haystack.sentences[(i + 1) % len(haystack.sentences)]
            i += 2
            t = "\nUser: %s\nAssistant: %s" % (u, a)
            n = len(tok.encode(t))
            if used + n > budget:
                if isinstance(tok, ByteTokenizer) and budget - used > 0:
                    turns.append(t[:budget - used])
                    used = budget
                break
            turns.append(t)
            used += n
        points = sorted(rng.randint(0, len(turns)) for _ in inserts)
        b = Builder(tok)
        b.add(head)
        k = 0
        for j in range(len(turns) + 1):
            while k < len(inserts) and points[k] == j:
                b.add(inserts[k][0], inserts[k][1])
                k += 1
            if j < len(turns):
                b.add(turns[j])
        b.add(tail)
        pos = _value_mark(tok, b.marks, inserts[target][0], " is %s." % val, "f%d" % target) + len(tok.encode(" is "))
        return {"task": family, "prompt_ids": b.ids, "answer_text": val, "answer_position": pos}
    raise ValueError("unknown task family %r" % family)


def _word_list(words):
    return " ".join("%d. %s" % (i + 1, w) for i, w in enumerate(words))


def make_task(family, context_tokens, rng, tok, haystack, index):
    inst = make_instance(family, context_tokens, rng, tok, haystack)
    answer_text = inst.pop("answer_text")
    if isinstance(tok, ByteTokenizer):
        answer_ids = tok.encode(answer_text)
    else:
        answer_ids = tok.encode(answer_text)
    rec = {"id": "%s-%d-%04d" % (family, context_tokens, index), "task": family,
           "context_tokens": context_tokens, "prompt_ids": inst["prompt_ids"], "answer_ids": answer_ids,
           "max_new_tokens": len(answer_ids) + 4}
    if "answer_position" in inst:
        rec["answer_position"] = inst["answer_position"]
    return rec


def make_perplexity(heldout_text, context_tokens, score_tokens, rng, tok, index):
    ids = tok.encode(heldout_text)
    need = context_tokens - 1 + score_tokens
    if len(ids) < need:
        raise ValueError("held-out text too short")
    start = rng.randrange(len(ids) - need)
    ctx = ([tok.bos] if tok.bos is not None else []) + ids[start:start + context_tokens - 1]
    return {"id": "perplexity-%d-%04d" % (context_tokens, index), "task": "perplexity",
            "context_tokens": context_tokens, "prompt_ids": ctx,
            "answer_ids": ids[start + context_tokens - 1:start + need], "max_new_tokens": 0}


def score(generated_ids, answer_ids, max_new_tokens, eos=EOS):
    """Exact match (sim/eval/FORMATS.md): the generation, cut at EOS or after max_new_tokens, begins with
    answer_ids."""
    gen = list(generated_ids[:max_new_tokens])
    if eos in gen:
        gen = gen[:gen.index(eos)]
    return gen[:len(answer_ids)] == list(answer_ids)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tasks", default=",".join(FAMILIES), help="comma list of families (and/or perplexity)")
    ap.add_argument("--lengths", default="1024", help="comma list of context lengths in tokens")
    ap.add_argument("--num", type=int, default=10, help="instances per (task, length)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tokenizer", default="bytes")
    ap.add_argument("--score_tokens", type=int, default=128, help="perplexity: tokens scored per instance")
    a = ap.parse_args(argv)
    tok = ByteTokenizer() if a.tokenizer == "bytes" else HFTokenizer(a.tokenizer)
    families = [t for t in a.tasks.split(",") if t]
    for f in families:
        if f not in FAMILIES and f != "perplexity":
            print("make_tasks: unknown task %r (known: %s, perplexity)" % (f, ",".join(FAMILIES)), file=sys.stderr)
            return 2
    lengths = [int(x) for x in a.lengths.split(",") if x]
    haystack = Haystack(sentences_of(load_corpus("train")))
    heldout = " ".join(load_corpus("heldout")) if "perplexity" in families else None
    records = []
    for f in families:
        for n in lengths:
            # One generator per (seed, task, length): adding a family does not change the others.
            rng = random.Random("%d/%s/%d" % (a.seed, f, n))
            for i in range(a.num):
                if f == "perplexity":
                    records.append(make_perplexity(heldout, n, a.score_tokens, rng, tok, i))
                else:
                    records.append(make_task(f, n, rng, tok, haystack, i))
    tmp = a.out + ".tmp"
    with open(tmp, "w") as fo:
        for r in records:
            fo.write(json.dumps(r, separators=(",", ":")) + "\n")
    os.replace(tmp, a.out)
    print("make_tasks: wrote %d tasks to %s" % (len(records), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
