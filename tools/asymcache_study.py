#!/usr/bin/env python3
"""The AsymCache study: each mechanism alone and all together against the deployed baselines.

Runs `kvsim replay` for every variant in presets/studies/asymcache/*.textproto (except agent.textproto, the
generated workload's spec) on two workloads -- the bundled Mooncake trace (8 replicas, cache-aware routing,
open loop) and a generated agent workload (1 replica, closed-loop sessions) -- at several GPU KV capacities
(fractions of the capacity the device's memory gives), all with the fitted cost model. Writes to --out:
  data.csv   one row per run: workload, capacity fraction, variant, TTFT/TPOT/e2e means and p90s, job
             completion mean and p90 (agent), hit ratio, recomputed and reloaded tokens
  report.md  per workload and capacity, every variant's ratios against each baseline (baseline / variant:
             above 1 means the variant is faster)
Deterministic: the same kvsim binary gives byte-identical files. --size=large uses more capacities and the
full agent workload (20000 calls).

  python3 tools/asymcache_study.py --kvsim=bazel-bin/tools/kvsim --out=out/asymcache [--size=large]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

STUDY = "presets/studies/asymcache"
BASELINES = ["vllm-v1", "sglang", "lmcache-cpu"]
WORKLOADS = {
    "mooncake": "cluster { num_replicas: 8 router: ROUTER_KIND_CACHE_AWARE }\n",
    "agent": "workload { closed_loop_sessions: true }\n",
}
SIZES = {"default": {"fractions": [1.0, 0.25], "agent_requests": 3000},
         "large": {"fractions": [1.0, 0.5, 0.25, 0.1], "agent_requests": 20000}}


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stderr))
    return done.stdout


def variant_text(path, extra_cache):
    text = open(path).read()
    if extra_cache:
        text = text.replace("cache {", "cache { " + extra_cache, 1) if "cache {" in text else \
            text + "cache { %s }\n" % extra_cache
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kvsim", default="bazel-bin/tools/kvsim")
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    args = parser.parse_args()
    size = SIZES[args.size]
    os.makedirs(args.out, exist_ok=True)
    variants = sorted(f[:-len(".textproto")] for f in os.listdir(STUDY)
                      if f.endswith(".textproto") and f != "agent.textproto")
    with tempfile.TemporaryDirectory() as tmp:
        spec = open(os.path.join(STUDY, "agent.textproto")).read().replace(
            "num_requests: 3000", "num_requests: %d" % size["agent_requests"])
        spec_path = os.path.join(tmp, "agent.textproto")
        open(spec_path, "w").write(spec)
        agent_trace = os.path.join(tmp, "agent.jsonl")
        run([args.kvsim, "gen", "--spec=" + spec_path, "--out=" + agent_trace])
        traces = {"mooncake": "traces/data/mooncake_synthetic.jsonl", "agent": agent_trace}
        rows = []
        for workload in WORKLOADS:
            # The capacity the device's memory gives, from the baseline's resolved config.
            base_cfg = os.path.join(tmp, "base.textproto")
            open(base_cfg, "w").write(variant_text(os.path.join(STUDY, "vllm-v1.textproto"), "") +
                                      WORKLOADS[workload] + "cost_model { kind: COST_MODEL_KIND_FITTED }\n")
            out = os.path.join(tmp, "base")
            run([args.kvsim, "replay", "--config=" + base_cfg, "--trace=" + traces[workload], "--out=" + out])
            full_blocks = int(json.load(open(os.path.join(out, "summary.json")))["summary"]["gpu_capacity_blocks"])
            block_tokens = int(json.load(open(os.path.join(out, "summary.json")))["run"]["block_tokens"])
            for fraction in size["fractions"]:
                tokens = max(block_tokens, int(full_blocks * fraction) * block_tokens)
                for variant in variants:
                    cfg = os.path.join(tmp, "run.textproto")
                    open(cfg, "w").write(variant_text(os.path.join(STUDY, variant + ".textproto"),
                                                      "gpu_capacity_tokens: %d" % tokens) +
                                         WORKLOADS[workload] + "cost_model { kind: COST_MODEL_KIND_FITTED }\n")
                    out = os.path.join(tmp, "run")
                    run([args.kvsim, "replay", "--config=" + cfg, "--trace=" + traces[workload], "--out=" + out])
                    summary = json.load(open(os.path.join(out, "summary.json")))["summary"]
                    jobs = summary.get("sessions", {}).get("job_completion_ms", {})
                    rows.append({
                        "workload": workload, "capacity_fraction": fraction, "variant": variant,
                        "ttft_mean_ms": summary["ttft_ms"].get("mean", 0), "ttft_p90_ms": summary["ttft_ms"].get("p90", 0),
                        "tpot_mean_ms": summary["tpot_ms"].get("mean", 0), "tpot_p90_ms": summary["tpot_ms"].get("p90", 0),
                        "e2e_mean_ms": summary["e2e_ms"].get("mean", 0),
                        "job_mean_ms": jobs.get("mean", 0), "job_p90_ms": jobs.get("p90", 0),
                        "reuse_hit_ratio": summary.get("reuse_hit_ratio", 0),
                        "recomputed_tokens": int(summary.get("recomputed_tokens", 0)),
                        "reloaded_tokens": int(summary.get("reloaded_tokens", 0)),
                    })
    fields = list(rows[0].keys())
    with open(os.path.join(args.out, "data.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("%.6g" % v if isinstance(v, float) else v) for k, v in row.items()})
    lines = ["# AsymCache study (%s size)" % args.size, "",
             "Ratios are baseline / variant (above 1: the variant is faster). Capacity is a fraction of the GPU KV "
             "capacity the device's memory gives. Cost model: fitted.", ""]
    for workload in WORKLOADS:
        for fraction in size["fractions"]:
            group = {r["variant"]: r for r in rows if r["workload"] == workload and r["capacity_fraction"] == fraction}
            lines += ["## %s, capacity %.2f" % (workload, fraction), "",
                      "| variant | TTFT ms | TPOT ms | job ms | hit | " +
                      " | ".join("TTFT/TPOT/job vs %s" % b for b in BASELINES) + " |",
                      "|---" * (5 + len(BASELINES)) + "|"]
            def ratio(b, v, key):
                return "%.2f" % (b[key] / v[key]) if v[key] > 0 and b[key] > 0 else "-"
            for variant, r in sorted(group.items()):
                cells = ["%.1f" % r["ttft_mean_ms"], "%.2f" % r["tpot_mean_ms"], "%.0f" % r["job_mean_ms"],
                         "%.3f" % r["reuse_hit_ratio"]]
                for b in BASELINES:
                    base = group[b]
                    cells.append("/".join(ratio(base, r, k) for k in ("ttft_mean_ms", "tpot_mean_ms", "job_mean_ms")))
                lines.append("| %s | %s |" % (variant, " | ".join(cells)))
            lines.append("")
    open(os.path.join(args.out, "report.md"), "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
