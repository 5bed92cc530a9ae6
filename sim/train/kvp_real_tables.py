#!/usr/bin/env python3
"""The markdown tables of sim/train/kvp_real_eval.sh, from the files it wrote under OUT.

  kvp_real_tables.py OUT MODEL_DIR SECONDS > OUT/results.md

Reads OUT/quality_*/areas.csv and per_head.csv (`kvsim quality`), OUT/eval_niah/ and OUT/eval_other/results.csv (`kvsim eval`)
and OUT/train_*.txt (`kvsim train`'s summary). Areas are ratios to oracle_select (recall: higher is
better; output error: lower is better). A missing file is an error naming it.
"""

import csv
import os
import re
import sys

NON_ORACLE = ["random", "streaming_llm", "knorm", "tova", "snapkv", "h2o"]
ORACLES = ["oracle_evict", "oracle_select"]
KVP_LABELS = {
    "kvp_niah": "kvp (REINFORCE, small setting)",
    "kvp_niah_softsort": "kvp (soft-sort baseline, small setting)",
    "kvp_niah_paper": "kvp (REINFORCE, paper-size setting)",
    "kvp_single256": "kvp trained on niah_single at 256",
    "kvp_text128": "kvp trained on text at 128",
    "kvp_fam": "kvp trained on multi-value, variable tracking, dialogue (small)",
    "kvp_all": "kvp trained on those and the needles (small)",
}


def rows(path):
    if not os.path.exists(path):
        sys.exit(f"kvp_real_tables: missing {path}")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def model_name(policy):
    """'kvp:model=OUT/kvp_niah.kvpm' -> 'kvp_niah'; a baseline's name as it is."""
    m = re.match(r"kvp:model=.*/([^/]+)\.kvpm$", policy)
    return m.group(1) if m else policy


def label(name):
    return KVP_LABELS.get(name, name)


class Quality:
    def __init__(self, out, name):
        self.areas = {}
        for r in rows(f"{out}/quality_{name}/areas.csv"):
            self.areas[model_name(r["policy"])] = (float(r["recall_vs_oracle"]), float(r["error_vs_oracle"]))
        self.heads = {}  # (policy, layer, head) -> [recall per budget]
        for r in rows(f"{out}/quality_{name}/per_head.csv"):
            key = (model_name(r["policy"]), int(r["layer"]), int(r["kv_head"]))
            self.heads.setdefault(key, []).append(float(r["recall_mean"]))

    def recall(self, policy):
        return self.areas[policy][0]

    def cell(self, policy):
        """The recall area as a table cell; '-' for a policy this evaluation did not run."""
        return fmt(self.recall(policy)) if policy in self.areas else "-"

    def best_baseline(self):
        return max(NON_ORACLE, key=self.recall)


def fmt(x):
    return f"{x:.3f}"


def table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def train_summary(out, name):
    path = f"{out}/train_{name}.txt"
    if not os.path.exists(path):
        sys.exit(f"kvp_real_tables: missing {path}")
    text = open(path).read()
    size = re.search(r"(\d+) agents .*?, (\d+) parameters each, ([\d.]+) KiB", text)
    reward = re.search(r"final training ([-\d.]+)(?:, held out ([-\d.]+))?", text)
    time = re.search(r"time: ([\d.]+) s wall, ([\d.]+) s CPU \(([\d.]+) steps/s per core\)", text)
    samples = re.search(r"trained on (\d+) samples \((\d+) held out\).*?(\d+) steps per agent", text)
    if not (size and reward and time and samples):
        sys.exit(f"kvp_real_tables: {path}: unexpected summary")
    return [label(name), samples.group(1), samples.group(3), size.group(2), size.group(3), reward.group(1),
            reward.group(2) or "-", time.group(2), time.group(3)]


def closed_loop(md, eval_dir, what, judged):
    """The closed-loop table of `kvsim eval`'s results.csv in eval_dir, with the per-budget verdict of each
    KVP model in `judged` against the best baseline."""
    md.append(f"\n## Closed loop: accuracy under each policy (`kvsim eval`, {what})\n")
    acc, budgets, tasks = {}, [], 0
    for r in rows(f"{eval_dir}/results.csv"):
        if r["task"] != "all":
            continue
        b = int(float(r["budget"]))
        acc[(model_name(r["policy"]), b)] = int(r["correct"])
        tasks = int(r["tasks"])
        if b not in budgets:
            budgets.append(b)
    budgets.sort()
    closed = ["full", "kvp_niah", "kvp_niah_softsort", "kvp_fam", "kvp_all"] + NON_ORACLE + ["oracle_select"]
    body = [[label(p)] + [f"{acc[(p, b)]}/{tasks}" for b in budgets] for p in closed]
    md.append(f"Correct answers of {tasks} tasks at each budget (tokens per KV head).\n\n")
    md.append(table(["policy"] + [str(b) for b in budgets], body))
    for kvp in judged:
        lines = []
        for b in budgets:
            best = max(NON_ORACLE, key=lambda p: acc[(p, b)])
            cmp = "at least" if acc[(kvp, b)] >= acc[(best, b)] else "BELOW"
            who = f"{best} {acc[(best, b)]}" if acc[(best, b)] > 0 else "every baseline 0"
            lines.append(f"{b}: {acc[(kvp, b)]}, {cmp} the best baseline ({who})")
        md.append(f"\nPer budget, {label(kvp)}: " + "; ".join(lines) + ".\n")


def main():
    out, model, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    q = {n: Quality(out, n) for n in ["niah", "single512", "text128", "text256", "text512", "other", "fam"]}
    md = [f"# KVP on traces recorded from {model}\n",
          f"Written by `sim/train/kvp_real_eval.sh` in {seconds} s. Every figure is on held-out instances "
          "(other seeds than the training instances). Areas under the curves over budgets of 1/32 to 1/2 "
          "of the prompt, as a ratio to oracle_select: recall (higher is better) / output error (lower is "
          "better).\n"]

    niah = q["niah"]
    kvps = ["kvp_niah", "kvp_niah_softsort", "kvp_niah_paper", "kvp_fam", "kvp_all"]
    body = [[label(p), fmt(niah.areas[p][0]), fmt(niah.areas[p][1])] for p in kvps + NON_ORACLE + ORACLES]
    md.append("## Open loop: needle tasks (niah_single + niah_multikey, 496 and 512 bytes)\n")
    md.append(table(["policy", "recall area", "error area"], body))
    best = niah.best_baseline()
    verdict = "above" if niah.recall("kvp_niah") > niah.recall(best) else "NOT above"
    md.append(f"\nKVP (small setting) recall area {fmt(niah.recall('kvp_niah'))}: {verdict} every non-oracle "
              f"baseline (best: {best}, {fmt(niah.recall(best))}).\n")

    md.append("\n## Generalisation: context length (trained at 1x)\n")
    cols = [("text128", "kvp_text128", "text, 128 (1x)"), ("text256", "kvp_text128", "text, 256 (2x)"),
            ("text512", "kvp_text128", "text, 512 (4x)"), ("single512", "kvp_single256", "niah_single, 512 (2x)")]
    body = [["kvp trained at 1x (text at 128; niah_single at 256)"] + [fmt(q[c].recall(m)) for c, m, _ in cols]]
    body.append([label("kvp_niah") + ", trained at 512 (for reference)", "-", "-",
                 fmt(q["text512"].recall("kvp_niah")), fmt(q["single512"].recall("kvp_niah"))])
    for p in NON_ORACLE + ORACLES:
        body.append([p] + [fmt(q[c].recall(p)) for c, _, _ in cols])
    md.append("Recall areas.\n\n" + table(["policy"] + [h for _, _, h in cols], body))

    md.append("\n## Generalisation: task family\n")
    cols = [("niah", "needle tasks"), ("fam", "niah_multivalue + variable_tracking + dialogue_recall, 496/512"),
            ("text512", "text, 512"), ("other", "variable_tracking + common_words, 512")]
    body = [[label(p)] + [q[c].cell(p) for c, _ in cols] for p in ["kvp_niah", "kvp_fam", "kvp_all"]]
    for p in NON_ORACLE + ORACLES:
        body.append([p] + [q[c].cell(p) for c, _ in cols])
    md.append("Recall areas ('-': not evaluated there).\n\n" + table(["policy"] + [h for _, h in cols], body))
    fam = q["fam"]
    best = fam.best_baseline()
    for p in ["kvp_niah", "kvp_fam", "kvp_all"]:
        verdict = "above" if fam.recall(p) > fam.recall(best) else "NOT above"
        md.append(f"\nOn multi-value, variable tracking and dialogue, {label(p)}: {fmt(fam.recall(p))}, {verdict} "
                  f"every non-oracle baseline (best: {best}, {fmt(fam.recall(best))}).\n")

    md.append("\n## Per head: needle tasks, mean recall over the five budgets\n")
    keys = sorted({(l, h) for (p, l, h) in niah.heads if p == "kvp_niah"})
    body = []
    for l, h in keys:
        mean = lambda p: sum(niah.heads[(p, l, h)]) / len(niah.heads[(p, l, h)])
        b = max(NON_ORACLE, key=mean)
        body.append([str(l), str(h), fmt(mean("kvp_niah")), f"{b} {fmt(mean(b))}",
                     f"{mean('kvp_niah') - mean(b):+.3f}", fmt(mean("oracle_evict"))])
    md.append(table(["layer", "KV head", "kvp", "best baseline on the head", "kvp - best", "oracle_evict"], body))

    closed_loop(md, f"{out}/eval_niah", "niah_single + niah_multikey, 496 and 512 bytes", ["kvp_niah", "kvp_fam"])
    closed_loop(md, f"{out}/eval_other", "niah_multivalue + variable_tracking + dialogue_recall, 496 and 512 "
                "bytes", ["kvp_niah", "kvp_fam", "kvp_all"])

    md.append("\n## Training cost (`kvsim train`, one thread)\n")
    body = [train_summary(out, n) for n in ["kvp_niah", "kvp_niah_softsort", "kvp_niah_paper", "kvp_single256",
                                            "kvp_text128", "kvp_fam", "kvp_all"]]
    md.append("Rewards: the mean normalised all-budget reward of the greedy ranking, 2 - C / C* (oracle 1); it "
              "is negative where the importance is concentrated on a few tokens (C* small), as on needle "
              "tasks. Held out: the last 1/8 of the training traces' samples.\n\n")
    md.append(table(["model", "samples", "steps per agent", "parameters per agent", "file (KiB)",
                     "final training reward", "held-out reward", "CPU s", "steps/s per core"], body))
    text = "".join(md)
    text = re.sub(r"([^\n])\n(#)", r"\1\n\n\2", text)  # a blank line before and after each heading
    print(re.sub(r"^(#.*)\n(?!\n)", r"\1\n\n", text, flags=re.M), end="")


if __name__ == "__main__":
    main()
