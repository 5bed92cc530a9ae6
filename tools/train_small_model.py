#!/usr/bin/env python3
"""Trains kvsim's small byte-level Llama-architecture model on generated long-context tasks and natural text.

The model is tools/llama_torch.py's LlamaModel (the same forward pass the reference files come from), with
the byte-level vocabulary of sim/eval/FORMATS.md (259 ids). Each training step is a batch of sequences of one
length (the curriculum raises it stage by stage): --copy_fraction of them are "copy" sequences (natural text
with random strings that recur later, the repeats counted as answers: a dense copying signal; without it the
sparse task answers alone taught the model no look-up in 2,350 steps), of the rest --task_fraction are task
instances from tools/make_tasks.py (prompt + answer + EOS), the others windows of natural training text
(make_tasks.load_corpus("train")).
The loss is the next-byte cross-entropy over every non-pad position plus `--answer_weight` times the mean
cross-entropy over the answer bytes (and their EOS), so the retrieval answers are not drowned by the text.

At the end the model is saved in fp16 (config.json + model.safetensors), reloaded from that folder, and
evaluated by greedy decoding with a full KV cache on held-out task instances (a different seed stream from
the training data) at the final context length: exact match per task family (make_tasks.score), and the
perplexity set's bits per byte. Everything goes to the training log.

Deterministic: the same --seed, --threads and arguments give the same weights (fixed step counts; torch and
Python generators seeded; one thread count throughout). --device=cuda trains on a GPU (TF32 matrix products,
torch's fused causal attention; the data are the same, generated on the CPU): repeatable on the same GPU
and software only as far as their kernels are (not promised), so a GPU run's log and weights are what
documents it. tools/train_gpu.sh is the whole curriculum of the larger model in one command for a GPU.

  train_small_model.py --out=DIR [--seed=1] [--threads=1] [--stages=384:300,640:300,1024:400]
"""

import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_torch as lt  # noqa: E402
import make_tasks as mt  # noqa: E402

# Families that fit a prompt of at least this many bytes (templates and needles included).
MIN_CONTEXT = {"niah_single": 230, "niah_multikey": 360, "niah_multivalue": 330, "variable_tracking": 250,
               "common_words": 400, "dialogue_recall": 370}
ANSWER_ROOM = 32  # bytes reserved after the prompt for the answer and EOS


def model_config(a):
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": a.hidden,
        "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "head_dim": a.hidden // a.heads,
        "vocab_size": mt.VOCAB_SIZE,
        "rms_norm_eps": 1e-5,
        "rope_theta": a.rope_theta,
        "rope_scaling": None,
        "max_position_embeddings": a.max_positions,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "hidden_act": "silu",
        "bos_token_id": mt.BOS,
        "eos_token_id": mt.EOS,
        "pad_token_id": mt.PAD,
    }


class Data:
    def __init__(self, seed, task_fraction, families, weights, copy_fraction=0.0, recall_fraction=0.0,
                 dense_fraction=0.0, repeat_fraction=0.0, repeat_offset="random", repeat_alphabet=64):
        self.copy_fraction = copy_fraction
        self.recall_fraction = recall_fraction
        self.dense_fraction = dense_fraction
        self.repeat_fraction = repeat_fraction
        self.repeat_offset = repeat_offset
        self.repeat_alphabet = repeat_alphabet
        self.rng = random.Random("train/%d" % seed)
        self.tok = mt.ByteTokenizer()
        corpus = mt.load_corpus("train")
        self.haystack = mt.Haystack(mt.sentences_of(corpus))
        self.text = list(" ".join(corpus).encode("ascii", errors="replace"))
        self.task_fraction = task_fraction
        self.families = families
        self.weights = weights

    def copy_sequence(self, length):
        """Natural text with random strings that recur later on (answer mask on the repeats): a dense copying
        signal, from which the model learns to look up earlier context before the sparse task answers need it."""
        ids, mask = [mt.BOS], [0]
        strings = []
        while len(ids) < length:
            r = self.rng.random()
            if strings and r < 0.4:
                s = self.rng.choice(strings)
                ids += s
                mask += [0] + [1] * (len(s) - 1)
            elif r < 0.7:
                s = [ord(c) for c in " " + "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789")
                                                   for _ in range(self.rng.randint(6, 24)))]
                strings.append(s)
                ids += s
                mask += [0] * len(s)
            else:
                n = self.rng.randint(10, 60)
                start = self.rng.randrange(len(self.text) - n)
                ids += self.text[start:start + n]
                mask += [0] * n
        return ids[:length], mask[:length]

    def recall_sequence(self, length):
        """Multi-query associative recall in the needle tasks' own wording: several needles "The magic number
        for KEY is: VALUE." in natural text, then questions about some of the keys, each followed by its answer
        (the answer mask): every sequence carries several look-ups instead of one."""
        rng, tok = self.rng, self.tok
        # Half of them without the task's header line and with little or no filler text: at first the look-up is
        # learned among few positions, where its gradient is not spread over a long haystack.
        head = "Special magic numbers are hidden in the text below. Memorize them.\n" if rng.random() < 0.5 else ""
        nkeys = rng.randint(1, 8)
        while True:
            keys = rng.sample(mt.WORDS, nkeys)
            values = [mt._number(rng) for _ in keys]  # pylint: disable=protected-access
            inserts = [(" The magic number for %s is: %s." % (k, v), "n%d" % i) for i, (k, v) in enumerate(zip(keys, values))]
            asked = rng.sample(range(nkeys), rng.randint(1, nkeys))
            tail, tmask = [], []
            for i in asked:
                q = tok.encode("\nQuestion: What is the magic number for %s?\nAnswer: The magic number for %s is: " %
                               (keys[i], keys[i]))
                a = tok.encode(values[i]) + [ord(".")]
                tail += q + a
                tmask += [0] * len(q) + [1] * len(a)
            need = 1 + len(tok.encode(head)) + sum(len(tok.encode(t)) for t, _ in inserts) + len(tail)
            if need <= length or nkeys == 1:
                break
            nkeys -= 1
        total = rng.randint(need, length) if need < length else need
        ids, _ = mt._fill(tok, rng, self.haystack, total - len(tail), head, inserts, "")  # pylint: disable=protected-access
        ids = ids + tail
        mask = [0] * (len(ids) - len(tail)) + tmask
        return ids[:length], mask[:length]

    def repeat_sequence(self, length):
        """Random bytes in which a segment recurs, the predictable bytes of the repeats under the answer mask.
        The bytes are drawn from an alphabet of repeat_alphabet symbols, ids (32 + i) % 256 for i below it (64:
        the printable 32..95; 256: every byte value). With repeat_offset "fixed" the second half repeats the
        first, so the copy is always half the length back and position alone finds it; with "random" a 24-byte
        segment and its repeat lie at random places (mask from the repeat's second byte on); with "periodic"
        a random segment of P bytes (P uniform in [8, (length - 1) // 3]) is repeated to the end of the
        sequence, so that most positions are a look-up at an offset that changes from sequence to sequence
        (mask from the second byte of the second period on: the first byte of a period follows the period's
        last byte, whose only earlier occurrence is not yet followed by anything). Only content-based look-up
        (an induction head) finds the copies of "random" and "periodic"."""
        rng = self.rng
        ids = [mt.BOS] + [(32 + rng.randrange(self.repeat_alphabet)) % 256 for _ in range(length - 1)]
        mask = [0] * length
        if self.repeat_offset == "fixed":
            half = (length - 1) // 2
            ids[1 + half:1 + 2 * half] = ids[1:1 + half]
            for i in range(2 + half, 1 + 2 * half):
                mask[i] = 1
            return ids, mask
        if self.repeat_offset == "periodic":
            period = rng.randint(8, (length - 1) // 3)
            for i in range(1 + period, length):
                ids[i] = ids[i - period]
            for i in range(2 + period, length):
                mask[i] = 1
            return ids, mask
        seg = 24
        src = rng.randrange(1, length - 3 * seg)
        dst = rng.randrange(src + seg, length - seg)
        ids[dst:dst + seg] = ids[src:src + seg]
        for i in range(dst + 1, dst + seg):
            mask[i] = 1
        return ids, mask

    def dense_recall_sequence(self, length):
        """Needles "The magic number for KEY is: VALUE." and then the same lines again for some of the keys
        (answer mask on the repeated values and their '.'): the second "for KEY is: " is the answer prefix of
        the needle tasks, and each repeat is a look-up (at 256 bytes about 3 needles and 2 repeats)."""
        rng, tok = self.rng, self.tok
        line = lambda k: tok.encode(" The magic number for %s is: " % k)  # noqa: E731
        ids, mask = [mt.BOS], [0]
        keys = rng.sample(mt.WORDS, 24)
        values = [mt._number(rng) for _ in keys]  # pylint: disable=protected-access
        # Needles first, then repeats; as many as fit, about half needles and half repeats.
        per = len(line("x" * 6)) + 8
        n = max(1, (length - 1) // per // 2)
        for i in range(n):
            if rng.random() < 0.3:  # a little natural text between the lines
                ids += tok.encode("".join(self.haystack.take(rng, tok, rng.randint(5, 40))))
            ids += line(keys[i]) + tok.encode(values[i] + ".")
        mask += [0] * (len(ids) - len(mask))
        order = list(range(n))
        rng.shuffle(order)
        for i in order * 2:
            a = tok.encode(values[i] + ".")
            q = line(keys[i])
            if len(ids) + len(q) + len(a) > length:
                break
            ids += q + a
            mask += [0] * len(q) + [1] * len(a)
        return ids[:length], mask[:length]

    def sequence(self, length):
        """(ids, answer_mask) of at most `length` tokens."""
        r = self.rng.random()
        self.last_kind = "repeat"
        if r < self.repeat_fraction:
            return self.repeat_sequence(length)
        r -= self.repeat_fraction
        self.last_kind = "dense"
        if r < self.dense_fraction:
            return self.dense_recall_sequence(length)
        r -= self.dense_fraction
        self.last_kind = "copy"
        if r < self.copy_fraction:
            return self.copy_sequence(length)
        self.last_kind = "recall"
        if r < self.copy_fraction + self.recall_fraction:
            return self.recall_sequence(length)
        self.last_kind = "task"
        fams = [f for f in self.families if MIN_CONTEXT[f] <= length - ANSWER_ROOM]
        if fams and self.rng.random() < self.task_fraction:
            ws = [self.weights[self.families.index(f)] for f in fams]
            fam = self.rng.choices(fams, ws)[0]
            self.last_kind = "task/" + fam  # the log splits the answer loss by family
            # Prompts of varied length up to the stage length, so that short distances are seen too.
            n = self.rng.randint(max(MIN_CONTEXT[fam], (length - ANSWER_ROOM) // 2), length - ANSWER_ROOM)
            rec = mt.make_task(fam, n, self.rng, self.tok, self.haystack, 0)
            ids = rec["prompt_ids"] + rec["answer_ids"] + [mt.EOS]
            mask = [0] * len(rec["prompt_ids"]) + [1] * (len(rec["answer_ids"]) + 1)
            return ids, mask
        self.last_kind = "text"
        start = self.rng.randrange(len(self.text) - length)
        ids = [mt.BOS] + self.text[start:start + length - 1]
        return ids, [0] * len(ids)

    def batch(self, size, length):
        """(ids, answer mask) tensors [size, length], PAD after each sequence; self.batch_kinds names each row's
        kind of sequence (repeat, dense, copy, recall, task/FAMILY, text)."""
        ids = torch.full((size, length), mt.PAD, dtype=torch.int64)
        ans = torch.zeros((size, length), dtype=torch.bool)
        self.batch_kinds = []
        for b in range(size):
            seq, mask = self.sequence(length)
            self.batch_kinds.append(self.last_kind)
            ids[b, :len(seq)] = torch.tensor(seq)
            ans[b, :len(mask)] = torch.tensor(mask, dtype=torch.bool)
        return ids, ans


def loss_of(model, ids, ans, answer_weight, lm_weight=1.0):
    """(total loss tensor, statistics): the statistics as 0-dim tensors and the per-row answer sums, for
    stats_of(), which reads them back from the device (later: on a GPU the next batch is made meanwhile)."""
    logits = model(ids[:, :-1])
    target = ids[:, 1:]
    valid = target != mt.PAD
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none")
    ce = ce.view(target.shape)
    lm = (ce * valid).sum() / valid.sum().clamp(min=1)
    amask = ans[:, 1:]
    na = amask.sum()
    answer = (ce * amask).sum() / na.clamp(min=1)
    total = lm_weight * lm + answer_weight * answer * (na > 0)
    # The first byte of each answer span (a look-up) apart from the rest (which copying can also predict from
    # the byte before): the later bytes falling below chance is the first sign that the model copies.
    first = amask.clone()
    first[:, 1:] &= ~amask[:, :-1]
    rest = amask & ~first
    stats = [lm, answer, na, (ce * first).sum(), first.sum(), (ce * rest).sum(), rest.sum(),
             (ce * amask).sum(1), amask.sum(1)]
    return total, [t.detach() for t in stats]


def stats_of(stats, per_row=None):
    """(lm, answer, first-byte, rest) cross-entropies as floats (NaN where the batch had no such byte) from
    loss_of's statistics; per_row: None, or a list that receives each row's (answer cross-entropy sum,
    answer byte count)."""
    lm, answer, na, first_sum, nf, rest_sum, nr, row_sums, row_counts = stats
    first_ce = float(first_sum / nf) if nf > 0 else float("nan")
    rest_ce = float(rest_sum / nr) if nr > 0 else float("nan")
    if per_row is not None:
        per_row.extend(zip(row_sums.tolist(), row_counts.tolist()))
    return float(lm), (float(answer) if na > 0 else float("nan")), first_ce, rest_ce


@torch.no_grad()
def evaluate(model, tasks, log):
    """Exact match per family with greedy decoding and the full KV cache; perplexity as bits per byte."""
    per = {}
    nll, count = 0.0, 0
    for rec in tasks:
        if rec["task"] == "perplexity":
            ids = torch.tensor([rec["prompt_ids"] + rec["answer_ids"]], dtype=torch.int64,
                               device=next(model.parameters()).device)
            logits = model(ids[:, :-1])[0, len(rec["prompt_ids"]) - 1:]
            nll += float(F.cross_entropy(logits, ids[0, len(rec["prompt_ids"]):], reduction="sum"))
            count += len(rec["answer_ids"])
            continue
        gen, _ = lt.greedy_generate(model, rec["prompt_ids"], rec["max_new_tokens"], stop_id=mt.EOS)
        ok = mt.score(gen, rec["answer_ids"], rec["max_new_tokens"])
        key = (rec["task"], rec["context_tokens"])
        c = per.setdefault(key, [0, 0])
        c[0] += int(ok)
        c[1] += 1
    results = {"%s@%d" % k: v[0] / v[1] for k, v in sorted(per.items())}
    for k, v in sorted(per.items()):
        log("eval %s context %d: %d/%d exact match (%.1f%%)" % (k[0], k[1], v[0], v[1], 100.0 * v[0] / v[1]))
    if count:
        results["perplexity_nll_per_byte"] = nll / count
        log("eval perplexity: %.4f nats/byte = %.4f bits/byte over %d held-out bytes" %
            (nll / count, nll / count / math.log(2), count))
    return results


def eval_tasks(seed, lengths, num, families):
    """Held-out instances: a seed stream disjoint from training ("eval/...")."""
    tok = mt.ByteTokenizer()
    hay = mt.Haystack(mt.sentences_of(mt.load_corpus("train")))
    heldout = " ".join(mt.load_corpus("heldout"))
    out = []
    for n in lengths:
        for f in families:
            if MIN_CONTEXT[f] > n:
                continue
            rng = random.Random("eval/%d/%s/%d" % (seed, f, n))
            for i in range(num):
                out.append(mt.make_task(f, n, rng, tok, hay, i))
        rng = random.Random("eval/%d/perplexity/%d" % (seed, n))
        for i in range(max(1, num // 4)):
            out.append(mt.make_perplexity(heldout, n - 128, 128, rng, tok, i))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (results depend on it; 1 is also fastest on a busy machine)")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--intermediate", type=int, default=352)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv_heads", type=int, default=2)
    ap.add_argument("--rope_theta", type=float, default=10000.0)
    ap.add_argument("--max_positions", type=int, default=1024)
    ap.add_argument("--stages", default="384:300,640:300,1024:300",
                    help="curriculum: comma list of SEQ_LEN:STEPS")
    ap.add_argument("--batch_tokens", type=int, default=6144, help="tokens per step (batch = this / length)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight_decay", type=float, default=0.01)
    ap.add_argument("--answer_weight", type=float, default=1.0)
    ap.add_argument("--task_fraction", type=float, default=0.8, help="of the sequences that are not copy ones")
    ap.add_argument("--copy_fraction", type=float, default=0.2,
                    help="sequences of text with recurring random strings (dense copying signal)")
    ap.add_argument("--recall_fraction", type=float, default=0.0,
                    help="sequences of multi-query needle recall (several needles, several answered questions)")
    ap.add_argument("--dense_fraction", type=float, default=0.0,
                    help="sequences of needles followed by repeats of some of them (dense look-ups)")
    ap.add_argument("--repeat_fraction", type=float, default=0.0,
                    help="sequences of random bytes with a recurring segment (see --repeat_offset)")
    ap.add_argument("--repeat_offset", default="random", choices=["random", "fixed", "periodic"],
                    help="repeat sequences: a 24-byte segment and its repeat at random places, second half = "
                         "first half, or a random segment of 8..(length-1)/3 bytes repeated to the end")
    ap.add_argument("--repeat_alphabet", type=int, default=64,
                    help="repeat sequences draw their bytes from this many symbols, ids (32 + i) %% 256 (2..256)")
    ap.add_argument("--lm_weight", type=float, default=1.0, help="weight of the next-byte loss over all positions")
    ap.add_argument("--families", default=",".join(mt.FAMILIES))
    ap.add_argument("--family_weights", default="1,2,2,1,1,2")
    ap.add_argument("--eval_num", type=int, default=20, help="held-out instances per family (0: no eval)")
    ap.add_argument("--eval_lengths", default="", help="default: the last stage's length minus 32")
    ap.add_argument("--log_every", type=int, default=10)
    ap.add_argument("--max_steps", type=int, default=0,
                    help="stop after this many steps (the schedule still assumes all stages); 0: no limit")
    ap.add_argument("--max_minutes", type=float, default=0,
                    help="stop at the first step boundary after this much time (NOT deterministic; the log "
                         "says where it stopped, and --max_steps=that reproduces the run); 0: no limit")
    ap.add_argument("--dtype", default="fp16", choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--init_from", default="", help="start from this model folder instead of random weights")
    ap.add_argument("--time_schedule", action="store_true",
                    help="with --max_minutes: the cosine learning-rate schedule follows the further along of "
                         "steps and elapsed time, so that it ends at the time limit (NOT deterministic)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where to train and evaluate (cuda: see the module docstring)")
    a = ap.parse_args(argv)

    if a.device == "cuda":
        if not torch.cuda.is_available():
            print("train_small_model: --device=cuda but torch sees no GPU", file=sys.stderr)
            return 2
        if not hasattr(F, "scaled_dot_product_attention"):
            print("train_small_model: --device=cuda needs torch >= 2.0 (fused attention)", file=sys.stderr)
            return 2
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    log_path = os.path.join(a.out, "train_log.txt")
    log_file = open(log_path + ".tmp", "w")
    t_start = time.time()

    def log(msg):
        line = "[%7.1fs] %s" % (time.time() - t_start, msg)
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    log("args: %s" % json.dumps(vars(a), sort_keys=True))
    log("torch %s, %d threads, device %s%s" % (torch.__version__, torch.get_num_threads(), a.device,
        " (%s)" % torch.cuda.get_device_name(0) if a.device == "cuda" else ""))
    families = [f for f in a.families.split(",") if f]
    weights = [float(w) for w in a.family_weights.split(",")]
    if len(weights) != len(families):
        print("train_small_model: --family_weights needs one weight per family", file=sys.stderr)
        return 2
    stages = [(int(s.split(":")[0]), int(s.split(":")[1])) for s in a.stages.split(",") if s]
    if a.time_schedule and a.max_minutes <= 0:
        print("train_small_model: --time_schedule needs --max_minutes", file=sys.stderr)
        return 2
    if not 2 <= a.repeat_alphabet <= 256:
        print("train_small_model: --repeat_alphabet must be 2..256, not %d" % a.repeat_alphabet, file=sys.stderr)
        return 2
    if a.repeat_fraction > 0 and a.repeat_offset == "periodic" and min(n for n, _ in stages) < 25:
        print("train_small_model: --repeat_offset=periodic needs sequences of at least 25 tokens", file=sys.stderr)
        return 2
    if a.init_from:
        # Continue from an earlier run's folder (its config wins over the size flags).
        model = lt.load_model(a.init_from)
        cfg = model.cfg
        log("initialised from %s" % a.init_from)
    else:
        cfg = lt.LlamaConfig(model_config(a))
        model = lt.LlamaModel(cfg)
        model.init_random(a.seed, 0.02)
        with torch.no_grad():
            for name, _ in lt.tensor_names(cfg):
                if name.endswith("norm.weight"):
                    model.p(name).fill_(1.0)
                elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                    model.p(name).mul_(1.0 / math.sqrt(2 * cfg.num_hidden_layers))
    model.to(a.device)
    if a.device == "cuda":
        model.fused_attention = True
        # The fused attention computes what the explicit one does: checked once on this GPU's kernels.
        probe = torch.randint(0, 256, (2, 64), device=a.device)
        with torch.no_grad():
            fused = model(probe)
            model.fused_attention = False
            explicit = model(probe)
            model.fused_attention = True
        gap = float((fused - explicit).abs().max() / explicit.abs().max().clamp(min=1e-6))
        log("fused vs explicit attention on a random batch: max difference %.2e of the largest logit" % gap)
        if not gap < 1e-2:
            print("train_small_model: fused attention disagrees with the explicit one (%g)" % gap, file=sys.stderr)
            return 1
    nparams = sum(p.numel() for p in model.parameters())
    log("model: %d parameters, config %s" % (nparams, json.dumps(cfg.to_dict(), sort_keys=True)))
    data = Data(a.seed, a.task_fraction, families, weights, a.copy_fraction, a.recall_fraction,
                a.dense_fraction, a.repeat_fraction, a.repeat_offset, a.repeat_alphabet)
    decay = [p for n, p in model.params.items() if not n.endswith("norm__weight")]
    no_decay = [p for n, p in model.params.items() if n.endswith("norm__weight")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95))
    total_steps = sum(s for _, s in stages)
    step = 0
    first_loss = last_loss = None
    for length, steps in stages:
        bsz = max(1, a.batch_tokens // length)
        log("stage: sequence length %d, batch %d, %d steps" % (length, bsz, steps))
        acc = []
        kind_ce = {}  # kind of sequence -> [answer cross-entropy sum, answer bytes] since the last log line
        batch = None  # the next step's (ids, answer mask), made ahead
        for i in range(steps):
            if (a.max_steps and step >= a.max_steps) or (a.max_minutes and time.time() - t_start > 60 * a.max_minutes):
                break
            progress = step / total_steps
            if a.time_schedule:  # the further along of steps and time
                progress = max(progress, (time.time() - t_start) / (60 * a.max_minutes))
            lr = a.lr * min(1.0, (step + 1) / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))
            for g in opt.param_groups:
                g["lr"] = lr
            if batch is None:
                batch = data.batch(bsz, length)
            ids, ans = batch[0].to(a.device), batch[1].to(a.device)
            kinds = data.batch_kinds
            loss, stats = loss_of(model, ids, ans, a.answer_weight, a.lm_weight)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            # The next batch is made before this step's figures are read back: on a GPU, while it computes.
            # (Only for a step that will run, so the data stream is the one of making each batch when due.)
            more = i + 1 < steps and not (a.max_steps and step >= a.max_steps)
            batch = data.batch(bsz, length) if more else None
            rows = []
            lm, answer, first_ce, rest_ce = stats_of(stats, rows)
            for kind, (ce_sum, count) in zip(kinds, rows):
                k = kind_ce.setdefault(kind, [0.0, 0])
                k[0] += ce_sum
                k[1] += count
            acc.append((float(loss), lm, answer, first_ce, rest_ce))
            if first_loss is None:
                first_loss = float(loss)
            last_loss = float(loss)
            if step % a.log_every == 0 or step == total_steps:
                n = len(acc)
                def mean_of(k):
                    vals = [x[k] for x in acc if x[k] == x[k]]  # NaN where a batch had no such byte
                    return sum(vals) / len(vals) if vals else float("nan")

                log("step %d/%d len %d lr %.2e loss %.4f lm %.4f answer %.4f (first byte %.4f, rest %.4f)" %
                    (step, total_steps, length, lr, sum(x[0] for x in acc) / n, sum(x[1] for x in acc) / n,
                     mean_of(2), mean_of(3), mean_of(4)))
                if len([k for k in kind_ce if kind_ce[k][1]]) > 1:
                    log("  answer loss by kind: %s" % ", ".join(
                        "%s %.4f" % (k, v[0] / v[1]) for k, v in sorted(kind_ce.items()) if v[1]))
                acc = []
                kind_ce = {}
    log("trained %d steps" % step)
    dtype = lt.DTYPE_NAMES[a.dtype]
    lt.save_model(model, a.out, dtype)
    log("saved %s (%s)" % (a.out, a.dtype))
    results = {"first_loss": first_loss, "last_loss": last_loss, "parameters": nparams, "steps": step}
    if a.eval_num > 0:
        saved = lt.load_model(a.out).to(a.device)
        lengths = [int(x) for x in a.eval_lengths.split(",") if x] or [stages[-1][0] - ANSWER_ROOM]
        tasks = eval_tasks(a.seed, lengths, a.eval_num, families)
        results.update(evaluate(saved, tasks, log))
    log("done in %.1f s; results %s" % (time.time() - t_start, json.dumps(results, sort_keys=True)))
    log_file.close()
    os.replace(log_path + ".tmp", log_path)
    lt.write_json(os.path.join(a.out, "train_results.json"), results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
