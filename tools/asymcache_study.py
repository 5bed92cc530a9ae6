#!/usr/bin/env python3
"""The AsymCache study: each mechanism alone and all together against the deployed baselines.

The grid is presets/studies/asymcache/study.json; the variants are the other *.textproto files there
(stack presets plus one mechanism each; chat.textproto and agent.textproto are the generated workloads'
specs). Cells, one factor at a time around the RAG centre point (8K context, 16-token blocks, pressure
0.25, Llama-3.1-8B on one H200):
  rag       shared documents (Zipf-popular, 512 tokens each) retrieved in random order after a system
            prompt, so a document's KV reappears at different positions: non-prefix reuse. Written here as a
            chunk_hash trace of content hashes (replayed --chain_hashes=false: a block is the same wherever
            it sits). Poisson arrivals at rag_load x the requests/s one replica could prefill with no reuse
            (a one-request probe per context, block size and model). Axes: context 2K-128K, block size,
            cache pressure, model and GPU.
  chat      presets/studies/asymcache/chat.textproto, closed-loop sessions, 1 replica
  agent     presets/studies/asymcache/agent.textproto, closed-loop sessions, 4 replicas, cache-aware routing
  mooncake  the bundled Mooncake trace, 8 replicas, cache-aware routing, open loop
Pressure is the GPU KV capacity as a fraction of the trace's working set (distinct blocks x block tokens),
capped at what the device's memory gives. Every run uses the fitted cost model. Writes to --out:
  data.csv           one row per run: cell, variant, TTFT/TPOT/e2e/job means and p90s, hit ratio, tokens,
                     busy fraction
  ratios.csv         per cell, variant and baseline: baseline / variant of mean TTFT, TPOT, job time (> 1:
                     the variant is faster)
  decomposition.csv  per cell, variant and baseline: `kvsim decompose BASELINE VARIANT`'s parts
  report.md          the tables; report.html: `kvsim report` heat map of the TTFT ratio against vllm-v1
Deterministic: the same kvsim binary gives byte-identical files for any --jobs.

  python3 tools/asymcache_study.py --kvsim=bazel-bin/tools/kvsim --out=out/asymcache [--size=large]
"""
import argparse
import concurrent.futures
import csv
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

STUDY = "presets/studies/asymcache"
SPECS = ("chat.textproto", "agent.textproto")
PARTS = ["queueing_ms", "reload_ms", "prefill_linear_ms", "prefill_attention_ms", "co_batched_ms", "chunk_wait_ms"]
MOONCAKE = "traces/data/mooncake_synthetic.jsonl"


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stderr))
    return done.stdout


def with_fields(text, sections, top=""):
    """`text` (a config text proto) with `sections` {name: fields} merged into its top-level blocks."""
    for name, fields in sections.items():
        if not fields:
            continue
        marker = "\n%s {" % name
        padded = "\n" + text
        if marker in padded:
            i = padded.index(marker) + len(marker)
            text = (padded[:i] + " " + fields + padded[i:])[1:]
        else:
            text += "%s { %s }\n" % (name, fields)
    return text + top


def zipf_sample(rng, weights_cum, k, n):
    """k distinct indices of range(n) drawn by Zipf popularity (cumulative weights), in draw order."""
    chosen, seen = [], set()
    while len(chosen) < k:
        u = rng.random() * weights_cum[-1]
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if weights_cum[mid] < u:
                lo = mid + 1
            else:
                hi = mid
        if lo not in seen:
            seen.add(lo)
            chosen.append(lo)
    return chosen


def write_rag_trace(path, p, context, block_tokens, num_requests, rate_per_s):
    """A RAG trace (chunk_hash JSONL, content-hash ids): system prompt, k retrieved documents in random
    order, a fresh question; Poisson arrivals at rate_per_s. Returns the working set in tokens (distinct
    ids x block_tokens)."""
    rng = random.Random(p["seed"] * 1000003 + context * 7 + block_tokens)
    doc_blocks = max(1, p["doc_tokens"] // block_tokens)
    sys_blocks = max(1, p["system_prompt_tokens"] // block_tokens)
    q_blocks = max(1, p["question_tokens"] // block_tokens)
    k = max(1, (context // block_tokens - sys_blocks - q_blocks) // doc_blocks)
    num_docs = max(p["documents"], 10 * k)
    cum, total = [], 0.0
    for d in range(num_docs):
        total += (d + 1) ** -p["zipf_exponent"]
        cum.append(total)
    next_id = 1 << 40
    distinct = set()
    t_ms = 0.0
    lines = []
    for _ in range(num_requests):
        ids = [1 + b for b in range(sys_blocks)]
        for d in zipf_sample(rng, cum, k, num_docs):
            ids += [(1 << 20) * (d + 1) + b for b in range(doc_blocks)]
        for _ in range(q_blocks):
            ids.append(next_id)
            next_id += 1
        distinct.update(ids)
        t_ms += -math.log(1.0 - rng.random()) / rate_per_s * 1000.0
        lines.append(json.dumps({"timestamp": int(t_ms), "input_length": len(ids) * block_tokens,
                                 "output_length": p["output_tokens"], "hash_ids": ids}))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return len(distinct) * block_tokens


def working_set_tokens(path, kind):
    """Distinct blocks x block tokens of a kvsim-generated (native JSONL) or Mooncake trace."""
    seen, block = set(), 512
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if kind == "native":
                if "kvsim_trace" in rec:
                    block = rec["block_tokens"]
                    continue
                seen.update(rec["block_hashes"])
            else:
                seen.update(rec["hash_ids"])
    return len(seen) * block


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kvsim", default="bazel-bin/tools/kvsim")
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", default="default", help="a size in study.json: tiny, default or large")
    parser.add_argument("--jobs", type=int, default=2, help="replays run at once (results do not depend on it)")
    args = parser.parse_args()
    grid = json.load(open(os.path.join(STUDY, "study.json")))
    if args.size not in grid["sizes"]:
        sys.exit("--size: expected one of %s" % ", ".join(sorted(grid["sizes"])))
    size = grid["sizes"][args.size]
    centre = grid["centre"]
    baselines = grid["baselines"]
    variants = size.get("variants") or sorted(
        f[:-len(".textproto")] for f in os.listdir(STUDY) if f.endswith(".textproto") and f not in SPECS)
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="asymcache_study_")
    try:
        def config_text(variant, cell, capacity_tokens):
            model = grid["models"][cell["model"]]
            text = open(os.path.join(STUDY, variant + ".textproto")).read() + "\n"
            cache = "block_tokens: %d" % cell["block_tokens"]
            if capacity_tokens:
                cache += " gpu_capacity_tokens: %d" % capacity_tokens
            sections = dict(cell["sections"])
            sections["cache"] = cache
            sections["cost_model"] = "kind: COST_MODEL_KIND_FITTED"
            return with_fields(text, sections, 'model_preset: "%s"\ndevice_preset: "%s"\n' %
                               (model["model_preset"], model["device_preset"]))

        # Cells: (name, workload, context, block_tokens, pressure, model, trace, trace flags, extra sections)
        cells = []
        rag_points = []
        for c in size["contexts"]:
            rag_points.append((c, centre["block_tokens"], centre["pressure"], centre["model"]))
        for b in size["block_tokens"]:
            rag_points.append((centre["context"], b, centre["pressure"], centre["model"]))
        for pr in size["pressures"]:
            rag_points.append((centre["context"], centre["block_tokens"], pr, centre["model"]))
        for m in size["models"]:
            rag_points.append((centre["context"], centre["block_tokens"], centre["pressure"], m))
        unique = []
        rag_ws, rag_rate = {}, {}
        for point in rag_points:
            if point not in unique:
                unique.append(point)
        for context, block, pressure, model in unique:
            trace = os.path.join(tmp, "rag_%d_%d_%s.jsonl" % (context, block, model.replace("/", "_")))
            flags = ["--trace_format=chunk_hash", "--chain_hashes=false", "--trace_timestamp_unit=ms",
                     "--trace_block_tokens=%d" % block]
            cell = {"cell": "rag ctx=%d block=%d pressure=%g %s" % (context, block, pressure, model),
                    "workload": "rag", "context": context, "block_tokens": block, "pressure": pressure,
                    "model": model, "trace": trace, "flags": flags, "sections": {}}
            if not os.path.exists(trace):
                # The offered load: rag_load x the requests/s one replica could prefill with no reuse at all
                # (a lone request's TTFT, no reuse, measured on this model and GPU).
                write_rag_trace(trace, grid["rag"], context, block, 1, 1.0)
                cfg = os.path.join(tmp, "probe.textproto")
                open(cfg, "w").write(with_fields(config_text("vllm-v1", cell, 0),
                                                 {"cache": "reuse_mode: REUSE_MODE_NONE"}))
                out = os.path.join(tmp, "probe")
                run([args.kvsim, "replay", "--config=" + cfg, "--trace=" + trace, "--out=" + out] + flags)
                prefill_ms = float(json.load(open(os.path.join(out, "summary.json")))["summary"]["ttft_ms"]["mean"])
                rate = grid["rag"]["rag_load"] * 1000.0 / prefill_ms
                rag_rate[(context, block, model)] = rate
                rag_ws[trace] = write_rag_trace(trace, grid["rag"], context, block, size["rag_requests"], rate)
            cell["ws"] = rag_ws[trace]
            cell["rate_per_s"] = rag_rate[(context, block, model)]
            cells.append(cell)
        specs = {"chat": ("chat.textproto", size["chat_requests"],
                          {"workload": "closed_loop_sessions: true"}),
                 "agent": ("agent.textproto", size["agent_requests"],
                           {"workload": "closed_loop_sessions: true",
                            "cluster": "num_replicas: 4 router: ROUTER_KIND_CACHE_AWARE"})}
        for name, (spec_file, n, sections) in specs.items():
            text = open(os.path.join(STUDY, spec_file)).read()
            lines = [l for l in text.split("\n") if not l.startswith("num_requests:")]
            spec = os.path.join(tmp, spec_file)
            open(spec, "w").write("\n".join(lines) + "\nnum_requests: %d\n" % n)
            trace = os.path.join(tmp, name + ".jsonl")
            run([args.kvsim, "gen", "--spec=" + spec, "--out=" + trace])
            ws = working_set_tokens(trace, "native")
            for pressure in size["other_pressures"]:
                cells.append({"cell": "%s pressure=%g" % (name, pressure), "workload": name, "context": 0,
                              "block_tokens": 16, "pressure": pressure, "model": centre["model"], "trace": trace,
                              "flags": [], "ws": ws, "sections": sections})
        if size["mooncake"]:
            ws = working_set_tokens(MOONCAKE, "mooncake")
            for pressure in size["other_pressures"]:
                cells.append({"cell": "mooncake pressure=%g" % pressure, "workload": "mooncake", "context": 0,
                              "block_tokens": 512, "pressure": pressure, "model": centre["model"],
                              "trace": MOONCAKE, "flags": [], "ws": ws,
                              "sections": {"cluster": "num_replicas: 8 router: ROUTER_KIND_CACHE_AWARE"}})

        # The capacity the device's memory gives, per model and block size (a one-request probe).
        full = {}
        for cell in cells:
            key = (cell["model"], cell["block_tokens"], cell["trace"])
            if (cell["model"], cell["block_tokens"]) in full:
                continue
            cfg = os.path.join(tmp, "probe.textproto")
            open(cfg, "w").write(with_fields(config_text("vllm-v1", cell, 0), {"workload": "max_requests: 1"}))
            out = os.path.join(tmp, "probe")
            run([args.kvsim, "replay", "--config=" + cfg, "--trace=" + cell["trace"], "--out=" + out] + cell["flags"])
            s = json.load(open(os.path.join(out, "summary.json")))
            full[(cell["model"], cell["block_tokens"])] = int(s["summary"]["gpu_capacity_blocks"]) * int(
                s["run"]["block_tokens"])

        jobs = []
        for ci, cell in enumerate(cells):
            block = cell["block_tokens"]
            want = int(cell["pressure"] * cell["ws"]) // block * block
            cell["capacity_tokens"] = max(block, min(full[(cell["model"], block)], want))
            for variant in variants:
                jobs.append((ci, variant))

        def replay(job):
            ci, variant = job
            cell = cells[ci]
            d = os.path.join(tmp, "run_%d_%s" % (ci, variant))
            os.makedirs(d, exist_ok=True)
            cfg = os.path.join(d, "config.textproto")
            open(cfg, "w").write(config_text(variant, cell, cell["capacity_tokens"]))
            run([args.kvsim, "replay", "--config=" + cfg, "--trace=" + cell["trace"], "--out=" + d + "/out"] +
                cell["flags"])
            return d + "/out"

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            outs = dict(zip(jobs, pool.map(replay, jobs)))

        rows, ratios, parts_rows = [], [], []
        for ci, cell in enumerate(cells):
            group = {}
            for variant in variants:
                s = json.load(open(os.path.join(outs[(ci, variant)], "summary.json")))["summary"]
                jobs_ms = s.get("sessions", {}).get("job_completion_ms", {})
                row = {"cell": cell["cell"], "workload": cell["workload"], "context_tokens": cell["context"],
                       "block_tokens": cell["block_tokens"], "pressure": cell["pressure"], "model": cell["model"],
                       "working_set_tokens": cell["ws"], "gpu_capacity_tokens": cell["capacity_tokens"],
                       "rag_rate_per_s": cell.get("rate_per_s", 0.0),
                       "variant": variant,
                       "ttft_mean_ms": s["ttft_ms"].get("mean", 0), "ttft_p90_ms": s["ttft_ms"].get("p90", 0),
                       "tpot_mean_ms": s["tpot_ms"].get("mean", 0), "tpot_p90_ms": s["tpot_ms"].get("p90", 0),
                       "e2e_mean_ms": s["e2e_ms"].get("mean", 0),
                       "job_mean_ms": jobs_ms.get("mean", 0), "job_p90_ms": jobs_ms.get("p90", 0),
                       "reuse_hit_ratio": s.get("reuse_hit_ratio", 0),
                       "recomputed_tokens": int(s.get("recomputed_tokens", 0)),
                       "reloaded_tokens": int(s.get("reloaded_tokens", 0)),
                       "busy_fraction": s.get("busy_fraction", 0),
                       "finished_requests": int(s.get("finished_requests", 0))}
                rows.append(row)
                group[variant] = row
            for variant in variants:
                for b in [b for b in baselines if b in group]:
                    base, v = group[b], group[variant]
                    r = {"cell": cell["cell"], "variant": variant, "baseline": b}
                    for key, name in (("ttft_mean_ms", "ttft_ratio"), ("tpot_mean_ms", "tpot_ratio"),
                                      ("job_mean_ms", "job_ratio")):
                        r[name] = base[key] / v[key] if base[key] > 0 and v[key] > 0 else ""
                    ratios.append(r)
                    dec = json.loads(run([args.kvsim, "decompose", outs[(ci, b)], outs[(ci, variant)], "--json"]))
                    for item in dec["parts"]:
                        parts_rows.append({"cell": cell["cell"], "variant": variant, "baseline": b,
                                           "part": item["part"], "baseline_value": item["base"],
                                           "variant_value": item["other"],
                                           "baseline_minus_variant": item["base_minus_other"]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def write_csv(name, table):
        with open(os.path.join(args.out, name), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(table[0].keys()), lineterminator="\n")
            writer.writeheader()
            for row in table:
                writer.writerow({k: ("%.6g" % v if isinstance(v, float) else v) for k, v in row.items()})

    write_csv("data.csv", rows)
    write_csv("ratios.csv", ratios)
    write_csv("decomposition.csv", parts_rows)
    write_report(args, cells, variants, baselines, rows, ratios, parts_rows)


def write_report(args, cells, variants, baselines, rows, ratios, parts_rows):
    fmt = lambda x: "%.2f" % x if isinstance(x, float) else "-"
    lines = ["# AsymCache study (%s size)" % args.size, "",
             "Ratios are baseline / variant of the mean (above 1: the variant is faster). Pressure: GPU KV capacity "
             "as a fraction of the trace's working set (capped at the device's). Cost model: fitted. Gain parts: "
             "`kvsim decompose BASELINE VARIANT`, ms of mean TTFT saved (positive: the variant is faster).", ""]
    ratio = {(r["cell"], r["variant"], r["baseline"]): r for r in ratios}
    parts = {}
    for p in parts_rows:
        parts[(p["cell"], p["variant"], p["baseline"], p["part"])] = p["baseline_minus_variant"]
    for cell in cells:
        c = cell["cell"]
        lines += ["## %s" % c, "",
                  "capacity %d tokens of a %d-token working set" % (cell["capacity_tokens"], cell["ws"]), "",
                  "| variant | TTFT ms | TPOT ms | job ms | hit | busy | " +
                  " | ".join("TTFT/TPOT/job vs %s" % b for b in baselines) + " | gain vs vllm-v1: " +
                  ", ".join(p.replace("_ms", "") for p in PARTS) + " |",
                  "|---" * (7 + len(baselines)) + "|"]
        for r in [r for r in rows if r["cell"] == c]:
            v = r["variant"]
            cells_ = ["%.1f" % r["ttft_mean_ms"], "%.2f" % r["tpot_mean_ms"], "%.0f" % r["job_mean_ms"],
                      "%.3f" % r["reuse_hit_ratio"], "%.2f" % r["busy_fraction"]]
            for b in baselines:
                x = ratio.get((c, v, b))
                cells_.append("/".join(fmt(x[k]) for k in ("ttft_ratio", "tpot_ratio", "job_ratio")) if x else "-")
            cells_.append(", ".join("%.1f" % parts.get((c, v, "vllm-v1", p), 0) for p in PARTS))
            lines.append("| %s | %s |" % (v, " | ".join(cells_)))
        lines.append("")
    open(os.path.join(args.out, "report.md"), "w").write("\n".join(lines))
    # The heat map: TTFT ratio against vllm-v1, cell x variant, as a sweep table (axes before `point`) that
    # `kvsim report` plots; run in --out so the page names the table by its file name only.
    with open(os.path.join(args.out, "ttft_ratio_vs_vllm.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["variant", "cell", "point", "ttft_ratio", "tpot_ratio"])
        i = 0
        for r in ratios:
            if r["baseline"] == "vllm-v1" and r["ttft_ratio"] != "":
                w.writerow([r["variant"], r["cell"], i, "%.6g" % r["ttft_ratio"],
                            "%.6g" % r["tpot_ratio"] if r["tpot_ratio"] != "" else ""])
                i += 1
    done = subprocess.run([os.path.abspath(args.kvsim), "report", "ttft_ratio_vs_vllm.csv", "--out=report.html",
                           "--sweep_axes=variant,cell", "--sweep_metric=ttft_ratio",
                           "--report_title=AsymCache study: mean TTFT of vllm-v1 / variant"],
                          cwd=args.out, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("kvsim report failed: " + done.stderr)

if __name__ == "__main__":
    main()
