"""Summarises a kernels/run_on_gpu.sh output directory as markdown (RESULTS.md): GPU, driver, step
status, test counts, the issue's speed targets from benchmark.json, and the calibration table's size."""
import csv
import datetime
import json
import os
import re
import sys

out = sys.argv[1]


def read(name):
    try:
        with open(os.path.join(out, name)) as f:
            return f.read()
    except OSError:
        return ""


print("# kvsim kernels on the GPU: results of kernels/run_on_gpu.sh\n")
print("Date (UTC): %s  " % datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"))
print("Revision: %s\n" % read("REVISION").strip())
print("```\n%s```\n" % read("gpu.csv"))
print("## Steps\n\n```\n%s```\n" % read("steps.txt"))
for name in ["attention_kernels_test", "blaslt_gemm_test", "device_test", "memcheck", "racecheck",
             "record_attention_test"]:
    log = read(name + ".log")
    lines = [l for l in log.splitlines() if re.match(r"^\[  (PASSED|FAILED|SKIPPED) +\] \d+ test|.*(ERROR SUMMARY|RACECHECK SUMMARY)|.*: OK$|^SKIP|^\w*Error", l)]
    if lines:
        print("- %s: %s" % (name, "; ".join(lines[:6])))
print()
try:
    bench = json.load(open(os.path.join(out, "benchmark.json")))
    print("## Benchmarks (median of timed runs)\n")
    print("| benchmark | median us | GB/s or TFLOP/s | fraction of copy | merge fraction | speedup vs bf16 | chunk |")
    print("|---|---|---|---|---|---|---|")
    for b in bench.get("benchmarks", []):
        if b.get("error_occurred"):
            print("| %s | error: %s | | | | | |" % (b["name"], b.get("error_message", "")))
            continue
        rate = b.get("kv_bytes_per_second", b.get("bytes_per_second", 0)) / 1e9
        rate_text = "%.0f GB/s" % rate if rate else "%.1f TFLOP/s" % b.get("tflops", 0)
        print("| %s | %.1f | %s | %s | %s | %s | %s |" % (
            b["name"].split("/iterations")[0], b.get("median_us", b.get("real_time", 0)), rate_text,
            "%.3f" % b["fraction_of_copy"] if "fraction_of_copy" in b else "",
            "%.4f" % b["merge_fraction"] if "merge_fraction" in b else "",
            "%.2f" % b["speedup_vs_bf16"] if "speedup_vs_bf16" in b else "",
            "%d" % b["chunk_tokens"] if "chunk_tokens" in b else ""))
    print("\nTargets (issue 7): bf16 decode fraction_of_copy >= 0.80; int4_g128 speedup_vs_bf16 >= 2.5; "
          "merge fraction < 0.05.\n")
except (OSError, ValueError) as e:
    print("benchmark.json unreadable: %s\n" % e)
def ncu_section(log_name, title, pattern, limit=30):
    """The lines of an ncu log that match `pattern`, as a markdown section (nothing when none match)."""
    lines = [l.strip() for l in read(log_name).splitlines() if re.search(pattern, l)]
    if lines:
        print("## ncu, %s (one launch)\n\n```\n%s\n```\n" % (title, "\n".join(lines[:limit])))


ncu_section("ncu_decode.log", "headline bf16 decode",
            r"(DRAM Throughput|Memory Throughput|Duration|Achieved Occupancy|Registers Per|L2 Hit Rate|"
            r"Theoretical Occupancy|Block Limit Registers|Compute \(SM\) Throughput)")
ncu_section("ncu_int4.log", "int4 g128 page 128 decode",
            r"(Duration|Compute \(SM\) Throughput|Memory Throughput|Warp Cycles Per|Issue Slots Busy|"
            r"No Eligible|Active Warps Per Scheduler|Eligible Warps|Executed Ipc|stall|Stall)")
table = read("calibration/calibration.csv")
rows = [l for l in table.splitlines() if l and not l.startswith("#")]
print("## Calibration\n")
print("%d rows (plus header) in calibration/calibration.csv" % max(0, len(rows) - 1))
print("```\n%s\n```" % "\n".join(l for l in table.splitlines() if l.startswith("#")))
print("```\n%s```" % read("calibrate.log")[-1500:])
