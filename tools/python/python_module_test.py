"""`import kvsim` against the command line: the same replay, sweep and quality run give the same results
(summaries, per-request and time-series columns, result tables) and bad input the same message."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from xml.sax.saxutils import quoteattr

try:
    import numpy  # noqa: F401  (the module's columns are numpy arrays)
    import kvsim
    HAVE_MODULE = getattr(kvsim, "available", False)
    WHY = "" if HAVE_MODULE else "the module was built without pybind11-dev/python3-dev"
except ImportError as error:
    HAVE_MODULE, WHY = False, "cannot import numpy or kvsim: %s" % error

CLI = os.environ.get("KVSIM_CLI", "bazel-bin/tools/kvsim")
TRACE = "traces/data/azure_code_2023.csv"
# Under what the exact LRU curve of mooncake_synthetic.jsonl needs, over what a sampled one needs.
MRC_SMALL_LIMIT = 69000000
CONFIG = "workload { max_requests: 300 }\nslo { ttft_ms: 2000 tpot_ms: 100 }\n"


@unittest.skipUnless(HAVE_MODULE, WHY)
class ReplayTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.config = os.path.join(self.dir, "c.textproto")
        with open(self.config, "w") as f:
            f.write(CONFIG)

    def cli(self, *args):
        return subprocess.run([CLI] + list(args), capture_output=True, text=True)

    def test_summary_and_every_request_column_equal_the_command_line(self):
        out = os.path.join(self.dir, "replay")
        done = self.cli("replay", "--config=" + self.config, "--trace=" + TRACE, "--out=" + out)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(os.path.join(out, "summary.json")) as f:
            cli_summary = json.load(f)
        with open(os.path.join(out, "requests.csv")) as f:
            cli_csv = f.read()
        for config in (self.config, CONFIG):  # a file path, then the text itself
            r = kvsim.replay(TRACE, config=config)
            self.assertEqual(json.loads(r["summary_json"])["summary"], cli_summary["summary"])
            self.assertEqual(r["summary"], cli_summary["summary"])
            self.assertEqual(r["requests_csv"], cli_csv)
            rows = list(csv.DictReader(io.StringIO(cli_csv)))
            self.assertEqual(len(rows), 300)
            compared = 0
            for column, values in r["requests"].items():
                if column not in rows[0]:
                    continue
                compared += 1
                as_text = [str(int(v)) if isinstance(v, bool) else str(v) for v in values.tolist()]
                self.assertEqual(as_text, [row[column] for row in rows], column)
            self.assertGreaterEqual(compared, 5)
            self.assertEqual(r.requests_csv, r["requests_csv"])  # keys read as attributes too
            with open(os.path.join(out, "timeseries.csv")) as f:
                cli_series = f.read()
            self.assertEqual(r.timeseries_csv, cli_series)
            self.assert_columns_equal_csv(r.timeseries, cli_series)

    def assert_columns_equal_csv(self, columns, text):
        """Each numpy column holds the CSV's cells: the same numbers (NaN for an empty cell) or strings."""
        rows = list(csv.DictReader(io.StringIO(text)))
        self.assertGreater(len(rows), 0)
        self.assertEqual(list(columns), list(rows[0]))
        for name, values in columns.items():
            self.assertEqual(len(values), len(rows), name)
            integers = all(row[name].lstrip("-").isdigit() for row in rows)  # then an int64 column
            for value, row in zip(values.tolist(), rows):
                cell = row[name]
                if isinstance(value, str):
                    self.assertEqual(value, cell, name)
                elif cell == "":
                    self.assertNotEqual(value, value, name)  # NaN
                else:
                    self.assertEqual(value, float(cell), name)
                    self.assertEqual(isinstance(value, int), integers, (name, cell))

    def test_dict_config_equals_text_config(self):
        a = kvsim.replay(TRACE, config=CONFIG)
        b = kvsim.replay(TRACE, config={"workload": {"maxRequests": 300}, "slo": {"ttftMs": 2000, "tpotMs": 100}})
        self.assertEqual(a["summary"], b["summary"])

    def test_bad_config_raises_the_command_lines_message(self):
        bad = os.path.join(self.dir, "bad.textproto")
        with open(bad, "w") as f:
            f.write("scheduler { max_num_batched_tokens: -5 }\n")
        done = self.cli("replay", "--config=" + bad, "--trace=" + TRACE)
        self.assertEqual(done.returncode, 2)
        with self.assertRaises(ValueError) as raised:
            kvsim.replay(TRACE, config=bad)
        self.assertIn(str(raised.exception), done.stderr)
        self.assertTrue(str(raised.exception))

    def test_cache_and_trace_reader_equal_the_command_line(self):
        trace = "traces/data/mooncake_synthetic.jsonl"
        rows = kvsim.cache(trace, ["lru", "s3fifo"], [8192])
        done = self.cli("cache", "--trace=" + trace, "--policy=lru,s3fifo", "--capacity_blocks=8192", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        cli_rows = json.loads(done.stdout)
        self.assertEqual(len(rows), len(cli_rows))
        for mine, theirs in zip(rows, cli_rows):
            for key in ("policy", "capacity_blocks", "accesses", "hits", "prefix_hits", "evictions", "hit_ratio"):
                self.assertEqual(mine[key], theirs[key], key)
        self.assertGreater(rows[0]["hits"], 0)
        curve = kvsim.mrc(trace, sizes=[8192])
        self.assertEqual(curve["at"]["hit_ratio"][0], rows[0]["hit_ratio"])  # one-pass LRU = LRU replay
        self.assertTrue((curve["steps"]["hit_ratio"][1:] >= curve["steps"]["hit_ratio"][:-1]).all())
        requests = kvsim.read_trace(trace)
        self.assertEqual(len(requests), cli_rows[0]["requests"])
        self.assertEqual(sum(len(r["block_hashes"]) for r in requests), cli_rows[0]["accesses"])
        with self.assertRaises(ValueError) as raised:
            kvsim.read_trace(os.path.join(self.dir, "missing.jsonl"))
        self.assertIn("missing.jsonl", str(raised.exception))

    def test_cache_memory_limit_is_the_command_lines(self):
        # 72 MB holds the trace pass and one or two of these points: several passes (the command line says
        # how many), with the statistics of one pass; 60 MB holds none, refused as the command line does.
        trace = "traces/data/mooncake_synthetic.jsonl"
        args = ["--trace=" + trace, "--policy=lru,s3fifo", "--capacity_blocks=8192,16384"]
        one_pass = kvsim.cache(trace, ["lru", "s3fifo"], [8192, 16384])
        passes = kvsim.cache(trace, ["lru", "s3fifo"], [8192, 16384], memory_limit=72000000)
        done = self.cli("cache", *args, "--memory_limit=72000000", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("4 points in 3 passes", done.stderr)
        self.assertEqual(passes, one_pass)
        for mine, theirs in zip(passes, json.loads(done.stdout)):
            self.assertEqual(mine["hits"], theirs["hits"])
        done = self.cli("cache", *args, "--memory_limit=60000000")
        self.assertEqual(done.returncode, 2)
        with self.assertRaises(ValueError) as raised:
            kvsim.cache(trace, ["lru", "s3fifo"], [8192, 16384], memory_limit=60000000)
        self.assertIn("--memory_limit", str(raised.exception))
        self.assertIn(str(raised.exception), done.stderr)

    def test_mrc_memory_limit_is_the_command_lines(self):
        # A limit under the exact curve's needs: the module and `kvsim mrc --memory_limit` choose the same
        # rate (one function) and give the same ratios; a rate that is given and does not fit is refused with
        # the same message.
        trace = "traces/data/mooncake_synthetic.jsonl"
        limit = MRC_SMALL_LIMIT
        curve = kvsim.mrc(trace, sizes=[8192], memory_limit=limit)
        done = self.cli("mrc", "--trace=" + trace, "--sizes=8192", "--memory_limit=%d" % limit, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertLess(curve["sample_rate"], 1)
        self.assertIn("kvsim mrc: " + curve["memory_plan"], done.stderr)
        row = json.loads(done.stdout)[0]
        self.assertEqual(curve["at"]["hit_ratio"][0], row["hit_ratio"])
        exact = kvsim.mrc(trace, sizes=[8192])  # the default limit, half the physical memory: exact
        self.assertEqual(exact["sample_rate"], 1)
        self.assertNotEqual(exact["at"]["hit_ratio"][0], curve["at"]["hit_ratio"][0])
        done = self.cli("mrc", "--trace=" + trace, "--sample_rate=1", "--memory_limit=%d" % limit)
        self.assertEqual(done.returncode, 2)
        with self.assertRaises(ValueError) as raised:
            kvsim.mrc(trace, sample_rate=1.0, memory_limit=limit)
        self.assertIn("--memory_limit", str(raised.exception))
        self.assertIn(str(raised.exception), done.stderr)
        with self.assertRaises(ValueError):
            kvsim.mrc(trace, memory_limit=-1)


@unittest.skipUnless(HAVE_MODULE, WHY)
class SweepAndQualityTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def cli(self, *args):
        return subprocess.run([CLI] + list(args), capture_output=True, text=True)

    def read(self, *path):
        with open(os.path.join(self.dir, *path)) as f:
            return f.read()

    def test_sweep_equals_the_command_line_and_resumes(self):
        trace = "traces/data/mooncake_synthetic.jsonl"
        grid = "policy=lru,s3fifo capacity_blocks=1000:8000:x2"
        done = self.cli("sweep", "--trace=" + trace, "--grid=" + grid, "--out=" + os.path.join(self.dir, "cli"),
                        "--quiet")
        self.assertEqual(done.returncode, 0, done.stderr)
        cli_csv = self.read("cli", "results.csv")
        r = kvsim.sweep(trace, grid)
        self.assertEqual(r.points, 8)
        self.assertEqual(r.points_run, 8)
        self.assertEqual(r.results_csv, cli_csv)
        self.assertEqual(json.loads(r.results_json), json.loads(self.read("cli", "results.json")))
        ReplayTest.assert_columns_equal_csv(self, r.results, cli_csv)
        self.assertEqual(r.results["axis.policy"].tolist(), ["lru"] * 4 + ["s3fifo"] * 4)
        self.assertEqual(r.results["axis.capacity_blocks"].tolist(), [1000, 2000, 4000, 8000] * 2)
        hit = r.results["hit_ratio"]
        self.assertTrue((hit[1:4] >= hit[0:3]).all())  # LRU is a stack policy: more capacity, no fewer hits
        # An out directory keeps the points: a second call runs none and gives the same table.
        out = os.path.join(self.dir, "py")
        first = kvsim.sweep(trace, grid, out=out, threads=1)
        again = kvsim.sweep(trace, grid, out=out)
        self.assertEqual((first.points_run, again.points_run, again.points_skipped), (8, 0, 8))
        self.assertEqual(again.results_csv, cli_csv)
        self.assertEqual(self.read("py", "results.csv"), cli_csv)

    def test_sweep_memory_limit_as_the_command_line(self):
        trace = "traces/data/mooncake_synthetic.jsonl"
        grid = "policy=lru,s3fifo capacity_blocks=1000,8000"
        # A limit below one pass's overhead: the same refusal as the command line's.
        done = self.cli("sweep", "--trace=" + trace, "--grid=" + grid, "--memory_limit=1MiB",
                        "--out=" + os.path.join(self.dir, "tiny"), "--quiet")
        self.assertEqual(done.returncode, 2, done.stderr)
        with self.assertRaises(ValueError) as raised:
            kvsim.sweep(trace, grid, memory_limit=1 << 20)
        self.assertIn("needs an estimated", str(raised.exception))
        self.assertIn(str(raised.exception), done.stderr)
        with self.assertRaises(ValueError):
            kvsim.sweep(trace, grid, memory_limit=-1)
        # A limit that splits the points into passes: the table of the default limit.
        self.assertEqual(kvsim.sweep(trace, grid, memory_limit=(64 << 20) + (4 << 20)).results_csv,
                         kvsim.sweep(trace, grid).results_csv)

    def test_replay_sweep_with_a_config_equals_the_command_line(self):
        config = "workload { max_requests: 120 }\n"
        path = os.path.join(self.dir, "c.textproto")
        with open(path, "w") as f:
            f.write(config)
        grid = "scheduler.max_num_batched_tokens=2048,8192"
        done = self.cli("sweep", "--trace=" + TRACE, "--config=" + path, "--mode=replay", "--grid=" + grid,
                        "--out=" + os.path.join(self.dir, "cli"), "--quiet")
        self.assertEqual(done.returncode, 0, done.stderr)
        for given in (path, config, {"workload": {"maxRequests": 120}}):
            r = kvsim.sweep(TRACE, grid, config=given, mode="replay")
            self.assertEqual(r.results_csv, self.read("cli", "results.csv"))
        self.assertEqual(len(r.results["axis.scheduler.max_num_batched_tokens"]), 2)

    def test_sweep_errors_carry_the_command_lines_message(self):
        for grid in ("policy=", "no_such.field=3"):
            done = self.cli("sweep", "--trace=" + TRACE, "--grid=" + grid, "--out=" + os.path.join(self.dir, "x"))
            self.assertEqual(done.returncode, 2, grid)
            with self.assertRaises(ValueError) as raised:
                kvsim.sweep(TRACE, grid)
            self.assertTrue(str(raised.exception))
            self.assertIn(str(raised.exception), done.stderr)

    def test_quality_equals_the_command_line(self):
        trace = os.path.join(self.dir, "t.kvat")
        done = self.cli("synth_attention", "--out=" + trace, "--synth_prompt_len=400", "--synth_decode_steps=6",
                        "--synth_layers=1", "--synth_kv_heads=2", "--seed=3")
        self.assertEqual(done.returncode, 0, done.stderr)
        flags = ["quality", "--trace=" + trace, "--policies=h2o,streaming_llm", "--budgets=32,0.25", "--seed=7"]
        done = self.cli(*flags, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        cli_json = done.stdout
        done = self.cli(*flags, "--out=" + os.path.join(self.dir, "q"))
        self.assertEqual(done.returncode, 0, done.stderr)
        for policies, budgets in ((["h2o", "streaming_llm"], [32, 0.25]), ("h2o,streaming_llm", "32,0.25")):
            r = kvsim.quality(trace, policies, budgets, seed=7)
            self.assertEqual(r.json, cli_json)
            self.assertEqual(r.results, json.loads(cli_json))
            self.assertEqual(r.table, done.stdout)
            for name in ("summary", "per_layer", "per_head", "areas"):
                text = self.read("q", name + ".csv")
                self.assertEqual(r[name + "_csv"], text, name)
                ReplayTest.assert_columns_equal_csv(self, r[name], text)
        self.assertIn("oracle_select", r.summary["policy"].tolist())  # always added, as on the command line
        for bad in (["h2o", ""], "0"):
            args = ("--policies=" + ",".join(bad), "--budgets=32") if isinstance(bad, list) else (
                "--policies=h2o", "--budgets=" + bad)
            done = self.cli("quality", "--trace=" + trace, *args)
            self.assertEqual(done.returncode, 2, bad)
            with self.assertRaises(ValueError) as raised:
                if isinstance(bad, list):
                    kvsim.quality(trace, bad, [32])
                else:
                    kvsim.quality(trace, ["h2o"], bad)
            self.assertIn(str(raised.exception), done.stderr)

    def test_the_gil_is_released_while_a_sweep_runs(self):
        span, ticks = [], []

        def run():
            start = time.monotonic()
            kvsim.sweep("traces/data/mooncake_synthetic.jsonl", "policy=lru,s3fifo,arc capacity_blocks=500:64000:x2",
                        threads=1)
            span.extend([start, time.monotonic()])

        worker = threading.Thread(target=run)
        worker.start()
        while worker.is_alive():
            ticks.append(time.monotonic())
            time.sleep(0.001)
        worker.join()
        start, end = span
        self.assertGreater(end - start, 0.05)
        # Python ran in this thread in the middle half of the call: the call did not hold the GIL.
        middle = [t for t in ticks if start + 0.25 * (end - start) < t < end - 0.25 * (end - start)]
        self.assertGreater(len(middle), 5)


@unittest.skipUnless(HAVE_MODULE and shutil.which("nm") and shutil.which("readelf"), WHY or "no nm/readelf")
class LinkTest(unittest.TestCase):
    """The command line links Abseil/Protobuf/zstd statically, the module their shared libraries: one copy each."""

    def test_module_needs_the_shared_libraries_and_defines_none_of_their_symbols(self):
        module = kvsim.__file__
        needed = subprocess.run(["readelf", "-d", module], capture_output=True, text=True, check=True).stdout
        libraries = [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
        for prefix in ("libabsl_status.so", "libprotobuf.so", "libzstd.so"):
            self.assertTrue(any(lib.startswith(prefix) for lib in libraries), (prefix, libraries))

        def strong_symbols(path):
            out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True)
            return {f[2] for f in (line.split() for line in out.stdout.splitlines()) if len(f) == 3 and f[1] in "TDBR"}

        mine = strong_symbols(module)
        self.assertIn("PyInit_kvsim", mine)
        lib_dir = "/usr/lib/x86_64-linux-gnu"
        theirs = set()
        for lib in libraries:
            if lib.startswith(("libabsl_", "libprotobuf", "libzstd")) and os.path.exists(os.path.join(lib_dir, lib)):
                theirs |= strong_symbols(os.path.join(lib_dir, lib))
        self.assertGreater(len(theirs), 1000)
        self.assertEqual(sorted(mine & theirs)[:10], [])


def main():
    """Runs the tests and writes a JUnit report to $XML_OUTPUT_FILE (skips counted as skips by ./test.sh)."""
    result = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromModule(
        sys.modules[__name__]))
    xml_path = os.environ.get("XML_OUTPUT_FILE")
    if xml_path:
        outcome = {}
        for case, text in result.failures:
            outcome[case.id()] = ("failure", text)
        for case, text in result.errors:
            outcome[case.id()] = ("error", text)
        for case, text in result.skipped:
            outcome[case.id()] = ("skipped", text)
        cases = [t for suite in unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__]) for t in suite]
        lines = []
        for case in cases:
            kind, text = outcome.get(case.id(), ("", ""))
            name = quoteattr(case.id().split(".")[-1])
            if kind == "skipped":
                lines.append('<testcase name=%s status="run" result="skipped"><skipped message=%s/></testcase>' %
                             (name, quoteattr(text)))
            elif kind:
                lines.append('<testcase name=%s status="run"><%s message=%s/></testcase>' % (name, kind, quoteattr(text)))
            else:
                lines.append('<testcase name=%s status="run" result="completed"/>' % name)
        header = '<testsuites tests="%d" failures="%d" errors="%d">' % (
            len(cases), len(result.failures), len(result.errors))
        with open(xml_path, "w") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n%s\n<testsuite name="python_module_test" tests="%d">\n'
                    '%s\n</testsuite>\n</testsuites>\n' % (header, len(cases), "\n".join(lines)))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
